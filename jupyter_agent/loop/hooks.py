"""The seams of the loop kernel: what an agent injects, each with a one-line contract."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Literal

from ..base.jsontypes import JSONValue
from ..base.secrets import mask
from ..llm.types import Message, ToolCall
from ..llm.usage_context import UsageItem

__all__ = [
    "ToolOutcome",
    "StopDecision",
    "RequestControl",
    "StopContext",
    "ContextFit",
    "UsageItem",
    "LoopHooks",
]


@dataclass
class ToolOutcome:
    """What running one tool call produced, as the kernel needs it."""

    output: str
    """Text for the model (compressed later unless ``skip_compress``)."""
    value: Any = None
    """Raw Python value, kept on the run object."""
    error: str | None = None
    stop: bool = False
    """End the run after this round (the stop signal)."""
    interactive: dict[str, Any] | None = None
    """A pending question (ask or approval): the run suspends after this round."""
    usages: list[UsageItem] = field(default_factory=list)
    skip_compress: bool = False
    internal: bool = False
    seconds: float = 0.0
    events: list[Any] = field(default_factory=list)
    """More events about this call (a figure, a proposed cell), emitted after its
    ``tool_returned`` with the round filled in."""
    images: list[str] = field(default_factory=list)
    """PNGs (base64) the call drew, sent to a model that accepts images (``images_message``)."""

    def __post_init__(self) -> None:
        # Every tool result is built here (a tool's answer, an error, a denial, a hook that
        # raised), so this is where a key a tool printed is masked: before the compressor,
        # the model, the events and the store see it (docs/security.md).
        self.output = mask(self.output)
        if self.error:
            self.error = mask(self.error)


MAX_IMAGES_PER_ROUND = 4
IMAGES_NOTE = "The figures drawn by the tool calls above:"


def images_message(images: list[str]) -> Message | None:
    """The user message that shows a round's figures to a model that accepts images (OpenAI
    image parts; a tool message may carry text only), after the round's tool results; at most
    :data:`MAX_IMAGES_PER_ROUND`. ``None`` when there is nothing to show."""
    if not images:
        return None
    parts: list[JSONValue] = [{"type": "text", "text": IMAGES_NOTE}]
    parts += [{"type": "image_url", "image_url": {"url": f"data:image/png;base64,{b}"}}
              for b in images[:MAX_IMAGES_PER_ROUND]]
    return {"role": "user", "content": parts}


@dataclass
class StopDecision:
    """The answer of ``on_stop_candidate``."""

    allow: bool = True
    feedback: str | None = None
    """When refusing: the message appended for the model; the loop continues."""
    reason: str = ""
    error: str | None = None
    """When refusing for good: the run ends with status ``error``."""
    status: Literal["incomplete"] | None = None
    """When giving up politely: the run ends with this status, the draft kept."""


@dataclass
class RequestControl:
    """Per-request overrides; ``tool_choice`` replaces the consecutive-tool-turn guard."""

    tool_choice: str | dict[str, Any] | None = None


@dataclass
class StopContext:
    """What ``on_stop_candidate`` sees."""

    round: int
    answer_text: str
    messages: list[Message]
    assistant_messages: list[Message]


@dataclass
class ContextFit:
    """The result of ``fit_context`` when it changed the messages."""

    messages: list[Message]
    tokens: int
    method: Literal["checkpoint", "truncate"] = "truncate"
    usages: list[UsageItem] = field(default_factory=list)


@dataclass
class LoopHooks:
    """Callbacks that give an agent its behaviour. Every one is optional."""

    run_tool: Callable[[ToolCall, list[Message]], ToolOutcome] | None = None
    """Run one call with the round snapshot; must not raise (raising becomes ``Tool error``)."""
    can_batch: Callable[[ToolCall], bool] | None = None
    """Return False to run this call alone; default: every call may be batched."""
    on_stop_candidate: Callable[[StopContext], StopDecision] | None = None
    """Asked when the model answers without tools; refuse with feedback to continue."""
    request_control: Callable[[int, list[Message]], RequestControl | None] | None = None
    """Per-request control (e.g. force ``tool_choice='none'``); replaces the guard."""
    fit_context: Callable[[int, list[Message], int], ContextFit | None] | None = None
    """Before each request: shrink the messages (given their token count) or return None."""
    process_tool_output: Callable[[str], tuple[str, list[UsageItem]]] | None = None
    """Shrink a long tool result (docs/behaviour.md §8.3); default: left unchanged."""
    is_aborted: Callable[[], bool] | None = None
    """Polled between rounds; True ends the run with status ``aborted``."""
    on_round_end: Callable[[list[Message]], None] | None = None
    """After a round the loop continues from (tool results in, or a draft withdrawn): the
    run's output so far, consistent (every tool call answered). Used to persist per round."""
