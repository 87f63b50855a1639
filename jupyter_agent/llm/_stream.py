"""Assembling one streamed chat completion from its SSE chunks.

Kept apart from the HTTP code so it can be fed chunks from anywhere (live HTTP, a cassette).
"""

from __future__ import annotations

from typing import TypedDict

from ..base.jsontypes import JSONObject, JSONValue, object_field
from .ids import new_call_id
from .types import StreamCallback, ToolCall, Usage

__all__ = ["ThinkSplitter", "StreamAssembler", "new_call_id"]

_OPEN, _CLOSE = "<think>", "</think>"


class ThinkSplitter:
    """Splits ``<think>…</think>`` at the start of an answer off into reasoning, while streaming.

    Text is held back only while it could still be the start of the open tag or, inside the
    think block, a partial close tag, so the answer streams with at most 8 characters of delay.
    """

    def __init__(self) -> None:
        self._state = "start"  # start -> think -> after -> answer, or start -> answer
        self._buf = ""

    def feed(self, text: str) -> list[tuple[str, str]]:
        """Feed a content delta; returns ``[(kind, text)]`` with kind ``text``/``reasoning``."""
        out: list[tuple[str, str]] = []
        if self._state == "after":
            # Newlines after </think> are dropped, even when they arrive in later chunks.
            text = text.lstrip("\n")
            if not text:
                return out
            self._state = "answer"
        if self._state == "answer":
            return [("text", text)] if text else out
        self._buf += text
        if self._state == "start":
            stripped = self._buf.lstrip()
            if not stripped:
                return out
            if stripped.startswith(_OPEN):
                self._state = "think"
                self._buf = stripped[len(_OPEN):]
            elif _OPEN.startswith(stripped):
                return out  # could still become "<think>"
            else:
                self._state = "answer"
                buf, self._buf = self._buf, ""
                return [("text", buf)]
        # inside the think block
        end = self._buf.find(_CLOSE)
        if end >= 0:
            if end:
                out.append(("reasoning", self._buf[:end]))
            rest = self._buf[end + len(_CLOSE):]
            self._buf = ""
            self._state = "after"
            return out + self.feed(rest)
        keep = len(_CLOSE) - 1
        if len(self._buf) > keep:
            out.append(("reasoning", self._buf[:-keep]))
            self._buf = self._buf[-keep:]
        return out

    def flush(self) -> list[tuple[str, str]]:
        """Whatever is still held back at the end of the stream."""
        buf, self._buf = self._buf, ""
        if not buf:
            return []
        return [("reasoning" if self._state == "think" else "text", buf)]


class _CallState(TypedDict):
    """One tool call while its deltas arrive."""

    id: str | None
    """Ours, settled when the call is announced or returned (see ``_settle_id``)."""
    wire_id: str | None
    """The provider's, if it sent one."""
    name: str
    arguments: str
    announced: bool


def _number(value: JSONValue) -> float:
    """A token count as the chunk gave it (``int()`` of it is taken); 0 when absent."""
    return value if isinstance(value, (int, float)) else 0


USER_KEY_FIELD = "usedUserOpenAIKey"
"""What a gateway reports (in ``usage`` or the chunk) when the user's own key paid the call."""


