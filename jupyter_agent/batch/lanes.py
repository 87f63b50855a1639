"""Items on a Dask cluster: one *lane* per worker, a long task that runs items on its own threads.

A task per item costs every item several hops between processes: the item's end goes from the
worker to the scheduler, to this kernel, its result is fetched from the worker, and the next
item goes to the scheduler and on to a worker. On a loaded machine each hop waits for a busy
process's event loop (a worker's loop shares the interpreter lock with its item threads), and
a batch of 400 two-round items at concurrency 32 kept only 10 to 20 items running (0.2 s from
submission to start, 0.3 s from end to the coordinator, per item; docs/behaviour.md).

A lane instead takes its items from its own inbox (a ``distributed.Queue`` the kernel fills in
batches, a little ahead), starts the next one on its own thread as soon as one ends, and sends
back what happened (an item started, ended, or was not started because the batch stopped) in
batches on one outbox queue. The concurrency is split between the lanes, so never more than
``concurrency`` items run at once. What the kernel sends can wait in the inbox, but it starts
nothing: a stop drains the inboxes and tells the lanes, whose threads start nothing more.

A worker that dies takes its lane with it. The kernel sees it (the scheduler counts the lane's
task as ``suspicious``), cancels the lane, starts another, and sends the lost lane's items
again: those it had not started silently, those it had started counted on the card ("re-run
after a worker was lost"), except an item offered a tool with side effects, which comes back
``held`` instead (it may have called the tool already). In such a batch a lane reports each
start before the item runs (one round trip to the scheduler), so no started item goes unseen.
"""

from __future__ import annotations

import math
import os
import pickle
import queue
import secrets as _secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Union

if TYPE_CHECKING:
    from distributed import Client, Future, LocalCluster, Queue

    from .item import FatalReport, ItemTask, Outcome
    from .ship import ToolPack
    from .spec import Item

__all__ = ["LanePool", "run_lane", "held_outcome"]

_POLL = (0.005, 0.1)
"""Seconds between two looks at an empty queue: the first, and the most after backing off
(a ``get`` that waits logs an error on the scheduler when it times out, so none waits)."""

_END_WAIT = 10.0
"""Seconds the kernel waits at the end of a batch for the lanes to end (they were told to)."""


_Report = Union[tuple[str, str, int], tuple[str, str, int, "Outcome | FatalReport"]]
"""What a lane tells the kernel: ``(kind, lane, position)``, and an ended item's outcome."""


def _drain(q: Queue, closed: Callable[[], bool]) -> list[bytes | str]:
    """Everything waiting in ``q``, looking again (less and less often) while it is empty
    and ``closed()`` is false (then: ``[]``)."""
    pause = _POLL[0]
    while not closed():
        got = q.get(batch=True)
        if got:
            return list(got)
        time.sleep(pause)
        pause = min(_POLL[1], pause * 2)
    return []


# ------------------------------------------------------------------------------ worker side
def run_lane(lane: str, inbox: str, outbox: str, threads: int, pack: ToolPack | None,
             strict: bool) -> str:
    """A Dask task: run the items sent to ``inbox`` on ``threads`` threads until told "end".

    Messages to the kernel on ``outbox`` (pickled lists): ``("start", lane, position)``,
    ``("end", lane, position, outcome)``, ``("unstarted", lane, position)``. ``strict`` (a tool
    with side effects is offered): each start is on the scheduler before the item runs.
    """
    from distributed import Queue, get_client

    if _worker_was_lost():
        return "lost"  # a re-run after a worker died: the kernel gave its items to another lane
    client = get_client()
    inq, outq = Queue(inbox, client=client), Queue(outbox, client=client)
    return _Lane(lane, inq, outq, threads, pack, strict).run()


