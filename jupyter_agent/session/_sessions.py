"""Sessions and their message history.

Remembered permissions are not here: they live in the kernel's memory
(``runtime/grants.py``), because a row of this file can be written by whatever can write the
file (docs/security.md). The ``permissions`` table of earlier versions is left unread.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from ..base.jsontypes import JSONObject, ReadOnlyJSON
from ._db import Database, Row, SQLValue, dumps, loads_object
from .models import SessionRecord

__all__ = ["MessageRow", "SessionsMixin", "ensure_session_row", "turn_ordered", "turn_ordered_rows"]

_UNFINISHED_RUN_STATUSES = frozenset({"ask", "running", "superseded"})
"""Runs whose messages stay out of the model's history (half a turn)."""

_SESSION_COLUMNS = "name, group_name, agent, workspace, model, created, updated"
_SESSION_FIELDS = ("name", "group", "agent", "workspace", "model", "created", "updated")
"""The record's fields, in the order of ``_SESSION_COLUMNS``."""


def _session(row: Row) -> SessionRecord:
    return SessionRecord.model_validate(dict(zip(_SESSION_FIELDS, row, strict=True)))


MessageRow = tuple[int, str | None, str, str, str | None, str | None, float]
"""A message row in turn order: ``(seq, run status, role, JSON content, turn id, run id,
created)``."""

_FIRST_TAIL = 32
"""Messages read from the end of a session at first; the read grows fourfold while short."""


_SelectedRow = tuple[int, str, str, str | None, str | None, float, str | None, float]
"""A row of ``_ROWS``: ``(seq, role, JSON content, run id, run status, run start, turn id,
created)``."""


def _order(rows: list[_SelectedRow], orphans: list[float] | None = None
           ) -> list[tuple[float, int, MessageRow]]:
    """``(place time, place seq, row)`` sorted by place, then seq.

    A run's place is when it started (its first part may be written only when it ends); a
    message of no known run keeps its own time (so does a message whose run row is gone: its
    run's first message gives the place; ``orphans`` collects those places).
    """
    first: dict[str, tuple[float, int]] = {}
    keyed = []
    for seq, role, content, run_id, status, started, turn_id, created in rows:
        key = run_id if run_id is not None else f"#{seq}"
        place = first.setdefault(key, (started, seq))
        if orphans is not None and run_id is not None and status is None:
            orphans.append(place[0])
        keyed.append((place[0], place[1], (seq, status, role, content, turn_id, run_id, created)))
    keyed.sort(key=lambda row: (row[0], row[1], row[2][0]))
    return keyed


_ROWS = ("SELECT m.seq, m.role, m.content, t.run_id, r.status, COALESCE(r.created, m.created),"
         " m.turn_id, m.created FROM messages m LEFT JOIN turns t ON t.id = m.turn_id"
         " LEFT JOIN runs r ON r.run_id = t.run_id WHERE m.session = ?")


def turn_ordered_rows(conn: sqlite3.Connection, session: str,
                      enough: Callable[[list[MessageRow]], bool] | None = None) -> list[MessageRow]:
    """The session's message rows grouped by run (see :func:`turn_ordered`), undecoded.

    With ``enough``, only an exact *suffix* of that order may come back: the store reads the
    session from its end, growing the read until ``enough(suffix)`` holds (or the whole
    session is read), so the cost follows what the caller needs, not the session's length.

    Why a suffix read from the end is exact: a run's place is its start, and a run is created
    before any of its messages is written, so every message before the read (smaller ``seq``,
    older ``created``) has a place no later than the newest of them, ``t_out``. Rows read whose
    place is after ``t_out`` therefore lose no message and are in their final order.
    """
    if enough is None:
        rows: list[_SelectedRow] = conn.execute(_ROWS + " ORDER BY m.seq", (session,)).fetchall()
        return [row for _, _, row in _order(rows)]
    limit = _FIRST_TAIL
    while True:
        rows = conn.execute(_ROWS + " ORDER BY m.seq DESC LIMIT ?", (session, limit)).fetchall()
        rows.reverse()
        orphans: list[float] = []
        ordered = _order(rows, orphans)
        if len(rows) < limit:  # the whole session
            return [row for _, _, row in ordered]
        before = conn.execute(
            "SELECT created FROM messages WHERE session = ? AND seq < ? ORDER BY seq DESC LIMIT 1",
            (session, rows[0][0])).fetchone()
        t_out = before[0] if before is not None else float("-inf")
        # A message of a run whose row is gone is placed by its own first message, which may
        # lie before the read: such rows never count as exact.
        cut = max([t_out, *orphans]) if orphans else t_out
        i = len(ordered)
        while i > 0 and ordered[i - 1][0] > cut:
            i -= 1
        suffix = [row for _, _, row in ordered[i:]]
        if enough(suffix):
            return suffix
        limit *= 4


