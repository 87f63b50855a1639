"""The constrained tool protocol: a JSON schema the server enforces on every reply.

For models without reliable native tool calls (the embedded SmolLM2 on llama.cpp): the reply is
forced to be ``{"answer": "..."}`` or ``{"tool": NAME, "arguments": {...}}``, so it is always
either an answer or one well-formed call. The tool prompt and the history
rewrite are shared with the text protocol (docs/behaviour.md §9.4; :mod:`jupyter_agent.llm.tool_prompt`).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from typing import Literal

import json5

from jupyter_agent.base.errors import ToolError
from jupyter_agent.base.jsontypes import JSONObject, JSONValue
from jupyter_agent.llm.tool_prompt import ToolSchemas, make_call, tool_functions
from jupyter_agent.llm.types import ToolCall

__all__ = ["tool_call_grammar", "parse_constrained_output", "ConstrainedStreamGate"]


def tool_call_grammar(
    tools: ToolSchemas | None, tool_choice: str | Mapping[str, JSONValue] | None = None
) -> JSONObject:
    """A JSON schema forcing one answer or one well-formed tool call.

    Send it as ``response_format={"type": "json_object", "schema": ...}`` to llama.cpp (or as a
    ``json_schema`` response format elsewhere). ``tool_choice``: ``None``/``"auto"`` allows an
    answer or any tool; ``"none"`` (or no tools) only an answer; ``"required"`` any tool; a tool
    name or ``{"type": "function", "function": {"name": ...}}`` only that tool.
    """
    answer: JSONObject = {
        "type": "object",
        "properties": {"answer": {"type": "string"}},
        "required": ["answer"],
        "additionalProperties": False,
    }
    functions = tool_functions(tools)
    forced = _forced_name(tool_choice)
    if forced is not None:
        functions = [f for f in functions if f["name"] == forced]
        if not functions:
            raise ToolError(f'tool_choice names "{forced}", which is not among the tools')
    calls: list[JSONObject] = [
        {
            "type": "object",
            "properties": {
                "tool": {"type": "string", "enum": [f["name"]]},
                "arguments": _inline_refs(f["parameters"]),
            },
            "required": ["tool", "arguments"],
            "additionalProperties": False,
        }
        for f in functions
    ]
    if tool_choice == "none" or not calls:
        return answer
    if tool_choice == "required" or forced is not None:
        return calls[0] if len(calls) == 1 else {"anyOf": [*calls]}
    return {"anyOf": [answer, *calls]}


def _forced_name(tool_choice: str | Mapping[str, JSONValue] | None) -> str | None:
    """The tool name a ``tool_choice`` forces, if it forces one."""
    if isinstance(tool_choice, Mapping):
        function = tool_choice.get("function", {})
        name = (function.get("name") if isinstance(function, dict) else None) or tool_choice.get(
            "name")
        return name if isinstance(name, str) else None
    if tool_choice in (None, "auto", "none", "required"):
        return None
    return tool_choice


def _inline_refs(schema: JSONValue) -> JSONValue:
    """The schema with local ``$ref``s replaced by their definitions and ``$defs`` dropped.

    Tool schemas are nested under ``arguments`` here, so their ``#/$defs/...`` pointers would
    no longer resolve. A recursive reference becomes ``{}`` (any value) after one level.
    """
    schema = copy.deepcopy(schema)
    defs: JSONObject = {}
    if isinstance(schema, dict):
        for key in ("definitions", "$defs"):
            found = schema.pop(key, {})
            defs.update(found if isinstance(found, dict) else {})

    def walk(node: JSONValue, stack: tuple[str, ...]) -> JSONValue:
        if isinstance(node, list):
            return [walk(n, stack) for n in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.rsplit("/", 1)[-1] in defs:
            name = ref.rsplit("/", 1)[-1]
            if name in stack:
                return {}
            rest = {k: v for k, v in node.items() if k != "$ref"}
            target = defs[name]
            return walk({**(target if isinstance(target, dict) else {}), **rest}, (*stack, name))
        return {k: walk(v, stack) for k, v in node.items()}

    return walk(schema, ())


_ANSWER_PREFIX = re.compile(r'\s*\{\s*"answer"\s*:\s*"')


def parse_constrained_output(text: str, *, answer_only: bool = False
                             ) -> tuple[str | None, ToolCall | None]:
    """Read a reply produced under ``tool_call_grammar``: ``(answer, None)`` or ``(None, call)``.

    A reply cut short (``finish_reason == "length"``) keeps the answer text decoded so far. A
    reply that is not the expected JSON at all (a server that ignored the schema) becomes the
    answer ``Tool call error: <raw text>``, as in the text protocol. With ``answer_only`` (the
    request had ``tool_choice="none"``) a tool call is not the expected JSON either: it is
    never returned as a call, so no tool runs.
    """
    obj = _loads_lenient(text)
    if isinstance(obj, dict):
        tool, answer = obj.get("tool"), obj.get("answer")
        if isinstance(tool, str) and tool and not answer_only:
            return None, make_call(tool, obj.get("arguments"))
        if isinstance(answer, str):
            return answer, None
    match = _ANSWER_PREFIX.match(text)
    if match:
        decoder = _JsonStringDecoder()
        return decoder.feed(text[match.end() :]), None
    return f"Tool call error: {text}", None


_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def _loads_lenient(text: str) -> JSONValue:
    """JSON allowing raw control characters in strings (llama.cpp's string grammar lets the
    model emit a bare newline), then JSON5; None when neither parses."""
    value: JSONValue
    try:
        value = json.loads(text, strict=False)
        return value
    except ValueError:
        pass
    try:
        value = json5.loads(text)
        return value
    except ValueError:
        return None


class _JsonStringDecoder:
    """Decodes the body of a JSON string as it streams in, up to its closing quote."""

    def __init__(self) -> None:
        self._pending = ""
        self._high_surrogate = ""
        self.closed = False

    def feed(self, chunk: str) -> str:
        """Decode ``chunk``; an escape cut at the chunk end waits for the next chunk."""
        data, self._pending, out = self._pending + chunk, "", []
        i = 0
        while i < len(data) and not self.closed:
            ch = data[i]
            if ch == '"':
                self.closed = True
                break
            if ch != "\\":
                out.append(ch)
                i += 1
                continue
            if i + 1 >= len(data):
                self._pending = data[i:]
                break
            kind = data[i + 1]
            if kind == "u":
                if i + 6 > len(data):
                    self._pending = data[i:]
                    break
                out.append(self._unicode(data[i + 2 : i + 6]))
                i += 6
            else:
                out.append(_ESCAPES.get(kind, kind))
                i += 2
        return "".join(out)

    def _unicode(self, hex4: str) -> str:
        try:
            code = int(hex4, 16)
        except ValueError:
            return ""
        if 0xD800 <= code < 0xDC00:
            self._high_surrogate = chr(code)
            return ""
        if 0xDC00 <= code < 0xE000 and self._high_surrogate:
            pair = self._high_surrogate + chr(code)
            self._high_surrogate = ""
            return pair.encode("utf-16", "surrogatepass").decode("utf-16")
        return chr(code)


class ConstrainedStreamGate:
    """Streams the answer text out of a constrained reply as it is generated.

    While the reply looks like ``{"answer": "``, the string's decoded characters are passed on;
    a ``{"tool": ...`` reply shows nothing. Undecided prefixes are held back.
    """

    def __init__(self) -> None:
        self._held = ""
        self.mode: Literal["pending", "answer", "tool"] = "pending"
        self._decoder = _JsonStringDecoder()

    def feed(self, delta: str) -> str:
        """Take one delta; return the answer text to show now (possibly empty)."""
        if self.mode == "tool":
            return ""
        if self.mode == "answer":
            return self._decoder.feed(delta)
        self._held += delta
        match = _ANSWER_PREFIX.match(self._held)
        if match:
            self.mode = "answer"
            return self._decoder.feed(self._held[match.end() :])
        if not _could_become_answer(self._held):
            self.mode = "tool"
        return ""

    def finish(self) -> str:
        """End of stream; nothing is ever held that should be shown."""
        return ""


def _could_become_answer(held: str) -> bool:
    """Whether ``held`` is still a prefix of ``{"answer": "`` (whitespace allowed)."""
    compact = re.sub(r"\s+", "", held)
    return '{"answer":"'.startswith(compact)
