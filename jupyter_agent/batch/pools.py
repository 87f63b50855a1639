"""Where items run: threads of this process (a Dask cluster's lanes are in ``lanes.py``).

Never more than ``concurrency`` items are out at once (a worker thread takes one more when it
is free), so a table of 10,000 rows is 10,000 small dicts in memory, not 10,000 queued tasks,
and a stop takes effect at once.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from .item import ItemTask, Outcome, run_item

if TYPE_CHECKING:
    from ..base.events import BaseEvent
    from .spec import Item

__all__ = ["ThreadPool"]


class ThreadPool:
    """``concurrency`` worker threads that each take their next item as soon as they are free.

    One model client per model serves every thread: the ``openai`` client's HTTP pool is
    thread-safe and keeps up to 100 idle connections, so each worker reuses its own. A worker
    hands each ended item to ``on_done`` (which must be quick: the coordinator queues it for
    its own thread to store) and takes the next one. The threads are daemons and end when no
    item is left (or the batch stops), each calling ``on_exit`` last.
    """

    def __init__(self, concurrency: int, *, is_aborted: Callable[[], bool],
                 on_event: Callable[[int, BaseEvent], None]) -> None:
        self.concurrency = concurrency
        self._is_aborted = is_aborted
        self._on_event = on_event
        self._threads: set[int] = set()
        self._lock = threading.Lock()

    def cut(self) -> int:
        """Close the model requests the workers are waiting on ("Stop now"); how many."""
        from ..llm.http import cut_requests

        with self._lock:
            threads = list(self._threads)
        return cut_requests(threads)

    def start(self, next_item: Callable[[], tuple[Item, ItemTask] | None],
              on_done: Callable[[Item, Outcome | BaseException], None], workers: int,
              on_exit: Callable[[], None]) -> None:
        """Start ``workers`` threads: each runs ``next_item()`` until it returns ``None``,
        hands every outcome (or the exception that ended the item) to ``on_done``, and calls
        ``on_exit`` when it ends."""
        for n in range(workers):
            # Each worker runs in a copy of the caller's context, as the loop's tool threads
            # do: what the batch set there (its trace span, usage sinks) reaches its items.
            threading.Thread(target=contextvars.copy_context().run,
                             args=(self._work, next_item, on_done, on_exit), daemon=True,
                             name=f"jupyter-agent-batch-{n}").start()

    def _work(self, next_item: Callable[[], tuple[Item, ItemTask] | None],
              on_done: Callable[[Item, Outcome | BaseException], None],
              on_exit: Callable[[], None]) -> None:
        ident = threading.get_ident()
        with self._lock:
            self._threads.add(ident)
        try:
            while (nxt := next_item()) is not None:
                item, task = nxt

                def listen(event: BaseEvent, position: int = item.position) -> None:
                    self._on_event(position, event)

                value: Outcome | BaseException
                try:
                    value = run_item(task, store=None, is_aborted=self._is_aborted,
                                          on_event=listen, detail=True)
                except BaseException as exc:  # a fatal mistake: on_done stops the batch
                    value = exc
                on_done(item, value)
        finally:
            from ..llm.http import forget_cut

            with self._lock:
                self._threads.discard(ident)
            forget_cut(ident)
            on_exit()
