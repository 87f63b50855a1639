"""How a user answers a waiting run, and where answers come from when no user is asked.

A run that asks a question or needs an approval waits for an :class:`Answer` (a click,
``%agent resume``, a headless ``--option N``). An :class:`AnswerSource` answers instead of the
user (a replayed cassette gives the answers clicked while recording); an :class:`AnswerLog`
keeps the answers given (a recording). Both are passed explicitly to the run that uses them
(see :mod:`jupyter_agent.agents.resume`); this module sits at the ground floor so the client
layer can provide them without knowing the agents.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, Protocol

from .errors import ResumeError
from .events import AskAnswered

__all__ = ["Answer", "WaitingAsk", "AnswerSource", "AnswerLog"]


@dataclass
class Answer:
    """How the user answered: an option (1-based), free text ("Other"), or a dismissal."""

    how: Literal["option", "other", "dismissed"]
    option_index: int | None = None
    text: str = ""

    @classmethod
    def from_message(cls, msg: Mapping[str, object]) -> Answer:
        """From the widget's click message ``{type:"answer", how, option_index, answer}``."""
        how = msg.get("how")
        if how == "option":
            index = msg.get("option_index") or 0
            if not isinstance(index, (int, float, str)):
                raise ResumeError(f"Unknown option index {index!r}.")
            return cls("option", option_index=int(index))
        if how == "other":
            return cls("other", text=str(msg.get("answer") or ""))
        if how == "dismissed":
            return cls("dismissed")
        raise ResumeError(f"Unknown answer kind {how!r}.")

    def label(self, options: list[str]) -> str:
        """The answer as text (the chosen option's label, the typed text, or empty)."""
        if self.how == "option" and self.option_index and 1 <= self.option_index <= len(options):
            return options[self.option_index - 1]
        return self.text

    def event(self, call_id: str, options: list[str]) -> AskAnswered:
        """The ``ask_answered`` event."""
        return AskAnswered(call_id=call_id, how=self.how, answer=self.label(options),
                           option_index=self.option_index if self.how == "option" else None)


@dataclass(frozen=True)
class WaitingAsk:
    """Which card a suspended run waits on: enough to find (or keep) its answer."""

    call_id: str
    """The tool call the card stands for; its answer becomes that call's result."""
    question: str
    kind: Literal["ask", "approval"] = "ask"


class AnswerSource(Protocol):
    """Answers a suspended run's question without asking the user, when it can."""

    def answer_for(self, ask: WaitingAsk) -> Answer | None:
        """The answer to ``ask``, or ``None`` to leave the run waiting for the user."""
        ...


class AnswerLog(Protocol):
    """Keeps the answers given to suspended runs (a recording keeps them for its replay)."""

    def keep(self, ask: WaitingAsk, answer: Answer, via: Literal["click", "code"]) -> None:
        """Keep ``answer`` to ``ask``; ``via`` says whether a button (``click``) or a notebook
        cell (``code``: ``%agent resume``, ``--option``) gave it."""
        ...