class _Lane:
    def __init__(self, lane: str, inq: Queue, outq: Queue, threads: int, pack: ToolPack | None,
                 strict: bool) -> None:
        self.lane, self.inq, self.outq = lane, inq, outq
        self.threads, self.pack, self.strict = threads, pack, strict
        self.buffer: queue.SimpleQueue[tuple[int, ItemTask] | None] = queue.SimpleQueue()
        self.stopping = threading.Event()
        self.aborting = threading.Event()
        self.pending: list[_Report] = []
        self.wake = threading.Condition()
        self.closing = False

    def run(self) -> str:
        sender = threading.Thread(target=self._send_loop, daemon=True,
                                  name="jupyter-agent-lane-sender")
        sender.start()
        runners = [threading.Thread(target=self._run_items, daemon=True,
                                    name=f"jupyter-agent-lane-{n}") for n in range(self.threads)]
        for t in runners:
            t.start()
        try:
            self._fetch()
        finally:
            for _ in runners:
                self.buffer.put(None)
            for t in runners:
                t.join()
            with self.wake:
                self.closing = True
                self.wake.notify()
            sender.join()
        return "done"

    def _fetch(self) -> None:
        """Items (and the kernel's word to stop or end) from the inbox, into the buffer."""
        while True:
            for msg in _drain(self.inq, lambda: False):
                if isinstance(msg, bytes):
                    for item in pickle.loads(msg):
                        self.buffer.put(item)
                elif msg == "end":
                    return
                else:  # "finish" or "abort": start nothing more
                    if msg == "abort":
                        self.aborting.set()
                    self.stopping.set()

    def _run_items(self) -> None:
        from .item import error_outcome, one_line, run_remote

        while (got := self.buffer.get()) is not None:
            position, task = got
            if self.stopping.is_set():
                self._report(("unstarted", self.lane, position))
                continue
            if self.strict:  # on the scheduler before the item may call a tool
                self.outq.put(_dumps([("start", self.lane, position)]))
            else:
                self._report(("start", self.lane, position))
            value: Outcome | FatalReport
            try:
                value = run_remote(task, self.pack, is_aborted=self.aborting.is_set)
            except Exception as exc:  # noqa: BLE001 - a bug here fails this item, not the lane
                value = error_outcome(one_line(exc))
            self._report(("end", self.lane, position, value))

    def _report(self, msg: _Report) -> None:
        with self.wake:
            self.pending.append(msg)
            self.wake.notify()

    def _send_loop(self) -> None:
        """Everything reported since the last send, in one message (in order)."""
        while True:
            with self.wake:
                while not self.pending and not self.closing:
                    self.wake.wait()
                batch, self.pending = self.pending, []
                last = self.closing
            if batch:
                self.outq.put(_dumps(batch))
            if last and not self.pending:
                return


def _worker_was_lost() -> bool:
    """On a Dask worker: whether this task ran before on a worker that died (the scheduler
    counts it as ``suspicious``)."""
    from distributed import get_client, get_worker

    key = get_worker().get_current_task()
    count = get_client().run_on_scheduler(
        lambda dask_scheduler, key: getattr(dask_scheduler.tasks.get(key), "suspicious", 0),
        key=key)
    return bool(count)


# ------------------------------------------------------------------------------ kernel side
@dataclass
class _LaneState:
    key: str
    inbox: Queue
    threads: int
    future: Future[str]
    """The lane's task (``run_lane``)."""
    assigned: dict[int, tuple[Item, ItemTask]] = field(default_factory=dict)
    """position -> (item, task) sent to this lane and not ended."""
    started: set[int] = field(default_factory=set)

    @property
    def room(self) -> int:
        # Twice its threads: the next items wait on the worker while the kernel refills.
        return 2 * self.threads - len(self.assigned)


@dataclass
class Lost:
    """What a lost lane leaves: items to count as run again, or to hold (side effects)."""

    rerun: int = 0
    held: list[Item] = field(default_factory=list)
    unstarted: list[Item] = field(default_factory=list)
    """After a stop: the lost lane's items not run again (they count as not run)."""


