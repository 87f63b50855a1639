"""Scripted turns for the fake OpenAI server, and how each one looks on the wire.

A turn is one scripted model answer. Every turn is a pydantic model with a ``kind`` field, so
a script of turns can be written to JSON (``turn.model_dump()``) and read back in another
process with ``turn_from_json``. The builders (``text``, ``tool_calls``, ``call``, ``error``,
``disconnect``, ``empty``, ``hang``) are the usual way to make them::

    script = [tool_calls([call("add", {"a": 1}, id="call_1")]), text("Done.", reasoning="ok")]

``stream_deltas``, ``completion_message`` and ``usage_for`` turn a reply into the
chat-completions wire format; the server in ``openai_server`` uses them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

__all__ = [
    "AUTO_ID", "DisconnectTurn", "ErrorTurn", "HangTurn", "MatchRule", "MatchTurn",
    "ScriptedCall", "TextTurn", "ToolCallsTurn", "Turn", "TurnLike", "call",
    "completion_message", "disconnect", "empty", "error", "hang", "match", "pieces", "rule",
    "stream_deltas", "text", "tool_calls", "turn_from_json", "usage_for",
    "DripTurn", "RawTurn", "drip", "raw",
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


AUTO_ID = "auto"
"""A call id replaced on the wire by ``call_<completion number>_<index>`` (unique per server)."""


class ScriptedCall(_Model):
    """One tool call; ``arguments`` is sent verbatim, so it may be malformed JSON."""

    name: str
    arguments: str = ""
    id: str | None = AUTO_ID
    """None sends no id at all (some local servers do that)."""

    def wire_id(self, prefix: str, index: int) -> str | None:
        """The id sent for this call as the ``index``-th call of completion ``prefix``."""
        return f"{prefix}_{index}" if self.id == AUTO_ID else self.id


class Reply(_Model):
    """Fields shared by the turns that answer with a completion."""

    content: str = ""
    reasoning: str | None = None
    """Sent as ``reasoning_content`` (or inline ``<think>`` tags when ``think_tags``)."""
    think_tags: bool = False
    usage: bool | dict[str, Any] = True
    """True: counts estimated here; a dict: sent as given; False: no usage at all."""
    chunk_size: int = Field(default=8, ge=1)
    """Characters per streamed delta."""
    delay: float = 0.0
    """Seconds to wait before each streamed chunk."""
    finish_reason: str = "stop"


class TextTurn(Reply):
    """An assistant text answer, optionally with reasoning."""

    kind: Literal["text"] = "text"


class ToolCallsTurn(Reply):
    """An assistant message with tool calls (and optional text before them)."""

    kind: Literal["tool_calls"] = "tool_calls"
    calls: list[ScriptedCall]
    repeat_id_and_name: bool = False
    """Reproduce llama.cpp: id, type and name repeated in every arguments chunk."""
    finish_reason: str = "tool_calls"


class ErrorTurn(_Model):
    """An HTTP error with an OpenAI-format JSON body."""

    kind: Literal["error"] = "error"
    status: int
    message: str = "scripted error"
    retry_after: float | None = None


class DisconnectTurn(_Model):
    """Stream ``after_chunks`` content chunks, then drop the connection.

    A non-streamed request gets no reply at all: the connection just closes.
    """

    kind: Literal["disconnect"] = "disconnect"
    after_chunks: int = 2
    content: str = "This answer is cut off in the middle of a sentence"
    chunk_size: int = Field(default=8, ge=1)


class HangTurn(_Model):
    """Wait ``seconds`` (woken early by server stop), then answer with ``then`` (default: empty)."""

    kind: Literal["hang"] = "hang"
    seconds: float
    then: Turn | None = None


class DripTurn(_Model):
    """Start a 200 reply, then keep the connection busy without answering for ``seconds``.

    Streamed: the SSE stream opens, ``before`` is sent as content chunks, then an SSE comment
    line (``: keep-alive``) every ``interval`` seconds (``None``: total silence). Not streamed:
    a chunked JSON body that drips a space every ``interval``. Then ``stall`` seconds of total
    silence, then ``then`` is answered on the same stream or body (default: nothing more; the
    body just ends).
    """

    kind: Literal["drip"] = "drip"
    seconds: float
    interval: float | None = 1.0
    before: str = ""
    stall: float = 0.0
    then: Turn | None = None
    close_delimited: bool = False
    """Streamed: no chunked framing; the body ends when the connection closes (HTTP/1.0
    style, as some proxies and small servers send it), so a cut connection looks like an end."""


class RawTurn(_Model):
    """Send ``payloads`` verbatim: streamed, each as one ``data:`` line (then ``[DONE]``); not
    streamed, their concatenation as the JSON body. For garbage, truncated, nested or huge
    chunks."""

    kind: Literal["raw"] = "raw"
    payloads: list[str]


class MatchRule(_Model):
    """One rule of a :class:`MatchTurn`: every condition given must hold."""

    contains: str | None = None
    """A substring of the request's last user message."""
    last_role: str | None = None
    """The role of the request's last message (``tool`` after a tool round)."""
    model: str | None = None
    """The request's ``model``."""
    turn: Turn

    def matches(self, body: dict[str, Any]) -> bool:
        """Whether the request ``body`` meets every condition of this rule."""
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        if self.model is not None and body.get("model") != self.model:
            return False
        if self.last_role is not None and (not messages or messages[-1].get("role")
                                           != self.last_role):
            return False
        if self.contains is not None:
            users = [m for m in messages if m.get("role") == "user"]
            content = users[-1].get("content") if users else ""
            if not isinstance(content, str) or self.contains not in content:
                return False
        return True


