"""Tool calling for models without reliable native tools (spec 4.6, improved).

Two protocols share this module:

* the **text protocol** of spec 4.6: the tools are described in the system prompt, the model
  answers ``0: <answer>`` or ``1: {"name": ..., "arguments": {...}}``, and the history is
  rewritten into that shape. It works with any chat model.
* the **constrained protocol** used with the embedded llama.cpp model: the same prompt idea,
  but the output is forced by a JSON schema (``tool_call_grammar``) to be either
  ``{"answer": "..."}`` or ``{"tool": "<name>", "arguments": {...}}``. The server turns the
  schema into a grammar, so a call or an answer is always well-formed JSON; a small model can
  pick a poor tool, but it can never emit a broken call.

Both allow at most one tool call per turn. Everything here is a pure function (or a small
stateful stream filter) so it can be tested without a model.
"""

from __future__ import annotations

import json
import uuid
from typing import Any, Literal

import json5

from jupyter_agent.llm.types import Message, ToolCall

__all__ = [
    "ConstrainedStreamGate",
    "PromptStreamGate",
    "Style",
    "new_call_id",
    "parse_constrained_output",
    "parse_prompt_output",
    "rewrite_history",
    "tool_call_grammar",
    "tool_functions",
    "tool_system_prompt",
    "with_tool_prompt",
]

Style = Literal["text", "json"]
"""``text``: the 0:/1: protocol of spec 4.6; ``json``: the schema-constrained protocol."""

_ANSWER_MARKERS = ("0:", "0：")
_CALL_MARKERS = ("1:", "1：")
_MARKER_WINDOW = 6
"""The ``0:`` marker counts only within this many leading characters (spec 8)."""
_GATE_CHARS = 3
"""Non-space characters held back before the stream gate decides (spec 8)."""


def new_call_id() -> str:
    """A fresh tool-call id; prompt-mode models never send one."""
    return f"call_{uuid.uuid4().hex[:24]}"


