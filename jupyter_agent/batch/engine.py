"""Running a batch: what was done before is taken from the store, the rest is run.

:func:`execute` opens the batch in the store, keeps the items an earlier run of the same cell
finished (and the asks still waiting, refreshed from their runs), fails the rows that cannot
run, and hands the rest to a :class:`~.coordinator.Coordinator`. Stopping (the card's button,
a limit, a kernel interrupt) starts no new item: in ``finish`` mode the running ones end
normally, in ``abort`` mode they end at their next round. Every item that ends is stored at
once, so a killed kernel loses only the items in flight.
"""

from __future__ import annotations

import secrets
from collections import deque
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from ..base.collector import short_lived
from ..base.errors import ParameterError
from ..base.jsontypes import JSONObject, as_object, float_field, int_field, str_field
from ..tracing import batch_span
from .control import Controller
from .coordinator import Coordinator
from .item import FINISHED, Outcome, error_outcome, one_line
from .progress import Progress
from .spec import BatchSpec, Item, build_items, check_spec, fingerprint, inputs_hash, spec_key

if TYPE_CHECKING:
    from ..session.store import BatchItemRecord, Store

__all__ = ["Controller", "execute", "Execution", "PROGRESS_INTERVAL"]

PROGRESS_INTERVAL = 0.25
"""Seconds between two card updates (and the coordinator's wake-up tick)."""


class Execution:
    """What :func:`execute` produced (the public ``BatchResult`` is built from it)."""

    def __init__(self, spec: BatchSpec, batch_id: str, items: list[Item],
                 outcomes: list[Outcome], progress: Progress) -> None:
        self.spec = spec
        self.batch_id = batch_id
        self.items = items
        self.outcomes = outcomes
        self.progress = progress


def _skipped() -> Outcome:
    out = error_outcome("")
    out["status"], out["error"] = "skipped", None
    return out


def _stored_outcome(store: Store, rec: BatchItemRecord) -> Outcome | None:
    """A stored item to keep: finished, or still waiting on its ask (refreshed from its run,
    which ``%agent resume`` may have finished since). ``None``: run it again."""
    out: Outcome = {"answer": rec.answer, "status": rec.status, "rounds": rec.rounds,
                    "input_tokens": rec.input_tokens, "output_tokens": rec.output_tokens,
                    "cost": rec.cost, "seconds": rec.seconds, "error": rec.error,
                    "run_id": rec.run_id}
    if rec.status in FINISHED:
        return out
    if rec.status != "ask" or not rec.run_id:
        return None
    run = store.get_run(rec.run_id)
    if run is None or run.status == "superseded":
        return None
    if run.status in ("ask", "running"):
        return out
    events = store.get_events(rec.run_id)
    usage = [e for e in events if e.get("type") == "usage"]
    end = next((e for e in reversed(events) if e.get("type") == "run_finished"), {})
    out["status"], out["answer"] = run.status, str_field(end, "answer")
    out["error"] = str_field(end, "error") or None
    out["rounds"] = int_field(end, "rounds") or rec.rounds
    out["input_tokens"] = sum(int_field(e, "input_tokens") for e in usage)
    out["output_tokens"] = sum(int_field(e, "output_tokens") for e in usage)
    out["cost"] = sum(float_field(e, "cost") for e in usage)
    return out


def _check_tools(spec: BatchSpec) -> None:
    """An unknown tool name fails every item alike: say so before anything runs."""
    tools = spec.options.get("tools")
    if spec.kind == "chat" or tools is None:
        return
    import os

    from ..runtime.catalog import resolve_tool_specs
    from ..tools.builtin import Workspace

    resolve_tool_specs([t for t in (tools if isinstance(tools, Iterable) else [tools])
                        if t != "spawn_agent"],
                       workspace=lambda: Workspace(os.getcwd()))


def _unpriced_models(spec: BatchSpec) -> list[str]:
    """The batch's models whose price is unknown (their cost would read 0)."""
    from ..clients.factory import turn_profile

    out = []
    for model in spec.models:
        client = spec.clients.get(model)
        profile = client.profile if client is not None else turn_profile(model)
        if not profile.priced:
            out.append(model)
    return out


