"""Runs, their append-only event logs, and the suspended ("pending") state of asks.

A run that asks the user something ends with status ``ask`` and its pending state saved here.
An answer resumes it through ``claim_pending``, which is the only way from ``ask`` back to
``running``: one conditional UPDATE inside ``BEGIN IMMEDIATE``, so of two clicks (two threads,
or two kernels on one file) exactly one gets the state and the other gets ``None``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from typing import get_args

from pydantic import BaseModel

from ..base.jsontypes import JSONObject, ReadOnlyJSON, as_object
from ..base.secrets import mask
from ._db import Database, Row, SQLValue, dumps, loads, loads_object
from ._liveness import current_owner
from ._plan_patch import Base, compact, expand
from ._sessions import ensure_session_row
from .models import TERMINAL_RUN_STATUSES, RunRecord, StoredRunStatus

__all__ = ["RunsMixin"]

_RUN_COLUMNS = (
    "run_id, session, kind, status, created, updated, pending, pending_call_id, pending_version,"
    " error, owner_pid, owner_host, origin"
)
_RUN_FIELDS = tuple(c.strip() for c in _RUN_COLUMNS.split(","))
_SET_OWNER = "owner_pid = ?, owner_host = ?, owner_boot = ?, owner_start = ?"
"""The SET clause that makes the calling process a run's owner (see ``_liveness``)."""


# Runs whose last stored plan is kept as the base of the next patch: the runs of a batch in
# flight at once, and more. A run not among them writes its next plan whole.
_MAX_PLAN_BASES = 256
_BASES_LOCK = threading.Lock()


def owner_values() -> tuple[int, str, str | None, str | None]:
    """Parameters for ``_SET_OWNER``: this process's identity."""
    me = current_owner()
    return (me.pid, me.host, me.boot, me.start)


def _run(row: Row) -> RunRecord:
    fields: dict[str, object] = dict(zip(_RUN_FIELDS, row, strict=True))
    fields["pending"] = loads_object(row[6])
    return RunRecord.model_validate(fields)