def tool_functions(tools: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """The ``{name, description, parameters}`` of each tool, sorted by name.

    Accepts OpenAI function-tool dicts (``{"type": "function", "function": {...}}``) or bare
    function dicts. Sorting keeps the prompt, and so any prompt cache, stable.
    """
    out = []
    for tool in tools or []:
        fn = tool.get("function", tool)
        out.append(
            {
                "name": fn["name"],
                "description": fn.get("description", ""),
                "parameters": fn.get("parameters") or {"type": "object", "properties": {}},
            }
        )
    return sorted(out, key=lambda f: f["name"])


# ---------------------------------------------------------------------------- the prompt

_TEXT_RULES = """\
Reply in exactly one of two ways:
- to answer the user, write `0:` and then your answer;
- to call a tool, write `1:` and then one JSON object: {"name": "<tool name>", "arguments": {...}}.
Call at most one tool per reply. Its result comes back in a user message between \
<ToolResponse> and </ToolResponse>; then reply again in one of the two ways."""

# No placeholder like "<your answer>" here: SmolLM2-135M copied it verbatim as its answer.
_JSON_RULES = """\
Reply with one JSON object. To answer the user, put your reply text in the "answer" key. To \
call a tool, put the tool's name in the "tool" key and its arguments object in the \
"arguments" key. Call at most one tool per reply. A tool's result comes back in a user \
message between <ToolResponse> and </ToolResponse>."""


def tool_system_prompt(tools: list[dict[str, Any]] | None, style: Style = "text") -> str:
    """The tool-description prompt added to the system message (tools sorted by name)."""
    listing = "\n".join(json.dumps(f, ensure_ascii=False) for f in tool_functions(tools))
    rules = _TEXT_RULES if style == "text" else _JSON_RULES
    return f"You can use these tools (one JSON line each):\n<tools>\n{listing}\n</tools>\n\n{rules}"


def with_tool_prompt(
    messages: list[Message], tools: list[dict[str, Any]] | None, style: Style = "text"
) -> list[Message]:
    """A copy of ``messages`` whose system message ends with the tool prompt.

    The first message is used when it is a system message; otherwise one is created in front.
    """
    prompt = tool_system_prompt(tools, style)
    out = [dict(m) for m in messages]
    if out and out[0].get("role") == "system":
        base = _content_text(out[0].get("content"))
        out[0]["content"] = f"{base}\n\n{prompt}" if base else prompt
    else:
        out.insert(0, {"role": "system", "content": prompt})
    return out


# ---------------------------------------------------------------------- history rewrite


def rewrite_history(messages: list[Message], style: Style = "text") -> list[Message]:
    """Rewrite a native-tools history into plain chat messages for prompt mode.

    * assistant text -> ``0: <text>`` (``{"answer": text}`` in the json style);
    * assistant tool calls -> ``1: {"name", "arguments"}`` of the FIRST call only
      (``{"tool", "arguments"}`` in the json style); the other calls are dropped (edge case 31)
      and so are their tool responses, so the model never reads a result of a call it did
      not make;
    * tool message -> user message ``<ToolResponse>\\n...\\n</ToolResponse>``.

    Other messages are copied unchanged.
    """
    out: list[Message] = []
    dropped_ids: set[str] = set()
    for msg in messages:
        role = msg.get("role")
        if role == "assistant":
            calls = msg.get("tool_calls") or []
            if calls:
                dropped_ids.update(c.get("id", "") for c in calls[1:])
                fn = calls[0].get("function", {})
                name, args = fn.get("name", ""), _decode_args(fn.get("arguments"))
                if style == "text":
                    body = "1: " + json.dumps({"name": name, "arguments": args}, ensure_ascii=False)
                else:
                    body = json.dumps({"tool": name, "arguments": args}, ensure_ascii=False)
            else:
                text = _content_text(msg.get("content"))
                if style == "text":
                    body = f"0: {text}"
                else:
                    body = json.dumps({"answer": text}, ensure_ascii=False)
            out.append({"role": "assistant", "content": body})
        elif role == "tool":
            if msg.get("tool_call_id") in dropped_ids:
                continue
            text = _content_text(msg.get("content"))
            out.append({"role": "user", "content": f"<ToolResponse>\n{text}\n</ToolResponse>"})
        else:
            out.append(dict(msg))
    return out


def _decode_args(arguments: Any) -> Any:
    """Arguments as a JSON value; a non-JSON string stays a string."""
    if not isinstance(arguments, str):
        return arguments if arguments is not None else {}
    if not arguments.strip():
        return {}
    try:
        return json.loads(arguments)
    except ValueError:
        return arguments


def _content_text(content: Any) -> str:
    """The text of a message content (a string or a list of parts)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return str(content)


# -------------------------------------------------------------------- parsing (text style)


def parse_prompt_output(text: str) -> tuple[str, ToolCall | None]:
    """Split a text-protocol reply into ``(answer, tool_call)``.

    * ``1:`` (or full-width ``1：``) at the start: the first JSON object after it, read with
      JSON5 as ``{name, arguments}``, is the call (fresh id, arguments re-serialised as JSON).
      If it does not parse, the answer is ``Tool call error: <raw text>`` and there is no call.
    * ``1:`` later in the text counts only when a valid call follows it; otherwise the text
      stays an answer (the reference turned every "Step 1: ..." into an error), and a reply
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
    return _make_call(obj["name"], obj.get("arguments"))


def _make_call(name: str, arguments: Any) -> ToolCall:
    """A ToolCall with a fresh id and arguments re-serialised as strict JSON."""
    if isinstance(arguments, str):
        try:
            arguments = json5.loads(arguments) if arguments.strip() else {}
        except ValueError:
            pass
    if arguments is None:
        arguments = {}
    return ToolCall(id=new_call_id(), name=name, arguments=json.dumps(arguments, ensure_ascii=False))


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


# The constrained protocol lives in its own module; re-exported here for one import site.
from jupyter_agent.llm.constrained import (  # noqa: E402
    ConstrainedStreamGate,
    parse_constrained_output,
    tool_call_grammar,
)
