"""Typed shapes of one chat-completions exchange.

Messages stay plain dicts in the OpenAI wire format (``{"role": ..., "content": ...}``): they
are what the API takes, what the store saves and what a resume restores, so converting them to
objects and back on every round would only cost time.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Callable

from pydantic import BaseModel, Field

from ..base.deferred import DeferredModel
from ..base.jsontypes import JSONObject, JSONValue, Shallow

__all__ = [
    "Message",
    "tool_calls_of",
    "ToolCall",
    "Usage",
    "ChatRequest",
    "ChatResponse",
    "StreamCallback",
]

Message = Annotated[JSONObject, Shallow(dict[str, object])]
"""One chat message in the OpenAI wire format (``role``, ``content``, ``tool_calls``…): a
``JSONObject``, whose fields are looked at before use (``tool_calls_of``, the helpers of
``base.jsontypes``). A pydantic field of messages checks each is an object with string keys,
not every value below (``Shallow``): a history grows every round, and it is JSON already."""


def tool_calls_of(message: Mapping[str, JSONValue]) -> list[JSONObject]:
    """The ``tool_calls`` of ``message`` that are objects (``[]`` when it has none)."""
    calls = message.get("tool_calls")
    return [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []


class ToolCall(DeferredModel):
    """One tool call of an assistant message."""

    id: str
    """The provider's id, unless it was empty or another call of the run already had it: then
    a fresh one (see ``jupyter_agent/loop/call_ids.py``)."""
    name: str
    arguments: str = ""
    """Raw JSON text of the arguments, exactly as the model produced it."""

    def to_message_part(self) -> JSONObject:
        """The ``tool_calls`` item of an assistant message (only id, type and function)."""
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


class Usage(BaseModel):
    """Token counts of one model call."""

    input_tokens: int = 0
    output_tokens: int = 0
    estimated: bool = False
    """True when counted locally because the provider reported nothing."""
    user_key: bool = False
    """The provider reported the call was paid with the user's own key
    (``usedUserOpenAIKey: true``): it costs 0, its tokens still count (docs/behaviour.md §9.6)."""


class ChatRequest(DeferredModel):
    """Everything one model call sends (minus the key)."""

    model: str
    # The JSON fields are checked one level deep (base/jsontypes.py, ``Shallow``): a request
    # is made every round, and its history grows with every round.
    messages: list[Message]
    tools: Annotated[list[JSONObject] | None, Shallow(list[dict[str, object]] | None)] = None
    """Function tool schemas in the OpenAI format; ``None`` or empty sends no tools."""
    tool_choice: Annotated[str | JSONObject | None, Shallow(str | dict[str, object] | None)] = None
    parallel_tool_calls: bool | None = None
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    stop: list[str] | None = None
    response_format: Annotated[JSONObject | None, Shallow(dict[str, object] | None)] = None
    stream: bool = True
    extra: Annotated[JSONObject, Shallow(dict[str, object])] = {}
    """Extra body fields passed through unchanged (a profile's ``default_config``)."""


class ChatResponse(BaseModel):
    """The assembled result of one model call."""

    text: str = ""
    reasoning: str = ""
    tool_calls: list[ToolCall] = []
    finish_reason: str | None = None
    usage: Usage = Field(default_factory=Usage)
    request_id: str | None = None
    model: str | None = None
    """The model the provider says answered (may differ from the one requested)."""
    error: str | None = None
    """Set when the call failed after retries; ``text`` is then never an answer."""
    status_code: int | None = None
    aborted: bool = False
    """True when a KeyboardInterrupt cut the stream (finish_reason is then ``close``)."""
    seconds: float = 0.0
    cached: bool = False
    """Answered from the answer cache: nothing was sent (``clients/cache.py``)."""

    def assistant_message(self) -> Message | None:
        """The assistant message to append to the history, or ``None`` when empty.

        Content is ``""`` rather than ``None`` next to tool calls: several OpenAI-compatible
        servers (llama.cpp among them) answer HTTP 500 to a ``null`` content.
        """
        if not self.text and not self.tool_calls:
            return None
        msg: Message = {"role": "assistant", "content": self.text}
        if self.tool_calls:
            msg["tool_calls"] = [c.to_message_part() for c in self.tool_calls]
        return msg


StreamCallback = Callable[[str, JSONObject], None]
"""``callback(kind, data)`` for stream deltas.

kinds: ``text`` ``{"text"}``, ``reasoning`` ``{"text"}``, ``tool_call`` ``{"index", "id",
"name"}`` (once per call, when its name is known), ``tool_args`` ``{"index", "id", "delta"}``.
"""
