"""Handing items out and taking outcomes in, for the thread and the Dask engines.

Threads *pull*: each worker takes its next item as soon as it is free (:meth:`next_item`
checks the stop and the limits under a lock) and hands the outcome of the one it ran to the
coordinating thread, which records it; no store write is on an item's path. Dask is *pushed*:
the coordinator keeps ``concurrency`` futures on the cluster, records each one that ends and
submits one more.

One writer thread stores what ended: the outcomes handed over since it last woke are one
transaction (their runs and their rows in the batch; see ``item.py``). Writes from the workers
themselves cost a batch at concurrency 32 several percent of its wall time: each worker has its
own SQLite connection, a BEGIN that finds another open waits in SQLite's busy handler (sleeps of
up to 100 ms; measured p95 38 ms), and every statement hands the interpreter lock back and waits
to get it again among 32 busy threads. The writer is not the coordinating thread: that one
draws the card (``on_progress``, which can be slow) and takes kernel interrupts, and neither
may hold back a write.

A killed kernel loses only the items not yet stored: those in flight, and those that ended
less than :data:`MAX_UNSTORED` seconds ago. The writer wakes as soon as an item is handed
over and stores it with those handed over in the next :data:`GATHER` seconds (one
transaction for several items); when it falls behind anyway (a loaded machine), the workers
take no new item until the oldest outcome handed over is stored, so the window between
"answered" and "stored" is bounded in time, not only in count.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..base.jsontypes import JSONObject
from .control import Controller
from .item import (
    FATAL_ERRORS,
    ClientSettings,
    ItemTask,
    Outcome,
    error_outcome,
    kept,
    one_line,
)
from .progress import Progress
from .spec import BatchSpec, Item

if TYPE_CHECKING:
    from ..base.events import BaseEvent
    from ..session.store import Store
    from .lanes import LanePool
    from .ship import ToolPack

__all__ = ["Coordinator", "MAX_UNSTORED"]

MAX_UNSTORED = 0.1
"""Seconds an ended item may wait to be stored before the workers wait for the store."""
GATHER = 0.02
"""Seconds the writer waits after an item is handed over before it stores what was handed
over by then: at 64 items in flight a transaction per item (most held one or two) cost the
interpreter about a millisecond per item; well under ``MAX_UNSTORED``."""

Progressed = Callable[[JSONObject], None] | None


class Coordinator:
    """One batch run: its pending items, the running ones and the outcomes."""

    def __init__(self, spec: BatchSpec, store: Store | None, ctl: Controller, progress: Progress,
                 outcomes: list[Outcome | None], skey: str, batch_id: str,
                 todo: deque[Item]) -> None:
        self.spec, self.store, self.ctl, self.progress = spec, store, ctl, progress
        self.outcomes, self.skey, self.batch_id, self.todo = outcomes, skey, batch_id, todo
        self.lock = threading.Lock()  # todo, running, started, handed and the progress counts
        self.caught_up = threading.Condition(self.lock)  # the outcomes handed over are stored
        self.exits = threading.Condition(self.lock)  # a worker thread ended
        self.handed: deque[float] = deque()  # when each outcome not yet stored was handed over
        # What the workers hand over to the writer: (item, outcome) when an item ended, None
        # to stop the writer. ``exited`` counts the worker threads that ended.
        self.ended: queue.SimpleQueue[tuple[Item, Outcome] | None] = queue.SimpleQueue()
        self.exited = 0
        self.write_error: BaseException | None = None
        self.stopping_writer = threading.Event()
        self.writer = threading.Thread(target=self._write_loop, daemon=True,
                                       name="jupyter-agent-store-writer")
        self.running: dict[int, Item] = {}
        self.started = 0
        self.fatal: BaseException | None = None
        self.settings: ClientSettings | None = None
        self.trace: JSONObject | None = None
        self.options = spec.options
        self.pack: ToolPack | None = None
        if spec.engine == "dask":
            from ..tracing import remote_target
            from .ship import check_shippable, client_settings

            self.settings = client_settings()
            self.pack = self._pack_tools()
            check_shippable(self.pack, {**{k: v for k, v in spec.options.items()
                                           if k != "tools"},
                                        **{f"client for {m}": c
                                           for m, c in spec.clients.items()}})
            self.trace = remote_target()  # the batch's span: its items hang under it
        else:
            self.options = _with_tool_objects(spec.options)

    # ---------------------------------------------------------------------- handing out
    def next_item(self, count_start: bool = True) -> tuple[Item, ItemTask] | None:
        """The next item to run, or ``None`` (none left, stopping, or a limit reached).
        ``count_start=False`` (Dask): the card counts it running once a worker starts it."""
        with self.lock:
            self._wait_for_store()
            if not self.todo or self.ctl.stopping.is_set() or self._limit_reached():
                return None
            item = self.todo.popleft()
            self.started += 1
            self.running[item.position] = item
            if count_start:
                self.progress.started()
        return item, self._task(item)

    def unstart(self, item: Item) -> None:
        """Dask: an item handed out but not started before the batch stopped (not run)."""
        with self.lock:
            if self.running.pop(item.position, None) is not None:
                self.started -= 1

    def _wait_for_store(self) -> None:
        """Backpressure (under ``self.lock``): while the oldest outcome handed over waited
        longer than ``MAX_UNSTORED`` to be stored, start nothing new (the coordinating thread
        is behind: more items in flight would only widen what a kill loses)."""
        while (self.handed and time.monotonic() - self.handed[0] > MAX_UNSTORED
               and not self.ctl.stopping.is_set()):
            self.caught_up.wait(0.05)

    def _task(self, item: Item) -> ItemTask:
        opts = dict(self.options)
        client = self.spec.clients.get(item.model)
        if client is not None:
            opts["client"] = client
        if self.pack is not None:
            opts.pop("tools", None)  # the cluster holds them once (``self.pack``)
        return ItemTask(self.spec.kind, item.prompt, item.model, opts, self.spec.auto_answer,
                        self.settings, self.trace)

    def _pack_tools(self) -> ToolPack | None:
        """Dask: the batch's tools packed once, to be sent to the cluster once."""
        if self.spec.kind == "chat":
            return None
        import secrets

        from .ship import ShippedTool, ToolPack, pack_tools

        tools = pack_tools(self.options.get("tools"), self.options.get("agent"))
        held = [t.name for t in tools if isinstance(t, ShippedTool) and t.side_effects]
        return ToolPack(secrets.token_hex(8), tools, held)

    def _limit_reached(self) -> bool:
        spec, p = self.spec, self.progress
        if spec.max_items is not None and self.started >= spec.max_items:
            self.ctl.stop("finish", f"Stopped after {spec.max_items} items (the item limit); "
                                    "run again to continue.")
            return True
        if spec.max_cost is not None and p.spent_live() >= spec.max_cost:
            self.ctl.stop("finish", f"Stopped at a cost of {p.spent_live():.4f} (the limit is "
                                    f"{spec.max_cost:g}); run again to continue.")
            return True
        return False

    def on_event(self, position: int, event: BaseEvent) -> None:
        """An event of a running item (any thread): its usage counts at once."""
        from ..base.events import UsageRecorded  # (loaded: the item's run made the event)

        if isinstance(event, UsageRecorded):
            self.progress.live.add(position, event.input_tokens, event.output_tokens, event.cost)

    # ---------------------------------------------------------------------- taking in
    def outcome(self, value: Outcome | BaseException) -> Outcome:
        """An item's outcome from what its worker returned (an exception included)."""
        if not isinstance(value, BaseException):
            return value  # what ``run_item`` returns
        raw = error_outcome(one_line(value))
        if isinstance(value, FATAL_ERRORS):
            self.fatal = self.fatal or value
            self.ctl.stop("abort", one_line(value))
        elif self.ctl.aborting.is_set():  # Dask: a future cancelled by the stop
            raw["status"], raw["error"] = "aborted", "Aborted by a stop."
        return raw

    def record(self, item: Item, raw: Outcome) -> None:
        """Store an ended item (its run and its row) and count it (the coordinating thread)."""
        self.record_all([(item, raw)])

    def record_all(self, ended: list[tuple[Item, Outcome]]) -> None:
        """Store ended items in one transaction, then count those not counted yet (a worker
        counts its items when it hands them over). An item already recorded (e.g. given up on
        after interrupts) is not recorded twice; an interrupt during the write stores none of
        them, and they stay in ``unrecorded`` for the next try (both writes replace what is
        there, so a repeated write is harmless)."""
        with self.lock:
            fresh = [(item, raw) for item, raw in ended if item.position in self.running]
        if not fresh:
            return
        if self.store is not None:  # one transaction, a few statements (not per item)
            self.store.save_batch_outcomes(self.batch_id, self.skey,
                                           [(item.key, item.model, raw) for item, raw in fresh])
        with self.lock:
            for item, raw in fresh:
                if (self.running.pop(item.position, None) is not None
                        and self.outcomes[item.position] is None):  # (done() counts most)
                    self._count(item, kept(raw))

    def _count(self, item: Item, outcome: Outcome) -> None:
        """Count an ended item once (under ``self.lock``)."""
        if self.outcomes[item.position] is None:
            self.outcomes[item.position] = outcome
            self.progress.finished(item, outcome)

    def done(self, item: Item, value: Outcome | BaseException) -> None:
        """A worker thread ended an item: count it at once (the card and the cost limit see
        it), and hand it to the coordinating thread to store."""
        raw = self.outcome(value)
        with self.lock:
            self._count(item, kept(raw))
            if raw.get("held"):  # Dask: not run again after its worker was lost
                self.progress.lost_held += 1
            self.handed.append(time.monotonic())
        self.ended.put((item, raw))

    def _write_loop(self) -> None:
        """The writer thread: store every outcome handed over by now in one transaction, as
        soon as one is; end at ``None``. A failed write is kept for the coordinating thread to
        raise (the outcomes stay counted on the card; they are asked again on a re-run)."""
        stop = False
        while not stop:
            taken: list[tuple[Item, Outcome]] = []
            got = self.ended.get()
            if got is not None:  # the items ending meanwhile join this transaction
                self.stopping_writer.wait(GATHER)  # (the end of the batch waits for none)
            try:
                while True:
                    if got is None:
                        stop = True
                    else:
                        taken.append(got)
                    got = self.ended.get_nowait()
            except queue.Empty:
                pass
            try:
                if taken and self.write_error is None:
                    self.record_all(taken)
            except BaseException as exc:  # noqa: BLE001 - raised by the coordinating thread
                self.write_error = exc
                self.ctl.stop("abort", f"The store refused a write: {one_line(exc)}")
            with self.lock:
                for _ in range(min(len(taken), len(self.handed))):
                    self.handed.popleft()
                self.caught_up.notify_all()

    def _exit(self) -> None:
        """A worker thread ended."""
        with self.lock:
            self.exited += 1
            self.exits.notify_all()

    def view(self) -> JSONObject:
        """The card's state now."""
        with self.lock:
            return self.progress.view()

    def _interrupted(self, count: int) -> bool:
        """A kernel interrupt: the first lets running items finish, the second aborts them,
        the third stops waiting for them (they are recorded as aborted). True: stop now."""
        self.ctl.stop("finish" if count == 1 else "abort",
                      "Interrupted, stopped after this step: running items were allowed to "
                      "finish." if count == 1 else
                      "Interrupted, stopped now: running items were aborted.")
        if count < 3:
            return False
        self._stop_writer()  # the items that did end keep their outcomes
        for item in list(self.running.values()):
            out = error_outcome("Interrupted while running.")
            out["status"] = "aborted"
            self.record(item, out)
        return True

    # ---------------------------------------------------------------------- the loops
    def run(self, on_progress: Progressed, interval: float) -> None:
        """Run every item (to the end, a stop or a limit)."""
        self.writer.start()
        try:
            if self.spec.engine == "dask":
                self._run_dask(on_progress, interval)
            else:
                self._run_threads(on_progress, interval)
        finally:
            self._stop_writer()
        if self.fatal is not None:
            raise self.fatal
        if self.write_error is not None:
            raise self.write_error

    def _stop_writer(self) -> None:
        """Store what was handed over and end the writer (again: nothing happens)."""
        if self.writer.is_alive():
            self.ended.put(None)
            self.stopping_writer.set()
            self.writer.join()

    def _run_threads(self, on_progress: Progressed, interval: float) -> None:
        from .pools import ThreadPool

        pool = ThreadPool(self.spec.concurrency, is_aborted=self.ctl.aborting.is_set,
                          on_event=self.on_event)
        self.ctl.on_abort(pool.cut)
        workers = min(self.spec.concurrency, len(self.todo))
        pool.start(self.next_item, self.done, workers, on_exit=self._exit)
        interrupts, last = 0, 0.0
        while True:  # a worker hands over its last outcome before it says it ended
            try:
                with self.lock:
                    if self.exited >= workers:
                        break
                    self.exits.wait(interval)  # not woken by each store write
                last = self._push(on_progress, last, interval)
            except KeyboardInterrupt:
                interrupts += 1
                if self._interrupted(interrupts):
                    break

    def _run_dask(self, on_progress: Progressed, interval: float) -> None:
        from .lanes import LanePool

        pool = LanePool(self.spec.concurrency, self.pack)
        interrupts, last, checked = 0, 0.0, time.monotonic()
        try:
            while True:
                try:
                    if self.ctl.stopping.is_set():
                        for item in pool.stop("abort" if self.ctl.aborting.is_set()
                                              else "finish"):
                            self.unstart(item)
                    self._feed(pool)
                    if not pool.outstanding():
                        break
                    for kind, item, value in pool.take(min(interval, 0.05)):
                        if kind == "start":
                            with self.lock:
                                self.progress.started()
                        elif kind == "unstarted":
                            self.unstart(item)
                        elif value is not None:  # "end": what the item ended with
                            self.done(item, value)
                    if time.monotonic() - checked >= interval:
                        self._check_lanes(pool)
                        checked = time.monotonic()
                    last = self._push(on_progress, last, interval)
                except KeyboardInterrupt:
                    interrupts += 1
                    if self._interrupted(interrupts):
                        break
        finally:
            pool.close()

    def _feed(self, pool: LanePool) -> None:
        """Fill the lanes' room (items wait on the workers a little ahead: no round trip to
        this kernel between two items)."""
        items: list[tuple[Item, ItemTask]] = []
        for _ in range(pool.room()):
            nxt = self.next_item(count_start=False)
            if nxt is None:
                break
            items.append(nxt)
        pool.send(items)

    def _check_lanes(self, pool: LanePool) -> None:
        """Lanes lost with their worker (their items sent again and counted, or held) or
        failed (their items end with its exception); at most once per card update."""
        from .lanes import held_outcome

        lost, failed, error = pool.check_lanes()
        if error is not None:  # a lane itself failed (not its worker): no item would run
            self.fatal = self.fatal or error
            self.ctl.stop("abort", f"A Dask lane failed: {one_line(error)}")
        if lost.rerun:
            with self.lock:
                self.progress.lost_rerun += lost.rerun
        for item in lost.unstarted:
            self.unstart(item)
        for item in lost.held:
            self.done(item, held_outcome(self.pack.side_effects if self.pack else []))
        for item, exc in failed:
            self.done(item, exc)

    def _push(self, on_progress: Progressed, last: float, interval: float) -> float:
        now = time.monotonic()
        if on_progress is None or now - last < interval:
            return last
        on_progress(self.view())
        return now


def _with_tool_objects(options: dict[str, object]) -> dict[str, object]:
    """``options`` with each plain function in ``tools`` made a ``Tool`` once, for every item.

    An item's turn would otherwise build the function's argument model and JSON schema again
    (pydantic ``create_model``: about a millisecond of interpreter time per tool per item,
    which 32 threads share). Names and ``Tool`` objects are kept as they are.
    """
    tools = options.get("tools")
    if not isinstance(tools, (list, tuple)) or not any(
            callable(t) and not isinstance(t, str) for t in tools):
        return options
    from ..tools.registry import Tool

    made: list[object] = [t if isinstance(t, (str, Tool)) or not callable(t) else Tool(t)
                          for t in tools]
    return {**options, "tools": made}
