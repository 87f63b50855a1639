"""A session's history as transcript entries, for exporters.

Tool displays are not stored twice: the tool message (from the history) is joined with its
turn's run id and with the run's ``tool_returned`` event, which knows whether the tool failed.
"""

from __future__ import annotations

import json
import sqlite3
from typing import cast

from ..base.jsontypes import list_field, object_field, str_field
from ._db import Database, loads_object
from ._sessions import MessageRow, turn_ordered_rows
from .models import TranscriptDict, TranscriptEntry

__all__ = ["TranscriptMixin", "message_text"]



def _page_start(rows: list[MessageRow], last: int) -> int:
    """Where to start reading ``rows`` for its last ``last`` entries: the page itself, and
    before it the message that made the calls its first tool results answer (their names).
    -1: ``rows`` does not reach back that far."""
    i = len(rows) - last
    if i < 0:
        return -1
    while i < len(rows) and i >= 0 and rows[i][2] == "tool":
        i -= 1
    return i


def message_text(content: object) -> str:
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

    def session_transcript(self, session: str, last: int | None = None
                           ) -> list[TranscriptDict]:
        """The session's user, assistant, tool (and system) entries, run by run in the order
        the runs started (each run in one piece), oldest first; only the last ``last`` of them
        when given (read from the session's end: the cost follows ``last``, not the session).

        Each entry is a ``TranscriptEntry`` dumped to a dict (:class:`TranscriptDict`): text, tool calls, the tool name
        and error for tool results, and the turn and run the message belongs to.
        """
        if last is not None and last <= 0:
            return []
        with self._db.read() as conn:
            # Each run in one piece, in the order the runs started (a run answered later was
            # written in parts, with other turns in between): see ``turn_ordered_rows``.
            # (and the rows before the page back to the tool calls its first results answer)
            rows = turn_ordered_rows(
                conn, session, None if last is None else (lambda got: _page_start(got, last) >= 0))
            if last is not None:
                rows = rows[max(0, _page_start(rows, last)):]
            errors = _tool_errors(conn, session, None if last is None else
                                  sorted({row[5] for row in rows if row[5] is not None}))

        names: dict[str, str] = {}
        entries: list[TranscriptDict] = []
        for seq, _, _, content, turn_id, run_id, created in rows:
            message = loads_object(content) or {}
            entry = TranscriptEntry(
                seq=seq,
                role=str(message.get("role", "")),
                text=message_text(message.get("content")),
                turn_id=turn_id,
                run_id=run_id,
                created=created,
            )
            for call in list_field(message, "tool_calls"):
                if not isinstance(call, dict):
                    continue
                function = object_field(call, "function")
                call_id = str(call.get("id", ""))
                names[call_id] = str(function.get("name", ""))
                arguments = function.get("arguments", "")
                entry.tool_calls.append(
                    {"id": call_id, "name": names[call_id],
                     "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments)}
                )
            if entry.role == "tool":
                call_id = str(message.get("tool_call_id", ""))
                entry.tool_call_id = call_id
                entry.tool_name = str_field(message, "name") or names.get(call_id)
                entry.tool_error = errors.get(call_id)
            # The model's dump has the TypedDict's keys and types (a test compares the two).
            entries.append(cast(TranscriptDict, entry.model_dump()))
        return entries if last is None else entries[-last:]


def _tool_errors(conn: sqlite3.Connection, session: str,
                 run_ids: list[str] | None) -> dict[str, str | None]:
    """The error (or None) of each tool result of the session, by call id: of every run, or
    only of ``run_ids`` (the runs on a page)."""
    # Only tool_returned events matter; the LIKE filter avoids decoding text deltas.
    tool_events = "e.event LIKE '%\"type\":\"tool_returned\"%'"
    if run_ids is None:
        events = conn.execute(
            "SELECT e.event FROM run_events e JOIN runs r ON r.run_id = e.run_id"
            f" WHERE r.session = ? AND {tool_events}", (session,)).fetchall()
    else:
        events = []
        for i in range(0, len(run_ids), 500):
            chunk = run_ids[i:i + 500]
            events += conn.execute(
                f"SELECT e.event FROM run_events e WHERE e.run_id IN"
                f" ({', '.join('?' * len(chunk))}) AND {tool_events}", chunk).fetchall()
    errors: dict[str, str | None] = {}
    for (text,) in events:
        event = loads_object(text) or {}
        if event.get("type") == "tool_returned":
            error = event.get("error")
            errors[str(event.get("call_id"))] = None if error is None else str(error)
    return errors
