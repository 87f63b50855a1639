"""Batches and their finished items (``jupyter_agent/batch/``), so a re-run resumes.

A batch row records one batch cell: the hash of what it computes (``spec_key``: agent,
template, options), the hash of its inputs, the template and options as JSON, and its status.
An item row is written when an item ends, one small write each, so a killed kernel loses only
the items that were still running. Items are keyed by ``(spec_key, item_key, model)``: the same
prompt under the same options and model is the same work, whichever batch row asked for it.
"""

from __future__ import annotations

import secrets
import sqlite3
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import TypeVar

from pydantic import JsonValue

from ..base.deferred import DeferredModel
from ..base.secrets import mask, mask_obj
from ._db import Database, Row, SQLValue, dumps, loads

__all__ = ["BatchesMixin", "BatchRecord", "BatchItemRecord"]

_T = TypeVar("_T")

_ITEM_FIELDS = ("status", "run_id", "answer", "rounds", "input_tokens", "output_tokens", "cost",
                "seconds", "error")


class BatchRecord(DeferredModel):
    """One stored batch (one batch cell, re-runs included)."""

    batch_id: str
    spec_key: str
    inputs_hash: str
    kind: str
    template: str
    options: dict[str, JsonValue]
    models: list[str]
    n_items: int
    status: str
    """``running`` while it runs, then ``done``, ``stopped`` or ``error``."""
    created: float
    updated: float


class BatchItemRecord(DeferredModel):
    """The stored outcome of one item (a prompt on one model)."""

    item_key: str
    model: str
    batch_id: str
    status: str
    run_id: str | None = None
    answer: str = ""
    rounds: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    seconds: float = 0.0
    error: str | None = None
    updated: float = 0.0


_BATCH_COLUMNS = ("batch_id, spec_key, inputs_hash, kind, template, options, models, n_items, "
                  "status, created, updated")
_BATCH_FIELDS = tuple(c.strip() for c in _BATCH_COLUMNS.split(","))


def _batch(row: Row) -> BatchRecord:
    fields: dict[str, object] = dict(zip(_BATCH_FIELDS, row, strict=True))
    options, models = fields["options"], fields["models"]
    fields["options"] = (loads(options) if isinstance(options, str) else None) or {}
    fields["models"] = (loads(models) if isinstance(models, str) else None) or []
    return BatchRecord.model_validate(fields)