def turn_ordered(conn: sqlite3.Connection, session: str
                 ) -> list[tuple[int, str | None, JSONObject]]:
    """The session's messages as ``(seq, run status, message)``, grouped by run: each run's
    messages together (a run that waited for an answer while other turns went on may be
    written in several parts, or only once answered), the runs in the order they started,
    messages in order within a run.

    A message of no known run (written without a turn, or by an old release) is its own group.
    """
    return [(row[0], row[1], loads_object(row[3]) or {})
            for row in turn_ordered_rows(conn, session)]


def ensure_session_row(conn: sqlite3.Connection, name: str, group: str | None = None) -> None:
    """Create the session row if missing (inside the caller's write transaction)."""
    now = time.time()
    conn.execute(
        "INSERT OR IGNORE INTO sessions (name, group_name, created, updated) VALUES (?, ?, ?, ?)",
        (name, group, now, now),
    )


class SessionsMixin:
    """Session records and message history (part of ``Store``)."""

    _db: Database

    # -- sessions --------------------------------------------------------------------------

    def ensure_session(self, name: str, group: str | None = None) -> SessionRecord:
        """The session called ``name``, created (in ``group``) if it does not exist yet.

        ``group`` only applies to a new session; an existing session keeps its group.
        """
        if not name:
            raise ValueError("a session needs a non-empty name")
        with self._db.write() as conn:
            ensure_session_row(conn, name, group)
            row = conn.execute(
                f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE name = ?", (name,)
            ).fetchone()
        return _session(row)

    def get_session(self, name: str) -> SessionRecord | None:
        """The session called ``name``, or ``None``."""
        row = self._db.connection().execute(
            f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE name = ?", (name,)
        ).fetchone()
        return None if row is None else _session(row)

    def list_sessions(self, group: str | None = None, *, limit: int | None = None,
                      offset: int = 0) -> list[SessionRecord]:
        """All sessions (or those of ``group``), most recently updated first; with ``limit``,
        at most that many, after skipping ``offset`` (a page, read through an index)."""
        sql = f"SELECT {_SESSION_COLUMNS} FROM sessions"
        params: tuple[SQLValue, ...] = ()
        if group is not None:
            sql += " WHERE group_name = ?"
            params = (group,)
        sql += " ORDER BY updated DESC, name"
        if limit is not None:
            sql += " LIMIT ? OFFSET ?"
            params = (*params, max(0, limit), max(0, offset))
        rows = self._db.connection().execute(sql, params)
        return [_session(row) for row in rows.fetchall()]

    def count_sessions(self, group: str | None = None) -> int:
        """How many sessions there are (in ``group``)."""
        if group is None:
            row = self._db.connection().execute("SELECT COUNT(*) FROM sessions").fetchone()
        else:
            row = self._db.connection().execute(
                "SELECT COUNT(*) FROM sessions WHERE group_name = ?", (group,)).fetchone()
        return int(row[0])

    def bind_agent(
        self, name: str, agent: str | None, workspace: str | Path | None = None
    ) -> SessionRecord:
        """Make ``agent`` the session's main agent; the workspace follows it.

        ``agent=None`` unbinds (the default agent and its workspace apply again). The session
        is created if needed.
        """
        with self._db.write() as conn:
            ensure_session_row(conn, name)
            conn.execute(
                "UPDATE sessions SET agent = ?, workspace = ?, updated = ? WHERE name = ?",
                (agent, None if workspace is None else str(workspace), time.time(), name),
            )
        return self._require_session(name)

    def bind_model(self, name: str, model: str | None) -> SessionRecord:
        """Bind ``model`` (a profile name) to the session, or unbind with ``None``."""
        with self._db.write() as conn:
            ensure_session_row(conn, name)
            conn.execute(
                "UPDATE sessions SET model = ?, updated = ? WHERE name = ?",
                (model, time.time(), name),
            )
        return self._require_session(name)

    def _require_session(self, name: str) -> SessionRecord:
        record = self.get_session(name)
        if record is None:  # deleted by another process between the write and this read
            raise KeyError(f"session {name!r} does not exist")
        return record

    def reset_session(self, name: str) -> None:
        """Forget the session's messages and turns, keeping the record and its bindings.

        Pending asks of the session are superseded (the history they would resume into is
        gone). Runs and their events stay, as logs.
        """
        with self._db.write() as conn:
            conn.execute("DELETE FROM messages WHERE session = ?", (name,))
            conn.execute("DELETE FROM turns WHERE session = ?", (name,))
            conn.execute(  # like supersede_pending(every=True), inside this transaction
                "UPDATE runs SET status = 'superseded', pending = NULL, pending_call_id = NULL,"
                " pending_version = pending_version + 1, updated = ?"
                " WHERE session = ? AND status = 'ask'",
                (time.time(), name),
            )
            conn.execute(
                "UPDATE sessions SET updated = ? WHERE name = ?", (time.time(), name)
            )

    # -- messages --------------------------------------------------------------------------

    def append_messages(
        self, session: str, turn_id: str | None, messages: Iterable[ReadOnlyJSON]
    ) -> list[int]:
        """Append OpenAI-format message dicts to the session history, in one transaction.

        The session is created if needed. Returns the sequence numbers given to the messages.
        """
        batch = list(messages)
        now = time.time()
        with self._db.write() as conn:
            ensure_session_row(conn, session)
            (last,) = conn.execute(
                "SELECT COALESCE(MAX(seq), 0) FROM messages WHERE session = ?", (session,)
            ).fetchone()
            seqs = list(range(last + 1, last + 1 + len(batch)))
            conn.executemany(
                "INSERT INTO messages (session, seq, role, content, turn_id, created)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (session, seq, str(message.get("role", "")), dumps(message), turn_id, now)
                    for seq, message in zip(seqs, batch, strict=True)
                ],
            )
            conn.execute("UPDATE sessions SET updated = ? WHERE name = ?", (now, session))
        return seqs

    def history_messages(self, session: str, rounds: int | None = None) -> list[JSONObject]:
        """The model's history: the session's finished turns, each in one piece, in the order
        they started; the last ``rounds`` rounds of it (all when ``rounds`` is ``None``).

        A run that waits for an answer (or still runs) is left out, and so is one whose
        question was superseded: its messages are half a turn (a question with no answer), and
        another turn's request must never carry them. A run answered later comes back whole,
        at its place. A round starts at a ``user`` message and runs to the next one, so an
        assistant's tool calls are never separated from their results.
        """
        if rounds is not None and rounds <= 0:
            return []

        def finished(rows: list[MessageRow]) -> list[MessageRow]:
            return [row for row in rows if row[1] not in _UNFINISHED_RUN_STATUSES]

        def enough(rows: list[MessageRow]) -> bool:
            # ``rounds`` user messages: the window lies inside the exact suffix read.
            done = finished(rows)
            users = [i for i, row in enumerate(done) if row[2] == "user"]
            return rounds is not None and len(users) >= rounds

        with self._db.read() as conn:
            rows = finished(turn_ordered_rows(conn, session, None if rounds is None else enough))
        if rounds is not None:
            starts = [i for i, row in enumerate(rows) if row[2] == "user"]
            rows = rows[starts[-rounds] if len(starts) >= rounds else 0:]
        return [loads_object(row[3]) or {} for row in rows]

