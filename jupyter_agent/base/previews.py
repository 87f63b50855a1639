"""How much of a long text the records keep, and the one way it is cut (docs/behaviour.md
§12.6): the model always gets the whole text; what is shown and stored about it is a preview.

- ``STREAM_PREVIEW``: a ``tool_returned`` event (the live card, the stored events, the saved
  notebook) keeps the first 5000 and the last 5000 characters of a tool result;
- ``NODE_PREVIEW``: a turn record keeps 500 + 500 characters of each tool result of the turn;
- ``HISTORY_PREVIEW``: a turn record keeps the turn's conversation (request and answer) as text,
  at most 10000 characters (its first and last 5000);
- ``MAX_ATTACHMENTS``: ``attach_files`` takes at most 20 files.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from .jsontypes import JSONValue, object_field

__all__ = ["STREAM_PREVIEW", "NODE_PREVIEW", "HISTORY_PREVIEW", "MAX_ATTACHMENTS",
           "head_tail", "history_text", "history_preview"]

STREAM_PREVIEW = (5000, 5000)
NODE_PREVIEW = (500, 500)
HISTORY_PREVIEW = 10000
MAX_ATTACHMENTS = 20


def head_tail(text: str, head: int, tail: int) -> str:
    """``text`` when it has at most ``head + tail`` characters; otherwise its first ``head`` and
    last ``tail`` characters with ``\\n\\n...[hide N chars]...\\n\\n`` between them."""
    if len(text) <= head + tail:
        return text
    hidden = len(text) - head - tail
    return f"{text[:head]}\n\n...[hide {hidden} chars]...\n\n{text[len(text) - tail:]}"


def history_text(messages: Iterable[Mapping[str, JSONValue]]) -> str:
    """The messages as ``role: text`` lines (a tool call as ``name(arguments)``), whole: the
    store masks it, then keeps :func:`history_preview` of it."""
    lines: list[str] = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, list):  # multi-part content: its text parts
            content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        text = str(content or "")
        listed = m.get("tool_calls") or []
        functions = [object_field(c, "function") if isinstance(c, dict) else {}
                     for c in (listed if isinstance(listed, list) else [])]
        calls = [f"{f.get('name', '')}({f.get('arguments', '')})" for f in functions]
        lines.append(f"{m.get('role', '?')}: {' '.join([text, *calls]).strip()}")
    return "\n".join(lines)


def history_preview(text: str) -> str:
    """``text`` cut to ``HISTORY_PREVIEW`` characters: its first and last halves."""
    half = HISTORY_PREVIEW // 2
    return head_tail(text, half, HISTORY_PREVIEW - half)
