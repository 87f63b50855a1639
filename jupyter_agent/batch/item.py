"""One item: one call of ``chat()``, ``toolloop()`` or ``plan()``, and what the batch keeps.

Items run through the public entry points with no session (no history is shared between
items, and an item's ask never supersedes another's) and without streaming (nobody watches an
item's tokens; one JSON body is cheaper). Each item's run is stored under its own ``run_id``,
so ``%agent pending`` / ``%agent resume`` answer an item that asked, and its full card can be
shown later.

Items do not write to the store themselves: the run's events and pending state come back with
the outcome and the batch's writer thread stores them (``Store.save_batch_outcomes``), one
transaction for the items that ended since it last woke. Thirty-two threads each opening write transactions
would queue on SQLite's lock, whose busy handler sleeps in steps of milliseconds; one writer
never waits. The same path serves items run on Dask workers, which have no store.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from ..agents.entries import entry_point
from ..base.errors import ConfigError, MagicUsageError, ParameterError, ToolError

if TYPE_CHECKING:
    from ..agents.run import Run
    from ..session.store import Store

__all__ = ["ItemTask", "run_item", "run_remote", "outcome_of", "error_outcome",
           "FINISHED", "FATAL_ERRORS", "OUTCOME_FIELDS", "KEPT_FIELDS", "one_line"]

FINISHED = frozenset({"done", "max_rounds", "incomplete"})
"""Statuses with an answer: a re-run keeps them (``rerun`` forces)."""
FATAL_ERRORS: tuple[type[Exception], ...] = (ConfigError, ToolError, ParameterError,
                                              MagicUsageError)
"""Mistakes that would fail every item alike (no key, unknown tool): they stop the batch."""
OUTCOME_FIELDS = ("answer", "status", "rounds", "input_tokens", "output_tokens", "cost",
                  "seconds", "error", "run_id")
KEPT_FIELDS = (*OUTCOME_FIELDS, "cached", "saved")
"""What the coordinator keeps of an ended item: its columns, and for the card its rounds
answered from the answer cache and what they saved."""


@dataclass
class ItemTask:
    """What one worker needs to run one item (picklable: it travels to Dask workers)."""

    kind: str
    prompt: str
    model: str
    options: dict[str, Any] = field(default_factory=dict)
    auto_answer: str | None = None
    settings: dict[str, Any] | None = None
    """Remote only: the kernel's non-secret client settings (base URL, retries)."""
    trace: dict[str, Any] | None = None
    """Remote only: where its spans go and under which span (``tracing.remote_target``)."""


def one_line(exc: BaseException) -> str:
    """``Type: first line of the message`` (an item's error column)."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300]}" if text else type(exc).__name__


def error_outcome(message: str, seconds: float = 0.0, run_id: str | None = None) -> dict[str, Any]:
    """The outcome of an item that failed before or outside its run."""
    return {"answer": "", "status": "error", "rounds": 0, "input_tokens": 0,
            "output_tokens": 0, "cost": 0.0, "seconds": round(seconds, 3), "error": message,
            "run_id": run_id}


def outcome_of(run: Run) -> dict[str, Any]:
    """The results columns of a finished (or suspended) run (and, for the card, its rounds
    answered from the answer cache and what they saved)."""
    footer = run.view.get("footer") or {}
    return {"answer": run.answer or "", "status": run.status, "rounds": run.rounds,
            "input_tokens": run.input_tokens, "output_tokens": run.output_tokens,
            "cost": float(run.cost), "seconds": round(float(run.seconds), 3),
            "error": run.error, "run_id": run.run_id,
            "cached": int(footer.get("cached") or 0), "saved": float(footer.get("saved") or 0.0)}


def run_item(task: ItemTask, *, store: Store | None, is_aborted: Callable[[], bool] | None = None,
             on_event: Callable[[Any], None] | None = None,
             detail: bool = False) -> dict[str, Any]:
    """Run one item and return its outcome (never raises for a failure of this item).

    Args:
        task: The item.
        store: The session store its run is saved in (``None``: not saved).
        is_aborted: Polled by the loop: ``True`` aborts the run (the batch's stop).
        on_event: Called with each event of the run (live usage for the card).
        detail: Also return the run's ``events`` (JSON) and ``pending`` state (remote runs).

    Raises:
        One of :data:`FATAL_ERRORS`: a mistake every item would make (the batch stops).
    """
    box: dict[str, Any] = {}

    def listen(event: Any) -> None:
        if event.type == "run_started":
            box["run_id"] = event.run_id
        if on_event is not None:
            on_event(event)

    opts = dict(task.options)
    listeners = [listen, *(opts.pop("listeners", None) or [])]
    opts.update(model=task.model, session=None, history=0, stream=False, store=store,
                is_aborted=is_aborted, listeners=listeners)
    if task.kind == "plan" and task.auto_answer:
        opts["auto_answer"] = task.auto_answer
    start = time.perf_counter()
    try:
        run = entry_point(task.kind)(task.prompt, **opts)
    except FATAL_ERRORS:
        raise
    except Exception as exc:  # this item's problem (no recording, a bug in a hook...)
        return error_outcome(one_line(exc), time.perf_counter() - start, box.get("run_id"))
    out = outcome_of(run)
    if detail:
        from ..base.events import merge_deltas

        pending = run.pending.to_json() if run.pending is not None else None  # PendingRun
        out.update(kind=task.kind, events=merge_deltas(run.events_json()), pending=pending)
    return out


def _apply_settings(settings: dict[str, Any] | None) -> None:
    """Take the kernel's client settings on a worker (once; a change clears cached clients)."""
    if not settings:
        return
    from ..base import config
    from ..clients import clear_client_cache

    changed = False
    for name, value in settings.items():
        if getattr(config.settings, name, None) != value:
            setattr(config.settings, name, value)
            changed = True
    if changed:
        clear_client_cache()


def run_remote(task: ItemTask, pack: Any = None, *,
               is_aborted: Callable[[], bool] | None = None) -> dict[str, Any]:
    """Run one item on a Dask worker (no store; ``batch/lanes.py``) and return the outcome
    with its run's events and pending state. ``pack`` (a :class:`~.ship.ToolPack`, held once
    by the cluster) gives the tools, built once per worker. A fatal mistake comes back as
    ``{"fatal": ..., "error": ...}``: exceptions with custom constructors do not survive
    pickling whole."""
    from .ship import built_tools, unpack_tools

    _apply_settings(task.settings)
    opts = dict(task.options)
    if pack is not None:
        opts["tools"] = built_tools(pack)
    elif "tools" in opts:
        opts["tools"] = unpack_tools(opts["tools"])
    local = ItemTask(task.kind, task.prompt, task.model, opts, task.auto_answer)
    from ..tracing import remote_scope

    try:
        with remote_scope(task.trace):  # the kernel's batch span, continued here
            return run_item(local, store=None, is_aborted=is_aborted, detail=True)
    except FATAL_ERRORS as exc:
        return {"fatal": type(exc).__name__, "error": str(exc)}