class BatchesMixin:
    """Batch records and their item outcomes (part of ``Store``)."""

    _db: Database

    def open_batch(self, *, spec_key: str, inputs_hash: str, kind: str, template: str,
                   options: dict[str, JsonValue], models: list[str], n_items: int) -> BatchRecord:
        """The batch of this spec and these inputs (status set back to ``running``), or a new
        one. Template and options are stored with every known secret masked."""
        now = time.time()
        with self._db.write() as conn:
            row = conn.execute(
                f"SELECT {_BATCH_COLUMNS} FROM batches WHERE spec_key = ? AND inputs_hash = ?"
                " ORDER BY created DESC LIMIT 1", (spec_key, inputs_hash)).fetchone()
            if row is not None:
                conn.execute("UPDATE batches SET status = 'running', updated = ? "
                             "WHERE batch_id = ?", (now, row[0]))
                record = _batch(row)
                return record.model_copy(update={"status": "running", "updated": now})
            batch_id = "batch_" + secrets.token_hex(6)
            conn.execute(
                f"INSERT INTO batches ({_BATCH_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (batch_id, spec_key, inputs_hash, kind, mask(template), dumps(mask_obj(options)),
                 dumps(models), n_items, "running", now, now))
        return BatchRecord(batch_id=batch_id, spec_key=spec_key, inputs_hash=inputs_hash,
                           kind=kind, template=mask(template), options=mask_obj(options), models=models,
                           n_items=n_items, status="running", created=now, updated=now)

    def list_batches(self) -> list[BatchRecord]:
        """Every stored batch, newest first."""
        rows = self._db.connection().execute(
            f"SELECT {_BATCH_COLUMNS} FROM batches ORDER BY created DESC, rowid DESC")
        return [_batch(r) for r in rows.fetchall()]

    def set_batch_status(self, batch_id: str, status: str) -> None:
        """Record how the batch's last run ended (``done``, ``stopped``, ``error``)."""
        with self._db.write() as conn:
            conn.execute("UPDATE batches SET status = ?, updated = ? WHERE batch_id = ?",
                         (status, time.time(), batch_id))

    def save_batch_outcomes(self, batch_id: str, spec_key: str,
                            ended: Sequence[tuple[str, str, Mapping[str, object]]]) -> None:
        """Store ended items at once: each item's run (from its outcome: ``kind``, ``events``,
        ``status``, ``pending``) and its row, ``ended`` being ``(item_key, model, outcome)``.

        What ``create_run`` + ``append_events`` + ``set_status``/``suspend`` would write one
        by one, in a few multi-row statements: under a busy
        interpreter every SQLite statement hands the interpreter lock back and waits to get it
        again, so a batch's writer pays per statement, not per row. A
        run already stored is left as it is (its item row is still written).
        """
        if not ended:
            return
        from ._runs import owner_values

        now, owner = time.time(), owner_values()
        with self._db.write() as conn:
            ids = [run_id for _, _, o in ended if isinstance(run_id := o.get("run_id"), str)
                   and run_id]
            known: set[str] = set()
            for part in _chunks(ids, 500):
                known.update(r for (r,) in conn.execute(
                    f"SELECT run_id FROM runs WHERE run_id IN ({', '.join('?' * len(part))})",
                    part))
            runs: list[tuple[SQLValue, ...]] = []
            events: list[tuple[SQLValue, ...]] = []
            for _, _, o in ended:
                run_id = o.get("run_id")
                if not isinstance(run_id, str) or not run_id or run_id in known:
                    continue
                known.add(run_id)
                status, pending, call_id, version = o.get("status"), None, None, 1
                held = o.get("pending")
                if status == "ask" and isinstance(held, Mapping) and held:
                    pending = dumps(held)
                    call_id = held.get("call_id")
                    call_id = call_id if isinstance(call_id, str) else None
                elif status not in ("done", "aborted", "error", "max_rounds", "incomplete",
                                    "invalid"):
                    status, version = "running", 0  # as create_run left it
                kind = o.get("kind")
                runs.append((run_id, None, kind if isinstance(kind, str) and kind else "toolloop",
                             str(status), now, now, pending, call_id, version, *owner))
                stored = o.get("events")
                events.extend((run_id, seq, dumps(e)) for seq, e in
                              enumerate(stored if isinstance(stored, list) else [], start=1))
            _insert_many(conn, "INSERT INTO runs (run_id, session, kind, status, created,"
                         " updated, pending, pending_call_id, pending_version, owner_pid,"
                         " owner_host, owner_boot, owner_start) VALUES", runs)
            _insert_many(conn, "INSERT INTO run_events (run_id, seq, event) VALUES", events)
            items: list[tuple[SQLValue, ...]] = []
            for item_key, model, o in ended:
                values = [_num(o.get(f)) for f in _ITEM_FIELDS]
                values[2] = mask(str(values[2] or ""))
                if values[8] is not None:
                    values[8] = mask(str(values[8]))
                items.append((spec_key, item_key, model, batch_id, *values, now))
            _insert_many(conn, "INSERT OR REPLACE INTO batch_items (spec_key, item_key, model,"
                         f" batch_id, {', '.join(_ITEM_FIELDS)}, updated) VALUES", items)

    def batch_items(self, spec_key: str, keys: Iterable[tuple[str, str]] | None = None
                    ) -> dict[tuple[str, str], BatchItemRecord]:
        """Stored outcomes of ``spec_key`` by ``(item_key, model)`` (only ``keys`` if given)."""
        rows = self._db.connection().execute(
            "SELECT item_key, model, batch_id, " + ", ".join(_ITEM_FIELDS) + ", updated "
            "FROM batch_items WHERE spec_key = ?", (spec_key,)).fetchall()
        wanted = set(keys) if keys is not None else None
        out: dict[tuple[str, str], BatchItemRecord] = {}
        for row in rows:
            if wanted is not None and (row[0], row[1]) not in wanted:
                continue
            rec = BatchItemRecord.model_validate(dict(zip(
                ("item_key", "model", "batch_id", *_ITEM_FIELDS, "updated"), row)))
            out[(rec.item_key, rec.model)] = rec
        return out


def _num(value: object) -> SQLValue:
    """Plain Python numbers for SQLite (numpy scalars are not bound by sqlite3)."""
    if value is None or isinstance(value, (int, float, str, bytes)):
        return value
    item = getattr(value, "item", None)
    plain = item() if callable(item) else value
    if plain is None or isinstance(plain, (int, float, str, bytes)):
        return plain
    return str(plain)  # what sqlite3 would refuse to bind: its text, as for the answer


def _chunks(values: Sequence[_T], size: int) -> Iterable[Sequence[_T]]:
    for i in range(0, len(values), size):
        yield values[i:i + size]


def _insert_many(conn: sqlite3.Connection, head: str, rows: list[tuple[SQLValue, ...]]) -> None:
    """``head`` (``INSERT ... VALUES``) for every row, a few hundred rows a statement (SQLite
    binds at most 32766 values in one, 999 in builds before 3.32)."""
    if not rows:
        return
    width = len(rows[0])
    per = max(1, 999 // width)
    for part in _chunks(rows, per):
        marks = ", ".join(["(" + ", ".join("?" * width) + ")"] * len(part))
        conn.execute(f"{head} {marks}", [v for row in part for v in row])