class RunsMixin:
    """Run records, event logs and pending asks (part of ``Store``)."""

    _db: Database
    _plan_bases: dict[str, Base]
    """Run id -> its last stored plan (``Store.__init__`` makes it; ``_plan_patch``)."""

    def create_run(
        self, run_id: str, session: str | None, kind: str, *, status: StoredRunStatus = "running",
        origin: str | None = None,
    ) -> RunRecord:
        """Record a new run (of ``session``, created if needed); the id must be new.

        ``origin`` says where it started (``cell:<id>``), so a later run from the same place
        can supersede its question (:meth:`supersede_pending`).

        The calling process is recorded as the run's owner: if it dies while the run is
        ``running``, the next store opened marks the run ``interrupted``.
        """
        if status not in get_args(StoredRunStatus) or status == "ask":
            raise ValueError(f"a new run cannot start with status {status!r}")
        now = time.time()
        with self._db.write() as conn:
            if session is not None:
                ensure_session_row(conn, session)
            if conn.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone():
                raise ValueError(f"run {run_id!r} already exists")
            owner = owner_values()
            conn.execute(
                "INSERT INTO runs (run_id, session, kind, status, created, updated, owner_pid,"
                " owner_host, owner_boot, owner_start, origin)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (run_id, session, kind, status, now, now, *owner, origin),
            )
        return RunRecord(
            run_id=run_id, session=session, kind=kind, status=status, created=now, updated=now,
            owner_pid=owner[0], owner_host=owner[1], origin=origin,
        )

    def get_run(self, run_id: str) -> RunRecord | None:
        """The run ``run_id`` (with its pending state, if any), or ``None``."""
        row = self._db.connection().execute(
            f"SELECT {_RUN_COLUMNS} FROM runs WHERE run_id = ?", (run_id,)
        ).fetchone()
        return None if row is None else _run(row)

    def list_runs(self, session: str | None = None) -> list[RunRecord]:
        """All runs (or those of ``session``), oldest first."""
        sql = f"SELECT {_RUN_COLUMNS} FROM runs"
        params: tuple[SQLValue, ...] = ()
        if session is not None:
            sql += " WHERE session = ?"
            params = (session,)
        rows = self._db.connection().execute(sql + " ORDER BY created, rowid", params)
        return [_run(row) for row in rows.fetchall()]

    # -- events ----------------------------------------------------------------------------

    def append_events(
        self, run_id: str, events: Iterable[ReadOnlyJSON | BaseModel]
    ) -> int:
        """Append events (dicts or ``RunEvent`` models) to the run's log in one insert batch.

        Returns the sequence number of the last event (0 when ``events`` is empty).
        """
        # A plan is written as a patch of the run's last stored one (``_plan_patch``).
        base = self._plan_bases.get(run_id)
        rows, plans = [], []
        for i, event in enumerate(events):
            stored, steps = compact(event, base)
            rows.append(dumps(stored))
            if steps is not None:
                plans.append((i, steps))
        with self._db.write() as conn:
            if not conn.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone():
                raise KeyError(f"run {run_id!r} does not exist")
            last: int
            (last,) = conn.execute(
                "SELECT COALESCE(MAX(seq), 0) FROM run_events WHERE run_id = ?", (run_id,)
            ).fetchone()
            conn.executemany(
                "INSERT INTO run_events (run_id, seq, event) VALUES (?, ?, ?)",
                [(run_id, last + i, text) for i, text in enumerate(rows, start=1)],
            )
            if plans:  # the base of the next patch, once it is in the file for good
                i, steps = plans[-1]
                self._db.on_commit(lambda: self._keep_plan_base(run_id, (last + 1 + i, steps)))
        return last + len(rows)

    def _keep_plan_base(self, run_id: str, base: Base) -> None:
        bases = self._plan_bases
        with _BASES_LOCK:
            bases.pop(run_id, None)
            bases[run_id] = base
            while len(bases) > _MAX_PLAN_BASES:
                del bases[next(iter(bases))]

    def get_events(self, run_id: str, after: int = 0) -> list[JSONObject]:
        """The run's events in order (those with a sequence number above ``after``); a
        plan written as a patch comes back whole."""
        conn = self._db.connection()

        def rows(where: str, value: int) -> list[tuple[int, JSONObject]]:
            found: list[tuple[int, str]] = conn.execute(
                f"SELECT seq, event FROM run_events WHERE run_id = ? AND {where} ORDER BY seq",
                (run_id, value)).fetchall()
            return [(seq, event) for seq, text in found
                    if (event := as_object(loads(text))) is not None]

        return expand(rows("seq > ?", after), lambda first: rows("seq < ?", first))

    # -- status and pending state ----------------------------------------------------------

    def set_status(
        self, run_id: str, status: StoredRunStatus, *, error: str | None = None
    ) -> bool:
        """Set the run's status (and its one-line ``error``); a final status drops its
        pending state.

        Use ``suspend`` to enter ``ask`` and ``claim_pending`` to leave it. Returns False when
        there is no such run.
        """
        if status not in get_args(StoredRunStatus):
            raise ValueError(f"unknown run status {status!r}")
        if status == "ask":
            raise ValueError("use suspend() to put a run into 'ask' (it needs a pending state)")
        clear = status in TERMINAL_RUN_STATUSES
        if clear:  # it writes no more plans: its last one need not be kept for a patch
            with _BASES_LOCK:
                self._plan_bases.pop(run_id, None)
        with self._db.write() as conn:
            changed = conn.execute(
                "UPDATE runs SET status = ?, updated = ?, pending_version = pending_version + 1,"
                " pending = CASE WHEN ? THEN NULL ELSE pending END,"
                " pending_call_id = CASE WHEN ? THEN NULL ELSE pending_call_id END,"
                " error = ? WHERE run_id = ?",
                (status, time.time(), clear, clear,
                 None if error is None else mask(error), run_id),
            ).rowcount
            if clear:
                # The run's earlier turns ended on its question: a turn's status is its final one.
                conn.execute("UPDATE turns SET status = ? WHERE run_id = ? AND status = 'ask'",
                             (status, run_id))
        return changed > 0

    def suspend(
        self, run_id: str, pending: ReadOnlyJSON, *, call_id: str | None = None
    ) -> int:
        """Save ``pending`` (opaque to the store) and put the run into ``ask``.

        ``call_id`` is the tool-call id the ask waits on; when omitted, ``pending["call_id"]``
        is used if it is a string. Returns the new ``pending_version``.
        """
        if call_id is None:
            found = pending.get("call_id")
            call_id = found if isinstance(found, str) else None
        text = dumps(pending)
        # No RETURNING clause: it needs SQLite 3.35, older than some supported Pythons ship.
        with self._db.write() as conn:
            changed = conn.execute(
                "UPDATE runs SET status = 'ask', pending = ?, pending_call_id = ?,"
                " pending_version = pending_version + 1, updated = ? WHERE run_id = ?",
                (text, call_id, time.time(), run_id),
            ).rowcount
            if not changed:
                raise KeyError(f"run {run_id!r} does not exist")
            (version,) = conn.execute(
                "SELECT pending_version FROM runs WHERE run_id = ?", (run_id,)
            ).fetchone()
        return int(version)

    def list_pending(self, session: str | None = None) -> list[RunRecord]:
        """Runs waiting on an ask (of ``session``, or all), oldest first."""
        sql = f"SELECT {_RUN_COLUMNS} FROM runs WHERE status = 'ask'"
        params: tuple[SQLValue, ...] = ()
        if session is not None:
            sql += " AND session = ?"
            params = (session,)
        rows = self._db.connection().execute(sql + " ORDER BY created, rowid", params)
        return [_run(row) for row in rows.fetchall()]

    def claim_pending(
        self, run_id: str, expected_call_id: str | None = None
    ) -> JSONObject | None:
        """Atomically take a suspended run's state and mark it ``running``, owned by the
        calling process.

        Returns the pending dict to the one caller that wins, or ``None`` when the run is no
        longer waiting (answered, superseded, finished, missing) or waits on another call id
        than ``expected_call_id``. ``get_run`` tells a loser why.
        """
        with self._db.write() as conn:
            row = conn.execute(
                "SELECT status, pending, pending_call_id, pending_version FROM runs"
                " WHERE run_id = ?",
                (run_id,),
            ).fetchone()
            if row is None:
                return None
            status, pending, call_id, version = row
            if status != "ask" or pending is None:
                return None
            if expected_call_id is not None and call_id != expected_call_id:
                return None
            # The version check is redundant under BEGIN IMMEDIATE; it keeps the claim correct
            # even if someone later relaxes the transaction mode.
            claimed = conn.execute(
                "UPDATE runs SET status = 'running', pending_version = pending_version + 1,"
                f" updated = ?, error = NULL, {_SET_OWNER}"
                " WHERE run_id = ? AND status = 'ask' AND pending_version = ?",
                (time.time(), *owner_values(), run_id, version),
            ).rowcount
        return loads_object(pending) if claimed == 1 else None

    def supersede_pending(
        self, session: str, *, origin: str | None = None, keep: str | None = None,
        every: bool = False,
    ) -> list[str]:
        """Mark the pending asks of ``session`` that a new run replaces as ``superseded``.

        Only the asks of runs that started from ``origin`` (the same notebook cell, re-run) are
        replaced: questions waiting in other cells stay waiting while other turns go on around
        them. ``origin=None`` replaces nothing, unless ``every`` is given (the session's
        history is gone). Run ``keep`` is never touched. A late answer to a superseded ask is
        refused. Returns the superseded run ids.
        """
        if origin is None and not every:
            return []
        where = "WHERE session = ? AND status = 'ask' AND run_id IS NOT ?"
        params: tuple[SQLValue, ...] = (session, keep)
        if not every:
            where += " AND origin = ?"
            params = (*params, origin)
        with self._db.write() as conn:
            rows = conn.execute(f"SELECT run_id FROM runs {where}", params).fetchall()
            conn.execute(
                "UPDATE runs SET status = 'superseded', pending = NULL, pending_call_id = NULL,"
                f" pending_version = pending_version + 1, updated = ? {where}",
                (time.time(), *params),
            )
            conn.executemany(
                "UPDATE turns SET status = 'superseded' WHERE run_id = ? AND status = 'ask'",
                rows,
            )
        return sorted(run_id for (run_id,) in rows)
