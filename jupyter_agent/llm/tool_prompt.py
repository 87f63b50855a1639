"""Tools for models without reliable native tool calls: the part both protocols share.

How the tools are described in the system prompt (:func:`tool_system_prompt`), how a
native-tools history is rewritten for such a model (:func:`rewrite_history`), and how a call
the model wrote becomes a :class:`~jupyter_agent.llm.types.ToolCall` (:func:`make_call`).
The text protocol (docs/behaviour.md §9.4) is :mod:`jupyter_agent.llm.prompt_tools`; the schema-constrained
one used with the embedded model is :mod:`jupyter_agent.llm.constrained`. Both build on this
module, and neither imports the other.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Literal, TypedDict

import json5

from jupyter_agent.base.jsontypes import JSONValue, object_field, str_field
from jupyter_agent.llm.types import Message, ToolCall

__all__ = [
    "Style",
    "ToolFunction",
    "ToolSchemas",
    "make_call",
    "new_call_id",
    "rewrite_history",
    "tool_functions",
    "tool_system_prompt",
    "with_tool_prompt",
]

Style = Literal["text", "json"]
"""``text``: the 0:/1: protocol; ``json``: the schema-constrained protocol."""


def new_call_id() -> str:
    """A fresh tool-call id; prompt-mode models never send one."""
    return f"call_{uuid.uuid4().hex[:24]}"


class ToolFunction(TypedDict):
    """One tool as the prompt protocols describe it."""

    name: str
    description: JSONValue
    """The schema's description (a string, as every tool of ours has)."""
    parameters: JSONValue
    """The JSON schema of the arguments."""


ToolSchemas = Sequence[Mapping[str, JSONValue]]
"""Function tool schemas in the OpenAI format (``ChatRequest.tools``)."""


def tool_functions(tools: ToolSchemas | None) -> list[ToolFunction]:
    """The ``{name, description, parameters}`` of each tool, sorted by name.

    Accepts OpenAI function-tool dicts (``{"type": "function", "function": {...}}``) or bare
    function dicts. Sorting keeps the prompt, and so any prompt cache, stable.

    Raises:
        KeyError: a tool without a name (a schema of ours always has one).
    """
    out: list[ToolFunction] = []
    for tool in tools or []:
        fn = tool.get("function", tool)
        if not isinstance(fn, Mapping):
            fn = {}
        name = fn["name"]
        out.append(
            {
                "name": name if isinstance(name, str) else str(name),
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


def tool_system_prompt(tools: ToolSchemas | None, style: Style = "text") -> str:
    """The tool-description prompt added to the system message (tools sorted by name)."""
    listing = "\n".join(json.dumps(f, ensure_ascii=False) for f in tool_functions(tools))
    rules = _TEXT_RULES if style == "text" else _JSON_RULES
    return f"You can use these tools (one JSON line each):\n<tools>\n{listing}\n</tools>\n\n{rules}"


def with_tool_prompt(
    messages: list[Message], tools: ToolSchemas | None, style: Style = "text"
) -> list[Message]:
    """A copy of ``messages`` whose system message ends with the tool prompt.

    The first message is used when it is a system message; otherwise one is created in front.
    """
    prompt = tool_system_prompt(tools, style)
    out: list[Message] = [dict(m) for m in messages]
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
      (``{"tool", "arguments"}`` in the json style); the other calls are dropped (§9.4)
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
            listed = msg.get("tool_calls")
            calls = [c for c in listed if isinstance(c, dict)] if isinstance(listed, list) else []
            if calls:
                dropped_ids.update(str_field(c, "id") for c in calls[1:])
                fn = object_field(calls[0], "function")
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
            if str_field(msg, "tool_call_id", "\0") in dropped_ids:
                continue
            text = _content_text(msg.get("content"))
            out.append({"role": "user", "content": f"<ToolResponse>\n{text}\n</ToolResponse>"})
        else:
            out.append(dict(msg))
    return out


def _decode_args(arguments: JSONValue) -> JSONValue:
    """Arguments as a JSON value; a non-JSON string stays a string."""
    if not isinstance(arguments, str):
        return arguments if arguments is not None else {}
    if not arguments.strip():
        return {}
    try:
        decoded: JSONValue = json.loads(arguments)
        return decoded
    except ValueError:
        return arguments


def _content_text(content: JSONValue) -> str:
    """The text of a message content (a string or a list of parts)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str_field(p, "text") for p in content if isinstance(p, dict))
    return str(content)


def make_call(name: str, arguments: JSONValue) -> ToolCall:
    """A ToolCall with a fresh id and arguments re-serialised as strict JSON."""
    if isinstance(arguments, str):
        try:
            arguments = json5.loads(arguments) if arguments.strip() else {}
        except ValueError:
            pass
    if arguments is None:
        arguments = {}
    return ToolCall(id=new_call_id(), name=name, arguments=json.dumps(arguments, ensure_ascii=False))
