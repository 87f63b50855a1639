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
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from typing_extensions import NotRequired, TypedDict, final

from ..agents.entries import entry_point
from ..base.errors import ConfigError, MagicUsageError, ParameterError, ToolError
from ..base.jsontypes import JSONObject, float_field, int_field, object_field

if TYPE_CHECKING:
    from ..agents.run import Run
    from ..base.events import BaseEvent
    from ..session.store import Store
    from .ship import ToolPack

__all__ = ["ItemTask", "Outcome", "FatalReport", "ClientSettings", "run_item", "run_remote",
           "outcome_of", "error_outcome", "kept", "FINISHED", "FATAL_ERRORS", "OUTCOME_FIELDS",
           "one_line"]

FINISHED = frozenset({"done", "max_rounds", "incomplete"})
"""Statuses with an answer: a re-run keeps them (``rerun`` forces)."""
FATAL_ERRORS: tuple[type[Exception], ...] = (ConfigError, ToolError, ParameterError,
                                              MagicUsageError)
"""Mistakes that would fail every item alike (no key, unknown tool): they stop the batch."""
OUTCOME_FIELDS = ("answer", "status", "rounds", "input_tokens", "output_tokens", "cost",
                  "seconds", "error", "run_id")
"""An item's results columns."""


@final
class Outcome(TypedDict):
    """What one item ended with: its results columns (:data:`OUTCOME_FIELDS`), and what the
    card and the store need besides."""

    answer: str
    status: str
    """A run status (``done``, ``ask``, ``error``...), or ``skipped`` (never started)."""
    rounds: int
    input_tokens: int
    output_tokens: int
    cost: float
    seconds: float
    error: str | None
    run_id: str | None
    cached: NotRequired[int]
    """Rounds answered from the answer cache."""
    saved: NotRequired[float]
    """What those rounds would have cost."""
    kind: NotRequired[str]
    """Remote and thread runs (``detail``): the entry point, for the stored run."""
    events: NotRequired[list[JSONObject]]
    """``detail``: the run's events (JSON, deltas merged), stored by the batch's writer."""
    pending: NotRequired[JSONObject | None]
    """``detail``: the suspended state of a run that asked."""
    held: NotRequired[bool]
    """Dask: started on a worker that died, offered a tool with side effects: not run again."""


@final
class FatalReport(TypedDict):
    """A fatal mistake made on a Dask worker, as it travels back (``lanes._value`` rebuilds
    the exception: one with a custom constructor does not survive pickling whole)."""

    fatal: str
    """The exception's class name (one of :data:`FATAL_ERRORS`)."""
    error: str


class ClientSettings(TypedDict):
    """The kernel's client settings a Dask worker takes (``ship.client_settings``)."""

    base_url: str | None
    max_retries: int
    retry_base_delay: float
    retry_max_delay: float
    timeout: float


@dataclass
class ItemTask:
    """What one worker needs to run one item (picklable: it travels to Dask workers)."""

    kind: str
    prompt: str
    model: str
    options: dict[str, object] = field(default_factory=dict)
    """Keyword options of the entry point (``BatchSpec.options``, and the item's client)."""
    auto_answer: str | None = None
    settings: ClientSettings | None = None
    """Remote only: the kernel's non-secret client settings (base URL, retries)."""
    trace: JSONObject | None = None
    """Remote only: where its spans go and under which span (``tracing.remote_target``)."""


def one_line(exc: BaseException) -> str:
    """``Type: first line of the message`` (an item's error column)."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300]}" if text else type(exc).__name__


def error_outcome(message: str, seconds: float = 0.0, run_id: str | None = None) -> Outcome:
    """The outcome of an item that failed before or outside its run."""
    return {"answer": "", "status": "error", "rounds": 0, "input_tokens": 0,
            "output_tokens": 0, "cost": 0.0, "seconds": round(seconds, 3), "error": message,
            "run_id": run_id}


def outcome_of(run: Run) -> Outcome:
    """The results columns of a finished (or suspended) run (and, for the card, its rounds
    answered from the answer cache and what they saved)."""
    footer = object_field(run.view, "footer")
    return {"answer": run.answer or "", "status": run.status, "rounds": run.rounds,
            "input_tokens": run.input_tokens, "output_tokens": run.output_tokens,
            "cost": float(run.cost), "seconds": round(float(run.seconds), 3),
            "error": run.error, "run_id": run.run_id,
            "cached": int_field(footer, "cached"), "saved": float_field(footer, "saved")}


def kept(outcome: Outcome) -> Outcome:
    """What the coordinator keeps of an ended item: its columns, and for the card its rounds
    answered from the answer cache and what they saved (not its events nor its pending
    state, which the store has)."""
    out: Outcome = {"answer": outcome["answer"], "status": outcome["status"],
                    "rounds": outcome["rounds"], "input_tokens": outcome["input_tokens"],
                    "output_tokens": outcome["output_tokens"], "cost": outcome["cost"],
                    "seconds": outcome["seconds"], "error": outcome["error"],
                    "run_id": outcome["run_id"]}
    if "cached" in outcome:
        out["cached"] = outcome["cached"]
    if "saved" in outcome:
        out["saved"] = outcome["saved"]
    return out


def run_item(task: ItemTask, *, store: Store | None, is_aborted: Callable[[], bool] | None = None,
             on_event: Callable[[BaseEvent], None] | None = None,
             detail: bool = False) -> Outcome:
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
    from ..base.events import RunStarted  # (loaded with the agents: entry_point)

    box: dict[str, str] = {}

    def listen(event: BaseEvent) -> None:
        if isinstance(event, RunStarted):
            box["run_id"] = event.run_id
        if on_event is not None:
            on_event(event)

    opts = dict(task.options)
    theirs = opts.pop("listeners", None) or []
    if not isinstance(theirs, Iterable):  # every item would fail alike: one line, the batch stops
        raise ParameterError(f"listeners must be a list of functions, not a "
                             f"{type(theirs).__name__}.", parameters=("listeners",))
    listeners = [listen, *theirs]
    opts.update(model=task.model, session=None, history=0, stream=False, store=store,
                is_aborted=is_aborted, listeners=listeners)
    if task.kind == "plan" and task.auto_answer:
        opts["auto_answer"] = task.auto_answer
    start = time.perf_counter()
    try:
        run: Run = entry_point(task.kind)(task.prompt, **opts)
    except FATAL_ERRORS:
        raise
    except Exception as exc:  # this item's problem (no recording, a bug in a hook...)
        return error_outcome(one_line(exc), time.perf_counter() - start, box.get("run_id"))
    out = outcome_of(run)
    if detail:
        from ..base.events import merge_deltas

        pending = run.pending.to_json() if run.pending is not None else None  # PendingRun
        out["kind"] = task.kind
        out["events"] = merge_deltas(run.events_json())
        out["pending"] = pending
    return out


def _apply_settings(settings: ClientSettings | None) -> None:
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


def run_remote(task: ItemTask, pack: ToolPack | None = None, *,
               is_aborted: Callable[[], bool] | None = None) -> Outcome | FatalReport:
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
    elif isinstance(packed := opts.get("tools"), list):
        opts["tools"] = unpack_tools(packed)
    local = ItemTask(task.kind, task.prompt, task.model, opts, task.auto_answer)
    from ..tracing import remote_scope

    try:
        with remote_scope(task.trace):  # the kernel's batch span, continued here
            return run_item(local, store=None, is_aborted=is_aborted, detail=True)
    except FATAL_ERRORS as exc:
        return {"fatal": type(exc).__name__, "error": str(exc)}