class LanePool:
    """The kernel's side of the lanes: the active client's cluster, or a ``LocalCluster``
    started here (and closed at the end); ``pack`` (the batch's tools) is sent once."""

    def __init__(self, concurrency: int, pack: ToolPack | None = None) -> None:
        try:
            from distributed import Client, LocalCluster, Queue, get_client
        except ImportError:
            from ..base.errors import ConfigError

            raise ConfigError("engine 'dask' needs dask.distributed: "
                              "pip install 'jupyter-agent[dask]'") from None
        self._own: tuple[Client, LocalCluster] | None = None
        self.client: Client
        try:
            self.client = get_client()
        except ValueError:  # no active client: start a cluster on this machine
            workers = max(1, min(4, os.cpu_count() or 1, concurrency))
            cluster = LocalCluster(n_workers=workers,
                                   threads_per_worker=max(1, math.ceil(concurrency / workers)),
                                   processes=True, dashboard_address=None,
                                   env=_worker_env())
            self.client = Client(cluster)
            self._own = (self.client, cluster)
        self._Queue: type[Queue] = Queue
        self._tag = _secrets.token_hex(4)
        self._count = 0
        self.strict = bool(pack is not None and pack.side_effects)
        self._pack = (None if pack is None
                      else self.client.scatter(pack, broadcast=True, hash=False))
        self._outbox = Queue(f"jupyter-agent-out-{self._tag}", client=self.client)
        self.received: queue.SimpleQueue[list[_Report]] = queue.SimpleQueue()
        self._closed = threading.Event()
        self._receiver = threading.Thread(target=self._receive_loop, daemon=True,
                                          name="jupyter-agent-lane-receiver")
        self._receiver.start()
        self.lanes: dict[str, _LaneState] = {}
        self._resend: list[tuple[Item, ItemTask]] = []
        self.stopped: str | None = None
        for address, threads in _split(concurrency, self.client):
            self._start_lane(threads, address)

    def _start_lane(self, threads: int, address: str | None) -> None:
        self._count += 1
        key = f"jupyter-agent-lane-{self._tag}-{self._count}"
        inbox = self._Queue(f"{key}-in", client=self.client)
        future = self.client.submit(
            run_lane, key, inbox.name, self._outbox.name, threads, self._pack, self.strict,
            key=key, pure=False,
            **({"workers": [address], "allow_other_workers": True} if address else {}))
        self.lanes[key] = _LaneState(key, inbox, threads, future)

    # ---------------------------------------------------------------------- sending
    def room(self) -> int:
        """Items the lanes can take now (none once stopped)."""
        if self.stopped:
            return 0
        return max(0, sum(max(0, s.room) for s in self.lanes.values()) - len(self._resend))

    def send(self, items: list[tuple[Item, ItemTask]]) -> None:
        """Hand ``(item, task)`` pairs to the lanes with room (items given back by a lost
        lane first), one inbox message per lane."""
        if self.stopped:
            return
        todo = self._resend + items
        self._resend = []
        batches: dict[str, list[tuple[Item, ItemTask]]] = {}
        for n, (item, task) in enumerate(todo):  # each to the lane with the most room
            state = max(self.lanes.values(), key=lambda s: s.room, default=None)
            if state is None or state.room <= 0:
                self._resend = todo[n:]
                break
            state.assigned[item.position] = (item, task)
            batches.setdefault(state.key, []).append((item, task))
        for key, take in batches.items():
            self.lanes[key].inbox.put(
                _dumps([(item.position, task) for item, task in take]))

    def outstanding(self) -> int:
        """Items sent and not ended (or to send again)."""
        return sum(len(s.assigned) for s in self.lanes.values()) + len(self._resend)

    def stop(self, mode: str) -> list[Item]:
        """Tell every lane to start nothing more (``abort``: and to end its running items at
        their next round); the items still in the inboxes come back, not started."""
        if self.stopped == mode or self.stopped == "abort":
            return []
        self.stopped = mode
        back = [item for item, _ in self._resend]
        self._resend = []
        for state in self.lanes.values():
            for msg in state.inbox.get(batch=True):
                for position, _ in pickle.loads(msg):
                    pair = state.assigned.pop(position, None)
                    if pair is not None:
                        back.append(pair[0])
            state.inbox.put(mode)
        return back

    # ---------------------------------------------------------------------- taking in
    def _receive_loop(self) -> None:
        while not self._closed.is_set():
            try:
                msgs = _drain(self._outbox, self._closed.is_set)
            except Exception:  # noqa: BLE001 - the client closed under us: the batch ended
                if self._closed.is_set():
                    return
                raise
            if msgs:
                self.received.put([m for msg in msgs if isinstance(msg, bytes)
                                    for m in pickle.loads(msg)])

    def take(self, timeout: float) -> list[tuple[str, Item, Outcome | BaseException | None]]:
        """What the lanes reported, waiting up to ``timeout``: ``("start", item, None)``,
        ``("end", item, value)`` (an outcome, or the exception that ended the item) and
        ``("unstarted", item, None)``. Reports of a lane given up as lost are dropped."""
        try:
            got = self.received.get(timeout=timeout)
        except queue.Empty:
            return []
        while True:
            try:
                got += self.received.get_nowait()
            except queue.Empty:
                break
        out: list[tuple[str, Item, Outcome | BaseException | None]] = []
        for kind, lane, position, *rest in got:
            state = self.lanes.get(lane)
            pair = state.assigned.get(position) if state is not None else None
            if state is None or pair is None:
                continue
            if kind == "start":
                state.started.add(position)
                out.append(("start", pair[0], None))
                continue
            del state.assigned[position]
            state.started.discard(position)
            out.append((kind, pair[0], _value(rest[0]) if kind == "end" else None))
        return out

    def check_lanes(self) -> tuple[Lost, list[tuple[Item, BaseException]], BaseException | None]:
        """Lanes lost with their worker (replaced, their items sent again) and lanes that
        failed (their items end with the lane's exception, returned last: the batch stops):
        one question to the scheduler."""
        lost = Lost()
        failed: list[tuple[Item, BaseException]] = []
        error: BaseException | None = None
        keys = list(self.lanes)
        counts = self.client.run_on_scheduler(
            lambda dask_scheduler, keys: [
                getattr(dask_scheduler.tasks.get(k), "suspicious", 0) for k in keys],
            keys=keys)
        for key, count in zip(keys, counts, strict=True):
            state = self.lanes[key]
            if state.future.status in ("error", "cancelled") and not count:
                error = exc = _future_error(state.future)
                failed += [(item, exc) for item, _ in state.assigned.values()]
                del self.lanes[key]
            elif count:
                self._lose(state, lost)
        return lost, failed, error

    def _lose(self, state: _LaneState, lost: Lost) -> None:
        del self.lanes[state.key]
        self.client.cancel([state.future])
        state.inbox.close()
        again = []
        for position, (item, task) in state.assigned.items():
            if position in state.started and self.strict:
                lost.held.append(item)
            elif self.stopped:  # a stopped batch starts nothing again
                lost.unstarted.append(item)
            else:
                lost.rerun += position in state.started
                again.append((item, task))
        self._resend = again + self._resend
        if not self.stopped:
            self._start_lane(state.threads, None)

    def close(self) -> None:
        """End the lanes (their threads end when their items do) and close the cluster this
        pool started (an active client is left as it was)."""
        for state in self.lanes.values():
            try:
                state.inbox.put("end")
                state.inbox.close()
            except Exception:  # noqa: BLE001 - the cluster is gone: nothing to end
                pass
        if not self.outstanding() and self.lanes:  # a normal end: the workers' threads free
            from distributed import wait

            try:
                wait([s.future for s in self.lanes.values()], timeout=_END_WAIT)
            except Exception:  # noqa: BLE001 - a lane slow to end ends on its own
                pass
        self._closed.set()
        self._receiver.join(2 * _POLL[1] + 1)
        try:
            self._outbox.close()
        except Exception:  # noqa: BLE001
            pass
        if self._own is not None:
            client, cluster = self._own
            client.close()
            cluster.close()


