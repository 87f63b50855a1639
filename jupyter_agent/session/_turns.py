"""Per-turn records: mode, intent, model, duration, tokens and cost."""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping, Sequence
from typing import get_args

from pydantic import BaseModel

from ..base.previews import NODE_PREVIEW, head_tail, history_preview
from ..base.secrets import mask
from ._db import Database, Row, dumps, loads
from ._sessions import ensure_session_row
from .models import Mode, TurnRecord, UsageTotals

__all__ = ["TurnsMixin"]

_TURN_COLUMNS = (
    "id, session, run_id, mode, agent, intent, model, profile, started, duration,"
    " input_tokens, output_tokens, cost, status, error, tools, history_preview"
)


def _turn(row: Row) -> TurnRecord:
    fields: dict[str, object] = dict(zip((c.strip() for c in _TURN_COLUMNS.split(",")), row, strict=True))
    intent, tools = fields["intent"], fields["tools"]
    fields["intent"] = loads(intent) if isinstance(intent, str) else None
    fields["tools"] = (loads(tools) if isinstance(tools, str) else None) or []
    return TurnRecord.model_validate(fields)


class TurnsMixin:
    """Turn records and usage totals (part of ``Store``)."""

    _db: Database

    def start_turn(
        self,
        session: str,
        *,
        mode: Mode = "ask",
        run_id: str | None = None,
        agent: str | None = None,
        intent: Mapping[str, object] | BaseModel | None = None,
        model: str | None = None,
        profile: str | None = None,
    ) -> str:
        """Record the start of a turn (creating the session if needed); returns its id."""
        if mode not in get_args(Mode):
            raise ValueError(f"mode must be ask, search or agent, not {mode!r}")
        turn_id = uuid.uuid4().hex
        now = time.time()
        with self._db.write() as conn:
            ensure_session_row(conn, session)
            conn.execute(
                "INSERT INTO turns (id, session, run_id, mode, agent, intent, model, profile,"
                " started) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    turn_id,
                    session,
                    run_id,
                    mode,
                    agent,
                    None if intent is None else dumps(intent),
                    model,
                    profile,
                    now,
                ),
            )
            conn.execute("UPDATE sessions SET updated = ? WHERE name = ?", (now, session))
        return turn_id

    def finish_turn(
        self,
        turn_id: str,
        *,
        status: str = "done",
        input_tokens: int = 0,
        output_tokens: int = 0,
        cost: float = 0.0,
        model: str | None = None,
        profile: str | None = None,
        duration: float | None = None,
        error: str | None = None,
        tools: Sequence[Mapping[str, object]] | None = None,
        history: str | None = None,
    ) -> TurnRecord:
        """Record how a turn ended. ``duration`` defaults to the time since ``start_turn``.

        ``model``/``profile`` replace the ones given at the start only when not ``None`` (the
        answering model can differ after a failover). ``tools`` (``call_id``, ``name``,
        ``output``, ``error`` of each call) and ``history`` (the conversation as text) are
        masked, then kept as previews: 500 + 500 characters of each output, 10000 of the
        history (docs/behaviour.md §12).
        """
        previews = [{"call_id": str(t.get("call_id", "")), "name": str(t.get("name", "")),
                     "error": None if t.get("error") is None else mask(str(t["error"])),
                     "output": head_tail(mask(str(t.get("output") or "")), *NODE_PREVIEW)}
                    for t in tools or []]
        now = time.time()
        with self._db.write() as conn:
            row = conn.execute("SELECT started FROM turns WHERE id = ?", (turn_id,)).fetchone()
            if row is None:
                raise KeyError(f"turn {turn_id!r} does not exist")
            conn.execute(
                "UPDATE turns SET status = ?, input_tokens = ?, output_tokens = ?, cost = ?,"
                " model = COALESCE(?, model), profile = COALESCE(?, profile), duration = ?,"
                " error = ?, tools = ?, history_preview = ? WHERE id = ?",
                (
                    status,
                    int(input_tokens),
                    int(output_tokens),
                    float(cost),
                    model,
                    profile,
                    max(0.0, now - row[0]) if duration is None else float(duration),
                    None if error is None else mask(error),
                    dumps(previews) if previews else None,
                    None if history is None else history_preview(mask(history)),
                    turn_id,
                ),
            )
            record = conn.execute(
                f"SELECT {_TURN_COLUMNS} FROM turns WHERE id = ?", (turn_id,)
            ).fetchone()
        return _turn(record)

    def list_turns(self, session: str) -> list[TurnRecord]:
        """The session's turns, oldest first."""
        rows = self._db.connection().execute(
            f"SELECT {_TURN_COLUMNS} FROM turns WHERE session = ? ORDER BY started, rowid",
            (session,),
        )
        return [_turn(row) for row in rows.fetchall()]

    def usage(self, session: str) -> UsageTotals:
        """Token, cost and time totals over the session's turns, also split by model."""
        rows = self._db.connection().execute(
            "SELECT COALESCE(model, ''), COUNT(*), SUM(input_tokens), SUM(output_tokens),"
            " SUM(cost), SUM(COALESCE(duration, 0)) FROM turns WHERE session = ?"
            " GROUP BY COALESCE(model, '') ORDER BY 1",
            (session,),
        ).fetchall()
        totals = UsageTotals()
        for model, turns, input_tokens, output_tokens, cost, seconds in rows:
            totals.turns += turns
            totals.input_tokens += input_tokens
            totals.output_tokens += output_tokens
            totals.cost += cost
            totals.seconds += seconds
            totals.by_model[model] = {
                "turns": turns,
                "input_tokens": input_tokens,
                "output_tokens": output_tokens,
                "cost": cost,
            }
        return totals
