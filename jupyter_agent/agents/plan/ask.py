"""The ``ask_agent`` tool: validating a question and telling the model how it was answered.

A valid ask suspends the run (the tool response is ``Waiting for user answer.``). The answer
comes back later as that tool call's result, and it can end three ways: an option was chosen,
the user typed their own text ("Other"), or the question was dismissed. The model is told
which, in words it cannot confuse (docs/behaviour.md §6.10).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ...base.events import AskPending
from ._validation import format_validation_error, parse_arguments_text
from .constants import ASK_MAX_OPTIONS, ASK_MIN_OPTIONS, ASK_TOOL_NAME, WAITING_FOR_USER_ANSWER

__all__ = [
    "ASK_INVALID_JSON",
    "WAITING_FOR_USER_ANSWER",
    "AskAnswer",
    "AskParseResult",
    "AskRequest",
    "BlockerType",
    "format_answer_for_model",
    "parse_ask_arguments",
]

ASK_INVALID_JSON = "Ask tool arguments are not valid JSON."
"""Tool response when the ask's arguments cannot be decoded at all."""

BlockerType = Literal["missing_required_input", "tool_unavailable", "ambiguous_goal"]
"""Why the model cannot go on without the user."""


class AskRequest(BaseModel):
    """A validated ``ask_agent`` call: the question card the user sees."""

    model_config = ConfigDict(
        extra="ignore", validate_by_name=True, validate_by_alias=True, serialize_by_alias=True
    )

    reason: str
    """Why the question is strictly required (shown to the user under the question)."""
    blocker_type: BlockerType = Field(alias="blockerType")
    question: str
    options: list[str]
    """3 to 5 trimmed, non-empty answer choices, in the order the buttons are shown."""
    descriptions: list[str] = Field(default_factory=list)
    """One line per option, or empty. Our addition; padded or cut to the options' length."""
    allow_other: bool = Field(default=True, alias="allowOther")
    """Whether a free-text answer is offered. Our addition."""

    @field_validator("question")
    @classmethod
    def _question_not_blank(cls, value: str) -> str:
        value = value.strip()
        if not value:
            raise ValueError("Must not be empty.")
        return value

    @field_validator("options")
    @classmethod
    def _trim_options(cls, value: list[str]) -> list[str]:
        trimmed = [option.strip() for option in value]
        problems = [
            f"Option {i} is empty after trimming." for i, o in enumerate(trimmed, 1) if not o
        ]
        if not ASK_MIN_OPTIONS <= len(trimmed) <= ASK_MAX_OPTIONS:
            problems.insert(
                0,
                f"Must have {ASK_MIN_OPTIONS} to {ASK_MAX_OPTIONS} answer options, got "
                f"{len(trimmed)}.",
            )
        if problems:
            raise ValueError(" ".join(problems))
        return trimmed

    @field_validator("descriptions", mode="before")
    @classmethod
    def _descriptions_none_is_empty(cls, value: object) -> object:
        return [] if value is None else value

    def model_post_init(self, context: object) -> None:
        """Fit ``descriptions`` to the options (they are display text, never worth a retry)."""
        if self.descriptions:
            fitted = [d.strip() for d in self.descriptions[: len(self.options)]]
            fitted += [""] * (len(self.options) - len(fitted))
            self.descriptions = fitted if any(fitted) else []

    def pending_event(self, call_id: str) -> AskPending:
        """The ``ask_pending`` event for this question, answered through ``call_id``."""
        return AskPending(
            call_id=call_id,
            question=self.question,
            options=list(self.options),
            descriptions=list(self.descriptions),
            allow_other=self.allow_other,
            detail={"reason": self.reason, "blockerType": self.blocker_type},
        )


class AskParseResult(BaseModel):
    """The outcome of validating ``ask_agent`` arguments."""

    ask: AskRequest | None = None
    error: str | None = None
    """The tool response on failure (the loop goes on; it is not a pause)."""

    @property
    def ok(self) -> bool:
        """True when ``ask`` is a valid question."""
        return self.ask is not None


def parse_ask_arguments(
    args: str | Mapping[str, object] | None, *, tool_name: str = ASK_TOOL_NAME
) -> AskParseResult:
    """Decode (leniently) and validate ``ask_agent`` arguments.

    Undecodable text gives ``Ask tool arguments are not valid JSON.``; any other problem gives
    ``Invalid ask_agent arguments: <field>: <message>; ...``. Unknown keys are dropped.
    """
    data: object
    if args is None or isinstance(args, str):
        try:
            data = parse_arguments_text(args)
        except ValueError:
            return AskParseResult(error=ASK_INVALID_JSON)
    else:
        data = dict(args)
    try:
        return AskParseResult(ask=AskRequest.model_validate(data))
    except ValidationError as exc:
        return AskParseResult(
            error=f"Invalid {tool_name} arguments: {format_validation_error(exc)}"
        )


class AskAnswer(BaseModel):
    """How the user answered an ask: a chosen option, their own text, or a dismissal."""

    how: Literal["option", "other", "dismissed"]
    answer: str = ""
    """The option's text or the typed text; empty when dismissed."""
    option_index: int | None = None
    """1-based index of the chosen option, in the order the buttons are shown."""

    @classmethod
    def choose(cls, ask: AskRequest, index: int) -> AskAnswer:
        """The user clicked option ``index`` (counted from 1). Raises ``ValueError`` if absent."""
        if not 1 <= index <= len(ask.options):
            raise ValueError(f"Option {index} does not exist: choose 1 to {len(ask.options)}.")
        return cls(how="option", answer=ask.options[index - 1], option_index=index)

    @classmethod
    def other(cls, text: str) -> AskAnswer:
        """The user typed their own answer instead of choosing an option."""
        return cls(how="other", answer=text)

    @classmethod
    def dismiss(cls) -> AskAnswer:
        """The user closed the question without answering."""
        return cls(how="dismissed")


def format_answer_for_model(ask: AskRequest, answer: AskAnswer) -> str:
    """The ask tool call's result text: says which of the three endings happened."""
    if answer.how == "option":
        index = answer.option_index or 0
        text = ask.options[index - 1] if 1 <= index <= len(ask.options) else answer.answer
        return f"The user chose option {index} of {len(ask.options)}: {text}"
    if answer.how == "other":
        if not answer.answer.strip():
            return "The user chose none of the options and sent an empty answer."
        return f"The user chose none of the options and wrote instead: {answer.answer.strip()}"
    return (
        "The user dismissed the question without answering. Continue without this "
        "information: make a reasonable assumption and say so in the final answer, or mark "
        "the affected step as blocked."
    )
