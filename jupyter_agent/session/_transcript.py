"""A session's history as transcript entries, for exporters.

Tool displays are not stored twice: the tool message (from the history) is joined with its
turn's run id and with the run's ``tool_returned`` event, which knows whether the tool failed.
"""

from __future__ import annotations

from typing import Any

from ._db import Database, loads
from ._sessions import turn_ordered
from .models import TranscriptEntry

__all__ = ["TranscriptMixin", "message_text"]


def message_text(content: Any) -> str:
    """The text of a message's ``content``: a string, or the text parts of a part list."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            str(part.get("text", ""))
            for part in content
            if isinstance(part, dict) and part.get("type") in ("text", "input_text")
        ]
        return "\n".join(parts)
    return str(content)


class TranscriptMixin:
    """Session transcripts (part of ``Store``)."""

    _db: Database

    def session_transcript(self, session: str) -> list[dict[str, Any]]:
        """The session's user, assistant, tool (and system) entries, run by run in the order
        the runs started (each run in one piece), oldest first.

        Each entry is a ``TranscriptEntry`` dumped to a dict: text, tool calls, the tool name
        and error for tool results, and the turn and run the message belongs to.
        """
        with self._db.read() as conn:
            rows = conn.execute(
                "SELECT m.seq, m.content, m.turn_id, t.run_id, m.created FROM messages m"
                " LEFT JOIN turns t ON t.id = m.turn_id WHERE m.session = ? ORDER BY m.seq",
                (session,),
            ).fetchall()
            # Each run in one piece, in the order the runs started (a run answered later was
            # written in parts, with other turns in between): see ``turn_ordered``.
            order = {seq: i for i, (seq, _, _) in enumerate(turn_ordered(conn, session))}
            rows.sort(key=lambda row: order.get(row[0], len(order)))
            # Only tool_returned events matter; the LIKE filter avoids decoding text deltas.
            events = conn.execute(
                "SELECT e.event FROM run_events e JOIN runs r ON r.run_id = e.run_id"
                " WHERE r.session = ? AND e.event LIKE '%\"type\":\"tool_returned\"%'",
                (session,),
            ).fetchall()
        errors: dict[str, str | None] = {}
        for (text,) in events:
            event = loads(text)
            if event.get("type") == "tool_returned":
                errors[str(event.get("call_id"))] = event.get("error")

        names: dict[str, str] = {}
        entries: list[dict[str, Any]] = []
        for seq, content, turn_id, run_id, created in rows:
            message = loads(content)
            entry = TranscriptEntry(
                seq=seq,
                role=str(message.get("role", "")),
                text=message_text(message.get("content")),
                turn_id=turn_id,
                run_id=run_id,
                created=created,
            )
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {}
                call_id = str(call.get("id", ""))
                names[call_id] = str(function.get("name", ""))
                entry.tool_calls.append(
                    {"id": call_id, "name": names[call_id], "arguments": function.get("arguments", "")}
                )
            if entry.role == "tool":
                call_id = str(message.get("tool_call_id", ""))
                entry.tool_call_id = call_id
                entry.tool_name = message.get("name") or names.get(call_id)
                entry.tool_error = errors.get(call_id)
            entries.append(entry.model_dump())
        return entries