def _check_prices(spec: BatchSpec, unpriced: list[str]) -> None:
    """``max_cost`` counts money: with a model whose price is unknown every item would cost
    0 and the limit would never stop anything, so refuse before anything runs."""
    if spec.max_cost is not None and unpriced:
        raise ParameterError(
            f"max_cost: the price of the model {unpriced[0]!r} is unknown, so its cost cannot "
            "be counted: give its profile a price (register_profile(ModelProfile(name=..., "
            "price_tiers=[...]))) or limit the batch with max_items instead.",
            parameters=("max_cost", "max_items"))


def _still_to_run(items: list[Item], stored: dict[tuple[str, str], BatchItemRecord],
                  store: Store | None, outcomes: list[Outcome | None],
                  progress: Progress) -> deque[Item]:
    """The items to run: an item the store has a finished outcome for is reused, one that
    cannot start (a field with no value) fails at once; both fill ``outcomes``."""
    todo: deque[Item] = deque()
    for item in items:
        rec = stored.get((item.key, item.model))
        kept = _stored_outcome(store, rec) if rec is not None and store is not None else None
        if kept is not None:
            outcomes[item.position] = kept
            progress.counts["waiting"] -= 1
            progress.reuse(kept)
        elif item.error:
            failed = outcomes[item.position] = error_outcome(item.error)
            progress.failed_early(failed)
        else:
            todo.append(item)
    return todo


def execute(spec: BatchSpec, *, store: Store | None, controller: Controller | None = None,
            on_progress: Callable[[JSONObject], None] | None = None,
            interval: float = PROGRESS_INTERVAL) -> Execution:
    """Run the batch ``spec`` to the end (or to a stop) and return every item's outcome.

    Raises:
        ParameterError: a bad parameter or template field, before anything runs.
        One of ``FATAL_ERRORS``: a mistake every item would make (no key, unknown tool); the
            items that finished are kept in the store.
    """
    check_spec(spec)
    _check_tools(spec)
    unpriced = _unpriced_models(spec)
    _check_prices(spec, unpriced)
    ctl = controller or Controller()
    items = build_items(spec)
    skey = spec_key(spec)
    batch_id = "batch_" + secrets.token_hex(6)
    if store is not None:
        batch_id = store.open_batch(
            spec_key=skey, inputs_hash=inputs_hash(items), kind=spec.kind,
            template=spec.template,
            options=as_object(fingerprint({k: v for k, v in spec.options.items()
                                           if k != "shell"})) or {},
            models=spec.models,
            n_items=len(items)).batch_id
    progress = Progress(batch_id=batch_id, kind=spec.kind, total=len(items),
                        models=spec.models, rows=len(spec.inputs.rows),
                        concurrency=spec.concurrency, engine=spec.engine,
                        unpriced=unpriced)
    outcomes: list[Outcome | None] = [None] * len(items)
    stored = store.batch_items(skey) if store is not None and not spec.rerun else {}
    todo = _still_to_run(items, stored, store, outcomes, progress)
    # Exported traces: one span for the batch, the items' runs its children (docs/tracing.md).
    span = batch_span(batch_id=batch_id, kind=spec.kind, items=len(todo), models=spec.models)
    try:
        coordinator = Coordinator(spec, store, ctl, progress, outcomes, skey, batch_id, todo)
    except BaseException as exc:
        span.end("error", one_line(exc))
        raise
    fatal: BaseException | None = None
    try:
        with short_lived():  # its objects die young: young collections spaced out
            coordinator.run(on_progress, interval)
    except BaseException as exc:  # raised again below, once the batch's state is saved
        fatal = exc
    done = [o if o is not None else _skipped() for o in outcomes]
    progress.skip_rest()
    status = "error" if fatal is not None else ("stopped" if ctl.stopping.is_set() else "done")
    reason = one_line(fatal) if fatal is not None else ctl.reason
    span.end(status, reason)
    progress.close(status, reason)
    if store is not None:
        store.set_batch_status(batch_id, status)
    if on_progress is not None:
        on_progress(progress.view())
    if fatal is not None:
        raise fatal
    return Execution(spec, batch_id, items, done, progress)
