"""The coordinator: hands items to a pool, records what comes back, keeps the card current.

It runs in the caller's thread. Items already finished by an earlier run of the same cell are
taken from the store; the others are started ``concurrency`` at a time. Every item that ends
is written to the store at once (one small write), so a killed kernel loses only the items in
flight. Stopping (the card's button, a limit, a kernel interrupt) starts no new item: in
``finish`` mode the running ones end normally, in ``abort`` mode they end at their next round.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import deque
from typing import Any, Callable

from ..errors import ParameterError
from .item import (
    FATAL_ERRORS,
    FINISHED,
    OUTCOME_FIELDS,
    ItemTask,
    error_outcome,
    one_line,
    store_remote_run,
)
from .progress import Progress
from .spec import BatchSpec, Item, build_items, check_spec, inputs_hash, spec_key

__all__ = ["Controller", "execute", "Execution", "PROGRESS_INTERVAL"]

PROGRESS_INTERVAL = 0.25
"""Seconds between two card updates (and the coordinator's wake-up tick)."""


class Controller:
    """Stop requests for a running batch, from any thread."""

    def __init__(self) -> None:
        self.stopping = threading.Event()
        self.aborting = threading.Event()
        self.reason = ""

    def stop(self, mode: str = "finish", reason: str = "") -> None:
        """``finish``: start nothing new, let running items end; ``abort``: also end the
        running items at their next round."""
        if mode not in ("finish", "abort"):
            raise ParameterError(f"mode must be 'finish' or 'abort', not {mode!r}.")
        if not self.reason or (mode == "abort" and not self.aborting.is_set()):
            self.reason = reason or ("Stopped: running items were aborted." if mode == "abort"
                                     else "Stopped: running items were allowed to finish.")
        self.stopping.set()
        if mode == "abort":
            self.aborting.set()


class Execution:
    """What :func:`execute` produced (the public ``BatchResult`` is built from it)."""

    def __init__(self, spec: BatchSpec, batch_id: str, items: list[Item],
                 outcomes: list[dict[str, Any]], progress: Progress) -> None:
        self.spec = spec
        self.batch_id = batch_id
        self.items = items
        self.outcomes = outcomes
        self.progress = progress


def _skipped() -> dict[str, Any]:
    out = error_outcome("")
    out.update(status="skipped", error=None)
    return out


def _stored_outcome(store: Any, rec: Any) -> dict[str, Any] | None:
    """A stored item to keep: finished, or still waiting on its ask (refreshed from its run,
    which ``%agent resume`` may have finished since). ``None``: run it again."""
    out = {f: getattr(rec, f) for f in OUTCOME_FIELDS}
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
    out.update(status=run.status, answer=end.get("answer") or "", error=end.get("error"),
               rounds=int(end.get("rounds") or rec.rounds),
               input_tokens=sum(int(e.get("input_tokens") or 0) for e in usage),
               output_tokens=sum(int(e.get("output_tokens") or 0) for e in usage),
               cost=sum(float(e.get("cost") or 0.0) for e in usage))
    return out


def _check_tools(spec: BatchSpec) -> None:
    """An unknown tool name fails every item alike: say so before anything runs."""
    tools = spec.options.get("tools")
    if spec.kind == "chat" or tools is None:
        return
    import os

    from ..runtime.catalog import resolve_tool_specs
    from ..tools.builtin import Workspace

    resolve_tool_specs([t for t in tools if t != "spawn_agent"],
                       workspace=lambda: Workspace(os.getcwd()))


def execute(spec: BatchSpec, *, store: Any, controller: Controller | None = None,
            on_progress: Callable[[dict[str, Any]], None] | None = None,
            interval: float = PROGRESS_INTERVAL) -> Execution:
    """Run the batch ``spec`` to the end (or to a stop) and return every item's outcome.

    Raises:
        ParameterError: a bad parameter or template field, before anything runs.
        One of ``FATAL_ERRORS``: a mistake every item would make (no key, unknown tool); the
            items that finished are kept in the store.
    """
    check_spec(spec)
    _check_tools(spec)
    ctl = controller or Controller()
    items = build_items(spec)
    skey = spec_key(spec)
    batch_id = "batch_" + secrets.token_hex(6)
    if store is not None:
        from .spec import fingerprint

        batch_id = store.open_batch(
            spec_key=skey, inputs_hash=inputs_hash(items), kind=spec.kind,
            template=spec.template, options=fingerprint(spec.options), models=spec.models,
            n_items=len(items)).batch_id
    progress = Progress(batch_id=batch_id, kind=spec.kind, total=len(items),
                        models=spec.models, rows=len(spec.inputs.rows),
                        concurrency=spec.concurrency, engine=spec.engine)
    outcomes: list[dict[str, Any] | None] = [None] * len(items)
    stored = store.batch_items(skey) if store is not None and not spec.rerun else {}
    todo: deque[Item] = deque()
    for item in items:
        rec = stored.get((item.key, item.model))
        kept = _stored_outcome(store, rec) if rec is not None else None
        if kept is not None:
            outcomes[item.position] = kept
            progress.counts["waiting"] -= 1
            progress.reuse(kept)
        elif item.error:
            outcomes[item.position] = error_outcome(item.error)
            progress.failed_early(outcomes[item.position])  # type: ignore[arg-type]
        else:
            todo.append(item)
    coordinator = _Coordinator(spec, store, ctl, progress, outcomes, skey, batch_id)
    fatal: BaseException | None = None
    try:
        coordinator.run(todo, on_progress, interval)
    except BaseException as exc:
        fatal = exc
    finally:
        coordinator.pool.close()
    done = [o if o is not None else _skipped() for o in outcomes]
    progress.skip_rest()
    status = "error" if fatal is not None else ("stopped" if ctl.stopping.is_set() else "done")
    reason = one_line(fatal) if fatal is not None else ctl.reason
    progress.close(status, reason)
    if store is not None:
        store.set_batch_status(batch_id, status)
    if on_progress is not None:
        on_progress(progress.view())
    if fatal is not None:
        raise fatal
    return Execution(spec, batch_id, items, done, progress)


class _Coordinator:
    def __init__(self, spec: BatchSpec, store: Any, ctl: Controller, progress: Progress,
                 outcomes: list[dict[str, Any] | None], skey: str, batch_id: str) -> None:
        self.spec, self.store, self.ctl, self.progress = spec, store, ctl, progress
        self.outcomes, self.skey, self.batch_id = outcomes, skey, batch_id
        self.settings: dict[str, Any] | None = None
        if spec.engine == "dask":
            from .pools import DaskPool
            from .ship import client_settings

            self.pool: Any = DaskPool(spec.concurrency)
            self.settings = client_settings()
        else:
            from .pools import ThreadPool

            self.pool = ThreadPool(spec.concurrency, store=store,
                                   is_aborted=ctl.aborting.is_set, on_event=self._on_event)

    def _on_event(self, position: int, event: Any) -> None:
        if event.type == "usage":
            self.progress.live.add(position, event.input_tokens, event.output_tokens, event.cost)

    def _task(self, item: Item) -> ItemTask:
        opts = dict(self.spec.options)
        client = self.spec.clients.get(item.model)
        if client is not None:
            opts["client"] = client
        if self.spec.engine == "dask":
            from .ship import pack_tools

            if self.spec.kind != "chat":
                opts["tools"] = pack_tools(opts.get("tools"), opts.get("agent"))
        return ItemTask(self.spec.kind, item.prompt, item.model, opts, self.spec.auto_answer,
                        self.settings)

    def _limit_reached(self, started: int) -> bool:
        spec, p = self.spec, self.progress
        if spec.max_items is not None and started >= spec.max_items:
            self.ctl.stop("finish", f"Stopped after {spec.max_items} items (the item limit); "
                                    "run again to continue.")
            return True
        if spec.max_cost is not None and p.spent_live() >= spec.max_cost:
            self.ctl.stop("finish", f"Stopped at a cost of {p.spent_live():.4f} (the limit is "
                                    f"{spec.max_cost:g}); run again to continue.")
            return True
        return False

    def _record(self, item: Item, raw: dict[str, Any]) -> None:
        if self.pool.remote:
            store_remote_run(self.store, raw)
        outcome = {f: raw.get(f) for f in OUTCOME_FIELDS}
        self.outcomes[item.position] = outcome
        if self.store is not None:
            self.store.save_batch_item(self.batch_id, self.skey, item.key, item.model, outcome)
        self.progress.finished(item, outcome)

    def run(self, todo: deque[Item], on_progress: Callable[[dict[str, Any]], None] | None,
            interval: float) -> None:
        running: dict[Any, Item] = {}
        started, interrupts, last = 0, 0, 0.0
        fatal: BaseException | None = None
        while True:
            try:
                while (todo and len(running) < self.spec.concurrency
                       and not self.ctl.stopping.is_set() and not self._limit_reached(started)):
                    item = todo.popleft()
                    started += 1
                    running[self.pool.submit(self._task(item), item.position)] = item
                    self.progress.started()
                if not running:
                    break
                if self.ctl.aborting.is_set():
                    self.pool.cancel(list(running))
                for handle in self.pool.wait(list(running), interval):
                    item = running.pop(handle)
                    try:
                        raw = self.pool.result(handle)
                    except (KeyboardInterrupt, SystemExit):
                        raise
                    except BaseException as exc:  # Dask: a cancelled future, a dead worker
                        raw = error_outcome(one_line(exc))
                        if isinstance(exc, FATAL_ERRORS):
                            fatal = fatal or exc
                            self.ctl.stop("abort", one_line(exc))
                        elif self.ctl.aborting.is_set():
                            raw.update(status="aborted", error="Aborted by a stop.")
                    self._record(item, raw)
                now = time.monotonic()
                if on_progress is not None and now - last >= interval:
                    last = now
                    on_progress(self.progress.view())
            except KeyboardInterrupt:
                # A kernel interrupt: first finish what runs, then abort it, then stop waiting.
                interrupts += 1
                self.ctl.stop("finish" if interrupts == 1 else "abort",
                              "Interrupted: running items were "
                              + ("allowed to finish." if interrupts == 1 else "aborted."))
                if interrupts >= 3:
                    for item in running.values():
                        out = error_outcome("Interrupted while running.")
                        out["status"] = "aborted"
                        self._record(item, out)
                    break
        if fatal is not None:
            raise fatal