class MatchTurn(_Model):
    """The turn of the first rule the request matches, else ``otherwise`` (else HTTP 500).

    Serialisable, so a server in another process can answer requests that arrive in any
    order (concurrent batch items) by their content instead of by their position.
    """

    kind: Literal["match"] = "match"
    rules: list[MatchRule]
    otherwise: Turn | None = None

    def pick(self, body: dict[str, Any]) -> Any:
        """The turn for the request ``body``."""
        for rule in self.rules:
            if rule.matches(body):
                return rule.turn
        return self.otherwise


Turn = Annotated[
    TextTurn | ToolCallsTurn | ErrorTurn | DisconnectTurn | HangTurn | DripTurn | RawTurn
    | MatchTurn,
    Field(discriminator="kind"),
]
"""Any JSON-serialisable scripted turn."""
HangTurn.model_rebuild()
DripTurn.model_rebuild()
MatchRule.model_rebuild()
MatchTurn.model_rebuild()
TurnLike = (TextTurn | ToolCallsTurn | ErrorTurn | DisconnectTurn | HangTurn | DripTurn | RawTurn
            | MatchTurn
            | Callable[[dict], Any])
"""A turn, or ``fn(request_body) -> turn`` evaluated when the request arrives."""
_TURN_ADAPTER: TypeAdapter[Any] = TypeAdapter(Turn)


def turn_from_json(data: dict[str, Any]) -> Turn:
    """Rebuild a turn from ``turn.model_dump()`` output (the ``kind`` field selects the class)."""
    return _TURN_ADAPTER.validate_python(data)


def text(content: str, *, reasoning: str | None = None, think_tags: bool = False,
         usage: bool | dict[str, Any] = True, chunk_size: int = 8, delay: float = 0.0,
         finish_reason: str = "stop") -> TextTurn:
    """A text answer streamed as ``delta.content`` chunks, after any reasoning chunks."""
    return TextTurn(content=content, reasoning=reasoning, think_tags=think_tags, usage=usage,
                    chunk_size=chunk_size, delay=delay, finish_reason=finish_reason)


def call(name: str, arguments: dict[str, Any] | str = "", *,
         id: str | None = AUTO_ID) -> ScriptedCall:
    """One tool call; a dict is JSON-dumped, a string is sent as is (malformed on purpose).

    ``id=None`` sends no id; the default ``AUTO_ID`` makes a unique one.
    """
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return ScriptedCall(name=name, arguments=args, id=id)


def tool_calls(calls: Sequence[ScriptedCall], text: str = "", *, reasoning: str | None = None,
               repeat_id_and_name: bool = False, usage: bool | dict[str, Any] = True,
               chunk_size: int = 8, delay: float = 0.0,
               finish_reason: str = "tool_calls") -> ToolCallsTurn:
    """An assistant message carrying ``calls`` (streamed OpenAI-style, one index per call)."""
    return ToolCallsTurn(calls=list(calls), content=text, reasoning=reasoning,
                         repeat_id_and_name=repeat_id_and_name, usage=usage,
                         chunk_size=chunk_size, delay=delay, finish_reason=finish_reason)


def error(status: int, message: str = "scripted error", *,
          retry_after: float | None = None) -> ErrorTurn:
    """An HTTP error reply (429 maps to ``openai.RateLimitError`` and so on)."""
    return ErrorTurn(status=status, message=message, retry_after=retry_after)


def disconnect(after_chunks: int = 2, content: str | None = None) -> DisconnectTurn:
    """Send ``after_chunks`` content chunks, then close the socket mid-stream."""
    if content is None:
        return DisconnectTurn(after_chunks=after_chunks)
    return DisconnectTurn(after_chunks=after_chunks, content=content)