class StreamAssembler:
    """Accumulates chunks into text, reasoning, tool calls, finish reason and usage."""

    def __init__(self, on_delta: StreamCallback | None, split_think: bool = True) -> None:
        self.on_delta = on_delta
        self.text_parts: list[str] = []
        self.reasoning_parts: list[str] = []
        self.calls: dict[int, _CallState] = {}
        self.finish_reason: str | None = None
        self.usage: Usage | None = None
        self.request_id: str | None = None
        self.model: str | None = None
        """The model the provider says answered (its chunks' ``model``)."""
        self.emitted = False
        self._splitter = ThinkSplitter() if split_think else None
        self._ids: set[str] = set()
        """Call ids given out in this response: each call gets its own."""
        self._last_index = 0
        self._saw_reasoning_field = False

    def _emit(self, kind: str, data: JSONObject) -> None:
        self.emitted = True
        if self.on_delta is not None:
            self.on_delta(kind, data)

    def _text(self, kind: str, text: str) -> None:
        (self.text_parts if kind == "text" else self.reasoning_parts).append(text)
        self._emit(kind, {"text": text})

    def add_chunk(self, chunk: JSONObject) -> None:
        """Consume one decoded SSE chunk, whose shape ``llm/_sse.py``'s ``chunk_problem``
        checked: the fields read here are strings, numbers, objects and lists where they
        must be (the ``isinstance`` below say so to the type checker, and skip nothing
        that passed the check)."""
        if self.request_id is None:
            request_id = chunk.get("id")
            self.request_id = request_id if isinstance(request_id, str) else None
        model = chunk.get("model")
        if self.model is None and isinstance(model, str):
            self.model = model
        usage = chunk.get("usage")
        if usage and isinstance(usage, dict):
            self.usage = Usage(
                input_tokens=int(_number(usage.get("prompt_tokens"))),
                output_tokens=int(_number(usage.get("completion_tokens"))),
                user_key=usage.get(USER_KEY_FIELD) is True or chunk.get(USER_KEY_FIELD) is True,
            )
        choices = chunk.get("choices")
        for choice in choices if isinstance(choices, list) else ():
            if not isinstance(choice, dict):
                continue
            finish = choice.get("finish_reason")
            if finish and isinstance(finish, str):
                self.finish_reason = finish
            delta = object_field(choice, "delta")
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if reasoning and isinstance(reasoning, str):
                self._saw_reasoning_field = True
                self._text("reasoning", reasoning)
            content = delta.get("content")
            if content and isinstance(content, str):
                if self._splitter is not None and not self._saw_reasoning_field:
                    for kind, piece in self._splitter.feed(content):
                        self._text(kind, piece)
                else:
                    self._text("text", content)
            calls = delta.get("tool_calls")
            for tc in calls if isinstance(calls, list) else ():
                if isinstance(tc, dict):
                    self._add_tool_delta(tc)

    def _add_tool_delta(self, tc: JSONObject) -> None:
        index = self._index_of(tc)
        fn = object_field(tc, "function")
        wire_id = tc.get("id")
        wire_id = wire_id if isinstance(wire_id, str) and wire_id else None
        call = self.calls.get(index)
        if call is None:
            call = self.calls[index] = {"id": None, "wire_id": wire_id, "name": "",
                                        "arguments": "", "announced": False}
        elif not call["wire_id"] and wire_id:
            call["wire_id"] = wire_id
        # else: the same id repeated in every chunk of one call (llama.cpp): taken once
        name = fn.get("name")
        if name and isinstance(name, str):
            if not call["name"]:
                call["name"] = name
            elif name != call["name"] and not wire_id:
                call["name"] += name  # a name streamed in pieces (rare, but allowed)
            # else: the whole name repeated in every chunk (llama.cpp): keep the first
        args = fn.get("arguments")
        if args and isinstance(args, str):
            call["arguments"] += args
            if call["announced"]:
                self._emit("tool_args", {"index": index, "id": call["id"], "delta": args})
            else:
                # Announce once arguments start: by then the name is complete.
                self._announce(index, call)

    def _index_of(self, tc: JSONObject) -> int:
        """The call a delta belongs to. Without an ``index`` (some servers omit it) a delta
        continues the last call, unless it names another id: then it opens a new call, so
        two calls are never merged into one."""
        index = tc.get("index")
        if not isinstance(index, int):
            index = self._last_index
            cur = self.calls.get(index)
            if cur is not None and tc.get("id") and cur["wire_id"] and tc["id"] != cur["wire_id"]:
                index = max(self.calls) + 1
        self._last_index = index
        return index

    def _settle_id(self, call: _CallState) -> str:
        """The call's id: the provider's, unless it is empty or another call of this response
        already has it (a model repeating one id for two calls); then a fresh one."""
        cid = call["id"]
        if cid is None:
            wire = call["wire_id"]
            cid = call["id"] = wire if wire and wire not in self._ids else new_call_id()
            self._ids.add(cid)
        return cid

    def _announce(self, index: int, call: _CallState) -> None:
        if not call["announced"] and call["name"]:
            call["announced"] = True
            cid = self._settle_id(call)
            self._emit("tool_call", {"index": index, "id": cid, "name": call["name"]})
            if call["arguments"]:  # arguments that came before the name
                self._emit("tool_args", {"index": index, "id": cid, "delta": call["arguments"]})

    def finish(self) -> None:
        """Flush held-back text at the end of the stream."""
        if self._splitter is not None:
            for kind, piece in self._splitter.flush():
                self._text(kind, piece)
        for index, call in sorted(self.calls.items()):
            self._announce(index, call)

    def tool_calls(self) -> list[ToolCall]:
        """The assembled calls, in index order."""
        return [
            ToolCall(id=self._settle_id(c), name=c["name"], arguments=c["arguments"])
            for _, c in sorted(self.calls.items())
            if c["name"]
        ]