def _dumps(obj: object) -> bytes:
    """Bytes for a queue (which carries msgpack data only). cloudpickle, as Dask sends a
    task's arguments: a function or a class defined in the notebook travels by value."""
    from .ship import pickler

    return pickler().dumps(obj)


def _value(out: Outcome | FatalReport) -> Outcome | BaseException:
    """An item's outcome, or the fatal mistake it made on the worker rebuilt here (exceptions
    with custom constructors do not survive pickling whole)."""
    if "fatal" in out:
        from ..base.errors import ConfigError, MagicUsageError, ParameterError, ToolError

        kinds: dict[str, type[Exception]] = {
            "ToolError": ToolError, "ParameterError": ParameterError,
            "MagicUsageError": MagicUsageError}
        return kinds.get(out["fatal"], ConfigError)(out["error"])
    return out


def _future_error(future: Future[str]) -> BaseException:
    try:
        exc = future.exception(timeout=1)
    except BaseException as e:  # noqa: BLE001 - cancelled: that is the reason
        return e
    return exc if isinstance(exc, BaseException) else RuntimeError("the Dask lane ended")


def _split(concurrency: int, client: Client) -> list[tuple[str | None, int]]:
    """``concurrency`` split between the workers by their threads: ``(address, threads)``."""
    workers = {a: int(w.get("nthreads") or 1)
               for a, w in (client.scheduler_info().get("workers") or {}).items()}
    if not workers:
        return [(None, concurrency)]
    addresses = sorted(workers, key=lambda a: -workers[a])[:concurrency]
    total = sum(workers[a] for a in addresses)
    shares = {a: max(1, concurrency * workers[a] // total) for a in addresses}
    extra = concurrency - sum(shares.values())
    while extra:  # what the rounding left (or took: one thread at least each), one each
        for a in addresses if extra > 0 else sorted(addresses, key=lambda a: -shares[a]):
            if extra == 0 or (extra < 0 and shares[a] == 1):
                continue
            shares[a] += 1 if extra > 0 else -1
            extra += -1 if extra > 0 else 1
    return [(a, shares[a]) for a in addresses]


def _worker_env() -> dict[str, str]:
    """A key set with ``%config AgentMagics.api_key`` (not in the environment) for the
    workers this process starts; they inherit the environment itself."""
    from ..base import config

    key = config.settings.api_key.get_secret_value() if config.settings.api_key else None
    return {"OPENAI_API_KEY": key} if key and not os.environ.get("OPENAI_API_KEY") else {}


def held_outcome(side_effects: list[str]) -> Outcome:
    """An item started on a worker that died, offered a tool with side effects: not run
    again (it may have called the tool), for the user to check."""
    from .item import error_outcome

    out = error_outcome(
        "Not run again: its Dask worker was lost while it ran, and it may have called "
        f"{', '.join(side_effects)} (side effects). Check, then run the cell again to "
        "retry it.")
    out["held"] = True
    return out