def empty(*, usage: bool | dict[str, Any] = True) -> TextTurn:
    """An answer with no text and no tool calls."""
    return TextTurn(content="", usage=usage)


def hang(seconds: float, then: Turn | None = None) -> HangTurn:
    """Answer only after ``seconds`` (for interrupt and timeout tests)."""
    return HangTurn(seconds=seconds, then=then)


def drip(seconds: float, interval: float | None = 1.0, *, before: str = "", stall: float = 0.0,
         then: Turn | None = None, close_delimited: bool = False) -> DripTurn:
    """Keep-alive comments every ``interval`` s (``None``: silence) for ``seconds``, then
    ``stall`` s of silence; no answer unless ``then`` (``close_delimited``: see DripTurn)."""
    return DripTurn(seconds=seconds, interval=interval, before=before, stall=stall, then=then,
                    close_delimited=close_delimited)


def raw(*payloads: str) -> RawTurn:
    """``data:`` lines sent verbatim (malformed on purpose), one per payload."""
    return RawTurn(payloads=list(payloads))


def match(*rules: MatchRule, otherwise: Turn | None = None) -> MatchTurn:
    """A turn chosen by the request's content (see :class:`MatchTurn`)."""
    return MatchTurn(rules=list(rules), otherwise=otherwise)


def rule(turn: Turn, *, contains: str | None = None, last_role: str | None = None,
         model: str | None = None) -> MatchRule:
    """One rule of :func:`match`."""
    return MatchRule(turn=turn, contains=contains, last_role=last_role, model=model)


def pieces(s: str, size: int) -> list[str]:
    """``s`` cut into pieces of ``size`` characters."""
    return [s[i:i + size] for i in range(0, len(s), size)]


def _visible_content(turn: Reply) -> str:
    if turn.reasoning and turn.think_tags:
        return f"<think>{turn.reasoning}</think>{turn.content}"
    return turn.content


def _calls(turn: Reply) -> list[ScriptedCall]:
    return turn.calls if isinstance(turn, ToolCallsTurn) else []


def stream_deltas(turn: Reply, id_prefix: str = "call") -> Iterator[dict[str, Any]]:
    """The ``delta`` objects of a streamed answer, in wire order (see ``ScriptedCall.wire_id``)."""
    n = turn.chunk_size
    yield {"role": "assistant", "content": ""}
    if turn.reasoning and not turn.think_tags:
        for piece in pieces(turn.reasoning, n):
            yield {"reasoning_content": piece}
    for piece in pieces(_visible_content(turn), n):
        yield {"content": piece}
    for i, c in enumerate(_calls(turn)):
        head: dict[str, Any] = {"index": i, "type": "function",
                                "function": {"name": c.name, "arguments": ""}}
        if (call_id := c.wire_id(id_prefix, i)) is not None:
            head["id"] = call_id
        yield {"tool_calls": [head]}
        for piece in pieces(c.arguments, n):
            part: dict[str, Any] = {"index": i, "function": {"arguments": piece}}
            if turn.repeat_id_and_name:
                part = {**head, "function": {"name": c.name, "arguments": piece}}
            yield {"tool_calls": [part]}


def usage_for(turn: Reply, body: dict[str, Any]) -> dict[str, Any] | None:
    """Usage to report: the turn's dict, or rough counts (4 characters per token)."""
    if not turn.usage:
        return None
    out = (turn.reasoning or "") + turn.content + "".join(c.arguments for c in _calls(turn))
    usage: dict[str, Any] = {
        "prompt_tokens": max(1, len(json.dumps(body.get("messages", []))) // 4),
        "completion_tokens": (len(out) + 3) // 4,
    }
    if isinstance(turn.usage, dict):
        usage.update(turn.usage)
    usage.setdefault("total_tokens", usage["prompt_tokens"] + usage["completion_tokens"])
    return usage


def completion_message(turn: Reply, id_prefix: str = "call") -> dict[str, Any]:
    """The non-streamed assistant message of a turn."""
    calls = _calls(turn)
    content = _visible_content(turn)
    msg: dict[str, Any] = {"role": "assistant", "content": content or (None if calls else "")}
    if turn.reasoning and not turn.think_tags:
        msg["reasoning_content"] = turn.reasoning
    if calls:
        msg["tool_calls"] = []
        for i, c in enumerate(calls):
            call_id = c.wire_id(id_prefix, i)
            msg["tool_calls"].append({**({"id": call_id} if call_id is not None else {}),
                                      "type": "function",
                                      "function": {"name": c.name, "arguments": c.arguments}})
    return msg
