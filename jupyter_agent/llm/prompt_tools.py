"""Tool calling for models without reliable native tools: the text protocol (docs/behaviour.md §9.4).

The tools are described in the system prompt, the model answers ``0: <answer>`` or
``1: {"name": ..., "arguments": {...}}``, and the history is rewritten into that shape (the
prompt and the rewrite are shared with the constrained protocol:
:mod:`jupyter_agent.llm.tool_prompt`). It works with any chat model. The schema-constrained
protocol used with the embedded llama.cpp model is :mod:`jupyter_agent.llm.constrained`: there
the output is forced by a JSON schema, so a call or an answer is always well-formed JSON.

Both allow at most one tool call per turn. Everything here is a pure function (or a small
stateful stream filter) so it can be tested without a model.
"""

from __future__ import annotations

from typing import Literal

import json5

from jupyter_agent.llm.tool_prompt import make_call
from jupyter_agent.llm.types import ToolCall

__all__ = ["PromptStreamGate", "parse_prompt_output"]

_ANSWER_MARKERS = ("0:", "0：")
_CALL_MARKERS = ("1:", "1：")
_MARKER_WINDOW = 6
"""The ``0:`` marker counts only within this many leading characters (docs/behaviour.md §9.4)."""
_GATE_CHARS = 3
"""Non-space characters held back before the stream gate decides (docs/behaviour.md §9.4)."""


# -------------------------------------------------------------------- parsing (text style)


def parse_prompt_output(text: str) -> tuple[str, ToolCall | None]:
    """Split a text-protocol reply into ``(answer, tool_call)``.

    * ``1:`` (or full-width ``1：``) at the start: the first JSON object after it, read with
      JSON5 as ``{name, arguments}``, is the call (fresh id, arguments re-serialised as JSON).
      If it does not parse, the answer is ``Tool call error: <raw text>`` and there is no call.
    * ``1:`` later in the text counts only when a valid call follows it; otherwise the text
      stays an answer (so "Step 1: ..." is not a failed call), and a reply
      that starts with ``0:`` is always an answer.
    * ``0:`` within the first 6 characters: everything up to and including it is stripped.
    """
    head = text.lstrip()
    at_start = head.startswith(_CALL_MARKERS)
    # An explicit answer marker wins over a "1:" somewhere inside the answer.
    pos = -1 if head.startswith(_ANSWER_MARKERS) else _find_marker(text, _CALL_MARKERS)
    if pos >= 0:
        call = _call_from_json(text[pos:])
        if call is not None:
            return "", call
        if at_start:
            return f"Tool call error: {text}", None
    for marker in _ANSWER_MARKERS:
        idx = text.find(marker, 0, _MARKER_WINDOW)
        if idx >= 0:
            return text[idx + len(marker) :].lstrip(), None
    return text, None


def _find_marker(text: str, markers: tuple[str, ...]) -> int:
    """Index of the earliest marker in ``text``, or -1."""
    found = [i for i in (text.find(m) for m in markers) if i >= 0]
    return min(found) if found else -1


def _call_from_json(text: str) -> ToolCall | None:
    """The ``{name, arguments}`` object in ``text`` as a ToolCall, or None if there is none."""
    raw = _first_json_object(text)
    if raw is None:
        return None
    try:
        obj = json5.loads(raw)
    except ValueError:
        return None
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str) or not obj["name"]:
        return None
    return make_call(obj["name"], obj.get("arguments"))


def _first_json_object(text: str) -> str | None:
    """The first balanced ``{...}`` in ``text`` (quotes respected), or None."""
    start = text.find("{")
    if start < 0:
        return None
    depth, quote, escaped = 0, "", False
    for i in range(start, len(text)):
        ch = text[i]
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return text[start : i + 1]
    return None


class PromptStreamGate:
    """Filters streamed text-protocol deltas so only answer text reaches the user.

    Output is held until 3 non-space characters have arrived. Then ``1:`` suppresses the rest
    (a tool call is coming), ``0:`` streams what follows the marker, and anything else streams
    in full. ``finish()`` flushes what a very short reply left held back.
    """

    def __init__(self) -> None:
        self._held = ""
        self.mode: Literal["pending", "answer", "tool"] = "pending"
        self._skip_space = False

    def feed(self, delta: str) -> str:
        """Take one delta; return the text to show now (possibly empty)."""
        if self.mode == "tool":
            return ""
        if self.mode == "answer":
            return self._emit(delta)
        self._held += delta
        head = self._held.lstrip()
        if len("".join(head.split())) < _GATE_CHARS:
            return ""
        return self._decide(head)

    def finish(self) -> str:
        """End of stream: decide on whatever is still held and return it."""
        if self.mode != "pending":
            return ""
        head = self._held.lstrip()
        return self._decide(head) if head else ""

    def _decide(self, head: str) -> str:
        self._held = ""
        if head.startswith(_CALL_MARKERS):
            self.mode = "tool"
            return ""
        self.mode = "answer"
        if head.startswith(_ANSWER_MARKERS):
            self._skip_space = True
            return self._emit(head[2:])
        return head

    def _emit(self, text: str) -> str:
        if self._skip_space:
            text = text.lstrip()
            self._skip_space = not text
        return text
