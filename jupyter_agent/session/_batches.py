"""Batches and their finished items (``jupyter_agent/batch/``), so a re-run resumes.

A batch row records one batch cell: the hash of what it computes (``spec_key``: agent,
template, options), the hash of its inputs, the template and options as JSON, and its status.
An item row is written when an item ends, one small write each, so a killed kernel loses only
the items that were still running. Items are keyed by ``(spec_key, item_key, model)``: the same
prompt under the same options and model is the same work, whichever batch row asked for it.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel

from ..secrets import mask, mask_obj
from ._db import Database, dumps, loads

__all__ = ["BatchesMixin", "BatchRecord", "BatchItemRecord"]

_ITEM_FIELDS = ("status", "run_id", "answer", "rounds", "input_tokens", "output_tokens", "cost",
                "seconds", "error")


class BatchRecord(BaseModel):
    """One stored batch (one batch cell, re-runs included)."""

    batch_id: str
    spec_key: str
    inputs_hash: str
    kind: str
    template: str
    options: dict[str, Any]
    models: list[str]
    n_items: int
    status: str
    """``running`` while it runs, then ``done``, ``stopped`` or ``error``."""
    created: float
    updated: float


class BatchItemRecord(BaseModel):
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


def _batch(row: tuple[Any, ...]) -> BatchRecord:
    (batch_id, spec_key, inputs_hash, kind, template, options, models, n_items, status, created,
     updated) = row
    return BatchRecord(batch_id=batch_id, spec_key=spec_key, inputs_hash=inputs_hash, kind=kind,
                       template=template, options=loads(options) or {},
                       models=loads(models) or [], n_items=n_items, status=status,
                       created=created, updated=updated)


class BatchesMixin:
    """Batch records and their item outcomes (part of ``Store``)."""

    _db: Database

    def open_batch(self, *, spec_key: str, inputs_hash: str, kind: str, template: str,
                   options: dict[str, Any], models: list[str], n_items: int) -> BatchRecord:
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

    def save_batch_item(self, batch_id: str, spec_key: str, item_key: str, model: str,
                        outcome: dict[str, Any]) -> None:
        """Write (or overwrite) one item's outcome: ``status``, ``run_id``, ``answer``,
        ``rounds``, tokens, ``cost``, ``seconds``, ``error`` (secrets masked, ``secrets.mask``)."""
        values = [outcome.get(f) for f in _ITEM_FIELDS]
        values[2] = mask(str(values[2] or ""))
        if values[8] is not None:
            values[8] = mask(str(values[8]))
        with self._db.write() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO batch_items (spec_key, item_key, model, batch_id, "
                f"{', '.join(_ITEM_FIELDS)}, updated) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
                "?, ?, ?)",
                (spec_key, item_key, model, batch_id, *(_num(v) for v in values), time.time()))

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
            rec = BatchItemRecord(**dict(zip(("item_key", "model", "batch_id", *_ITEM_FIELDS,
                                              "updated"), row)))
            out[(rec.item_key, rec.model)] = rec
        return out


def _num(value: Any) -> Any:
    """Plain Python numbers for SQLite (numpy scalars are not bound by sqlite3)."""
    item = getattr(value, "item", None)
    return item() if callable(item) and not isinstance(value, (str, bytes)) else value
