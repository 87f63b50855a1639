"""The progress of a batch as one small dict: what the card draws, live and at the end.

Updated by the coordinating thread only (items report to it); the live usage of items still
running is added by their own threads through :class:`LiveUsage`, under a lock.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

from typing_extensions import TypedDict

from ..base.jsontypes import JSONObject
from .item import FINISHED, Outcome

if TYPE_CHECKING:
    from .spec import Item

__all__ = ["Progress", "LiveUsage", "LATEST", "BATCH_FORMAT_VERSION", "preview"]

LATEST = 5
"""Finished items shown under the counts."""
BATCH_FORMAT_VERSION = 1
_PREVIEW = 120
MIN_RATE_SECONDS = 1.0
"""A batch younger than this shows no items/min (rate 0: the rate would be noise)."""


class _Latest(TypedDict):
    """A finished item under the card's counts (its texts masked and cut when shown)."""

    row: int
    model: str
    status: str
    answer: str
    error: str
    seconds: float
    run_id: str | None


class LiveUsage:
    """Tokens and cost of the items still running (their ``usage`` events), by position."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_item: dict[int, list[float]] = {}

    def add(self, position: int, input_tokens: int, output_tokens: int, cost: float) -> None:
        """One model call of a running item."""
        with self._lock:
            u = self._by_item.setdefault(position, [0, 0, 0.0])
            u[0] += input_tokens
            u[1] += output_tokens
            u[2] += cost

    def drop(self, position: int) -> None:
        """The item ended: its final totals are counted instead."""
        with self._lock:
            self._by_item.pop(position, None)

    def totals(self) -> tuple[int, int, float]:
        """Input tokens, output tokens and cost of everything still running."""
        with self._lock:
            rows = list(self._by_item.values())
        return (int(sum(r[0] for r in rows)), int(sum(r[1] for r in rows)),
                float(sum(r[2] for r in rows)))


def _bucket(status: str) -> str:
    if status in FINISHED:
        return "done"
    if status == "ask":
        return "ask"
    if status == "skipped":
        return "skipped"
    return "failed"


class Progress:
    """Counts, usage, speed and the latest results of one batch."""

    def __init__(self, *, batch_id: str, kind: str, total: int, models: list[str],
                 rows: int, concurrency: int, engine: str,
                 unpriced: list[str] | None = None) -> None:
        self.batch_id = batch_id
        self.unpriced = list(unpriced or [])
        """Models without a known price: the card's cost reads "unknown", never 0."""
        self.kind = kind
        self.total = total
        self.models = models
        self.rows = rows
        self.concurrency = concurrency
        self.engine = engine
        self.counts = {"done": 0, "failed": 0, "running": 0, "waiting": total, "ask": 0,
                       "skipped": 0}
        self.reused = 0
        self.lost_rerun = 0
        """Dask: items run again after the worker running them died."""
        self.lost_held = 0
        """Dask: items offered a tool with side effects whose worker died: not run again."""
        self.finished_now = 0
        self.tokens = [0, 0]
        self.cost = 0.0
        self.cached = 0
        """Rounds answered from the answer cache (no call made)."""
        self.saved = 0.0
        """What those rounds would have cost."""
        self.spent = 0.0
        """Cost of the items run this time (``max_cost`` compares it)."""
        self.latest: list[_Latest] = []
        self.status = "running"
        self.stop_reason = ""
        self.live = LiveUsage()
        self._t0 = time.monotonic()
        self.elapsed = 0.0

    # ------------------------------------------------------------------ updates
    def reuse(self, outcome: Outcome) -> None:
        """An item finished by an earlier run of the cell."""
        self.reused += 1
        self._count(outcome)

    def started(self) -> None:
        """An item was handed to a worker."""
        self.counts["waiting"] -= 1
        self.counts["running"] += 1

    def finished(self, item: Item, outcome: Outcome) -> None:
        """An item ended this time (any status)."""
        self.counts["running"] -= 1
        self.finished_now += 1
        self.live.drop(item.position)
        self.spent += float(outcome["cost"] or 0.0)
        self._count(outcome)
        # Masked and cut when shown (view), a few times a second, not once per item; masked
        # before it is cut, so no part of a secret can survive the cut.
        self.latest.append({"row": item.row + 1, "model": item.model,
                            "status": outcome["status"],
                            "answer": str(outcome["answer"] or ""),
                            "error": str(outcome["error"] or ""),
                            "seconds": outcome["seconds"] or 0.0,
                            "run_id": outcome["run_id"]})
        del self.latest[:-LATEST]

    def failed_early(self, outcome: Outcome) -> None:
        """An item that could not start (a field with no value): failed, never running."""
        self.counts["waiting"] -= 1
        self._count(outcome)

    def skip_rest(self) -> None:
        """The batch stopped: items never started are ``skipped``."""
        self.counts["skipped"] += self.counts["waiting"]
        self.counts["waiting"] = 0

    def _count(self, outcome: Outcome) -> None:
        if outcome["status"] != "skipped":
            self.counts[_bucket(outcome["status"])] += 1
        self.tokens[0] += int(outcome["input_tokens"] or 0)
        self.tokens[1] += int(outcome["output_tokens"] or 0)
        self.cost += float(outcome["cost"] or 0.0)
        self.cached += int(outcome.get("cached") or 0)
        self.saved += float(outcome.get("saved") or 0.0)

    # ------------------------------------------------------------------ reading
    def spent_live(self) -> float:
        """Cost of this run so far, items still running included."""
        return self.spent + self.live.totals()[2]

    def view(self) -> JSONObject:
        """The card's state (JSON)."""
        if self.status == "running":
            self.elapsed = time.monotonic() - self._t0
        live_in, live_out, live_cost = self.live.totals()
        minutes = self.elapsed / 60
        # No rate (0: the card shows none) before a second has passed or an item finished
        # here: a rate over a near-zero time (a replay) read "29038.0 items/min".
        rate = (self.finished_now / minutes
                if self.elapsed >= MIN_RATE_SECONDS and self.finished_now else 0.0)
        left = self.counts["waiting"] + self.counts["running"]
        eta = left / rate * 60 if rate > 0 and self.status == "running" else None
        return {"version": BATCH_FORMAT_VERSION, "batch_id": self.batch_id, "kind": self.kind,
                "status": self.status, "stop_reason": self.stop_reason, "total": self.total,
                "rows": self.rows, "models": list(self.models), "engine": self.engine,
                "concurrency": self.concurrency, "counts": dict(self.counts),
                "reused": self.reused, "lost_rerun": self.lost_rerun,
                "lost_held": self.lost_held, "input_tokens": self.tokens[0] + live_in,
                "output_tokens": self.tokens[1] + live_out,
                "cost": None if self.unpriced else self.cost + live_cost,
                "cached": self.cached, "saved": None if self.unpriced else self.saved,
                "elapsed": round(self.elapsed, 3), "rate": round(rate, 2),
                "eta": None if eta is None else round(eta, 1),
                "latest": [_shown(x) for x in self.latest]}

    def close(self, status: str, reason: str = "") -> None:
        """The batch ended: ``done``, ``stopped`` or ``error`` (``reason`` says why)."""
        self.elapsed = time.monotonic() - self._t0
        self.status = status
        self.stop_reason = reason


def _shown(x: _Latest) -> JSONObject:
    """A latest item as the card shows it: its texts on one line, cut, masked."""
    return {"row": x["row"], "model": x["model"], "status": x["status"],
            "answer": preview(x["answer"]), "error": preview(x["error"]),
            "seconds": x["seconds"], "run_id": x["run_id"]}


def preview(text: object) -> str:
    """One line of model text for the card: cut short, secrets masked."""
    from ..base.secrets import mask

    line: str = mask(" ".join(str(text or "").split()))  # the card is an output: never a key
    return line if len(line) <= _PREVIEW else line[:_PREVIEW - 1] + "…"
