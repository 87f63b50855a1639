"""Prompts of the checkpoint call (docs/behaviour.md §8.2)."""

from __future__ import annotations

import json
import re

from jupyter_agent.base.jsontypes import object_field
from jupyter_agent.llm.types import Message, tool_calls_of
from jupyter_agent.loop.compress.anchors import render_anchor_block
from jupyter_agent.loop.compress.constants import (
    CHECKPOINT_PROMPT_ANCHOR_LIMIT,
    TOOL_MEMORY_RESULT_CHARS,
    TOOL_MEMORY_USER_CHARS,
)
from jupyter_agent.loop.compress.truncate import truncate_by_chars

__all__ = [
    "CHECKPOINT_SYSTEM_PROMPT",
    "build_checkpoint_user_prompt",
    "build_tool_call_memory",
    "format_histories",
]

CHECKPOINT_SYSTEM_PROMPT = """\
You compress an agent's conversation history into a context checkpoint: a high-fidelity \
working summary from which the agent will continue the task without the original history.

Priorities, in order:
1. Keep everything needed to continue the task.
2. Keep exact field, tool, function and parameter names, ids, paths, URLs, error codes, \
numbers, dates and explicit constraints.
3. Keep the entities, states, results, reasons, timeline and numeric relationships.
4. Drop pleasantries, repeated confirmations, reasoning without conclusions and repetition.

Output rules:
1. Output exactly one <context_checkpoint>...</context_checkpoint> block.
2. No JSON, no Markdown code fences, no explanation before or after the block.
3. Summarise old tool calls as their key input, key result and failure reason. Do not keep \
tool-call ids and never invent a tool execution that did not happen.
4. Keep every section heading of the template, even when a section is empty.
5. Write in the language of the history; never translate names, fields, ids, paths, URLs, \
error codes, code or tool arguments.

What must survive:
- the user's overall goal and the current task;
- the user's constraints, preferences and prohibitions;
- work done, decisions made, and failed attempts that affect later choices;
- key facts, data, file and resource names, interface names and error messages;
- key tool results, failure reasons and what depends on them;
- open questions and the next steps.

Fact-keeping rules:
- Write fact-ledger bullets: "entity -> attribute / state / result / value / reason".
- Keep names, titles, numbers, amounts, ratios, times, addresses and error texts as written.
- Never reduce specifics to vague phrases such as "some results", "the tool" or "the issue".
- Facts about one topic may share a line, but no entity or value may be lost.
- Keep the names, keys, ids, paths, URLs, error codes, numbers and dates listed in \
<structural_anchor_candidates> and <tool_call_memory> verbatim when they matter for later work.
- Add no fact that is not in the history; mark anything uncertain as uncertain.

Template:

<context_checkpoint>
# Context Checkpoint

## User Goal

## Current Task

## Important Constraints

## Decisions Made

## Facts / Data To Preserve

## Entity / Value / Relation Ledger

## Exact Keys / Labels / Names To Preserve
- tools/functions:
- argument_or_field_keys:
- ids/paths/urls:
- error_codes_or_numbers:

## Tool Results Worth Remembering

## Files / Resources Mentioned

## Open Questions

## Next Steps
</context_checkpoint>"""

_CLOSING = (
    "Compress the history above into a context checkpoint now. "
    "Output only the <context_checkpoint>...</context_checkpoint> block."
)
_SPACES = re.compile(r"\s+")


def _content_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # multi-part content: only the text parts help a summary
        parts = [p.get("text", "") if isinstance(p, dict) else str(p) for p in content]
        return "\n".join(p for p in parts if p)
    return ""


def format_histories(messages: list[Message]) -> str:
    """Pretty JSON of the messages with only role, content, reasoning_content, tool_calls
    (assistant) and tool_call_id (tool); absent fields are left out."""
    items = []
    for message in messages:
        role = message.get("role")
        item: dict[str, object] = {"role": role, "content": message.get("content")}
        if message.get("reasoning_content"):
            item["reasoning_content"] = message["reasoning_content"]
        if role == "assistant" and message.get("tool_calls"):
            item["tool_calls"] = message["tool_calls"]
        if role == "tool" and message.get("tool_call_id"):
            item["tool_call_id"] = message["tool_call_id"]
        items.append(item)
    return json.dumps(items, indent=2, ensure_ascii=False, default=str)


def build_tool_call_memory(messages: list[Message]) -> str:
    """A ``<tool_call_memory>`` index pairing each call with its user intent and result.

    Pairing calls with results by id is error-prone for a model reading raw JSON, so we do it
    here: one ``- fn=…; args=…; user=…; result=…`` line per call. ``""`` when no tool was called.
    """
    results = {
        m["tool_call_id"]: _content_text(m.get("content"))
        for m in messages
        if m.get("role") == "tool" and m.get("tool_call_id")
    }
    lines: list[str] = []
    intent = ""
    for message in messages:
        text = _content_text(message.get("content"))
        if message.get("role") == "user" and text:
            intent = truncate_by_chars(_SPACES.sub(" ", text).strip(), TOOL_MEMORY_USER_CHARS)
            continue
        if message.get("role") != "assistant":
            continue
        for call in tool_calls_of(message):
            fn = object_field(call, "function")
            if not fn.get("name"):
                continue
            parts = [f"- fn={fn['name']}", f"args={fn.get('arguments') or '{}'}"]
            if intent:
                parts.append(f"user={intent}")
            call_id = call.get("id")
            if isinstance(call_id, str) and call_id in results:
                result = truncate_by_chars(results[call_id], TOOL_MEMORY_RESULT_CHARS)
                parts.append(f"result={result}")
            lines.append("; ".join(parts))
    if not lines:
        return ""
    return "<tool_call_memory>\n" + "\n".join(lines) + "\n</tool_call_memory>"


def build_checkpoint_user_prompt(messages: list[Message], output_budget: int) -> str:
    """The checkpoint call's user prompt: histories, output budget, tool-call memory, up to 100
    structural anchors taken from the histories JSON, and the closing instruction."""
    histories = format_histories(messages)
    memory = build_tool_call_memory(messages)
    return (
        f"<histories>\n{histories}\n</histories>\n\n"
        f"<output_budget>\nTarget maximum output tokens: {output_budget}. "
        "Use compact bullets and omit nonessential prose.\n</output_budget>\n\n"
        + (f"{memory}\n\n" if memory else "")
        + render_anchor_block(histories, CHECKPOINT_PROMPT_ANCHOR_LIMIT)
        + _CLOSING
    )
