"""Runs whose process died: found when a store is opened, and marked ``interrupted``.

A run's row says ``running`` until its process writes the final status. A process killed with
SIGKILL, a crashed kernel or a power cut never does, so each time a store is opened it looks
at the owners of its ``running`` rows (see ``_liveness``) and ends the dead ones' runs:

- the run becomes ``interrupted`` with a one-line ``error`` (why) and no pending state;
- its event log gets a ``run_failed`` event (``Interrupted: <why>``), so views and exports
  show how it ended;
- its turn records still ``running`` become ``interrupted`` too.

The session history needs no repair: a round's messages are written in one transaction at the
end of the round, so a killed run leaves whole rounds only (every tool call with its result).
"""

from __future__ import annotations

import sqlite3
import time

from ._db import Database, dumps
from ._liveness import Owner, owner_is_dead

__all__ = ["RecoveryMixin", "ORPHAN_AGE"]

ORPHAN_AGE = 24 * 3600.0
"""Seconds after which a ``running`` row with no owner (written by a release that did not
record owners) is taken as interrupted; a younger one may belong to an old kernel still at
work, so it is left alone."""


def _reason(owner: Owner | None) -> str:
    """Why the run is ``interrupted`` (the row's and the turn's ``error``)."""
    if owner is None:
        return "left running by an earlier jupyter-agent release that never finished it"
    return (f"the process running it (pid {owner.pid} on {owner.host}) ended before the run "
            "finished")


class RecoveryMixin:
    """``recover_interrupted_runs`` (part of ``Store``)."""

    _db: Database

    def recover_interrupted_runs(self) -> list[str]:
        """Mark every ``running`` run whose process is dead as ``interrupted``.

        Called when a store is opened; safe to call any time, from any process (one write
        transaction: two openers never mark a run twice). Returns the run ids it marked.
        """
        conn = self._db.connection()
        rows = conn.execute(
            "SELECT run_id, owner_pid, owner_host, owner_boot, owner_start, updated FROM runs"
            " WHERE status = 'running'"
        ).fetchall()
        if not rows:
            return []  # the common case: no write lock taken on open
        now = time.time()
        dead: list[tuple[str, int | None, str]] = []
        for run_id, pid, host, boot, start, updated in rows:
            if pid is None:
                if now - updated > ORPHAN_AGE:
                    dead.append((run_id, None, _reason(None)))
            elif owner_is_dead(owner := Owner(pid=pid, host=host or "", boot=boot, start=start)):
                dead.append((run_id, pid, _reason(owner)))
        marked: list[str] = []
        if not dead:
            return marked
        with self._db.write() as conn:
            for run_id, pid, reason in dead:
                if self._mark_interrupted(conn, run_id, pid, reason, now):
                    marked.append(run_id)
        return marked

    @staticmethod
    def _mark_interrupted(conn: sqlite3.Connection, run_id: str, pid: int | None, reason: str,
                          now: float) -> bool:
        # Re-checked under the write lock: the run may have finished, or been claimed by a live
        # process (a new owner), since the read above.
        changed = conn.execute(
            "UPDATE runs SET status = 'interrupted', error = ?, pending = NULL,"
            " pending_call_id = NULL, pending_version = pending_version + 1, updated = ?"
            " WHERE run_id = ? AND status = 'running' AND owner_pid IS ?",
            (reason, now, run_id, pid),
        ).rowcount
        if not changed:
            return False
        (last,) = conn.execute(
            "SELECT COALESCE(MAX(seq), 0) FROM run_events WHERE run_id = ?", (run_id,)
        ).fetchone()
        conn.execute(
            "INSERT INTO run_events (run_id, seq, event) VALUES (?, ?, ?)",
            (run_id, last + 1,
             dumps({"type": "run_failed", "t": now, "error": f"Interrupted: {reason}"})),
        )
        conn.execute(
            "UPDATE turns SET status = 'interrupted', error = ?,"
            " duration = COALESCE(duration, MAX(0, ? - started))"
            " WHERE run_id = ? AND status = 'running'",
            (reason, now, run_id),
        )
        return True
