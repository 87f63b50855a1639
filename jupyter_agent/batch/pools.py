"""Where items run: threads of this process, or a Dask cluster.

Never more than ``concurrency`` items are out at once (a worker thread takes one more when it
is free; the Dask loop submits one more when a future ends), so a table of 10,000 rows is
10,000 small dicts in memory, not 10,000 queued tasks, and a stop takes effect at once.
"""

from __future__ import annotations

import contextvars
import math
import os
import secrets as _secrets
import threading
import time
from typing import Any, Callable

from .item import ItemTask, run_item, run_remote

__all__ = ["ThreadPool", "DaskPool"]


class ThreadPool:
    """``concurrency`` worker threads that each take their next item as soon as they are free.

    One model client per model serves every thread: the ``openai`` client's HTTP pool is
    thread-safe and keeps up to 100 idle connections, so each worker reuses its own. A worker
    hands each ended item to ``on_done`` (which must be quick: the coordinator queues it for
    its own thread to store) and takes the next one. The threads are daemons and end when no
    item is left (or the batch stops), each calling ``on_exit`` last.
    """

    def __init__(self, concurrency: int, *, is_aborted: Callable[[], bool],
                 on_event: Callable[[int, Any], None]) -> None:
        self.concurrency = concurrency
        self._is_aborted = is_aborted
        self._on_event = on_event

    def start(self, next_item: Callable[[], tuple[Any, ItemTask] | None],
              on_done: Callable[[Any, Any], None], workers: int,
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

    def _work(self, next_item: Callable[[], tuple[Any, ItemTask] | None],
              on_done: Callable[[Any, Any], None], on_exit: Callable[[], None]) -> None:
        try:
            while (nxt := next_item()) is not None:
                item, task = nxt

                def listen(event: Any, position: int = item.position) -> None:
                    self._on_event(position, event)

                try:
                    value: Any = run_item(task, store=None, is_aborted=self._is_aborted,
                                          on_event=listen, detail=True)
                except BaseException as exc:  # a fatal mistake: on_done stops the batch
                    value = exc
                on_done(item, value)
        finally:
            on_exit()


class DaskPool:
    """Items on a ``dask.distributed`` cluster: the active client's, or a ``LocalCluster``
    started here (and closed at the end). A worker that dies loses nothing: the scheduler runs
    its items again on another worker."""

    def __init__(self, concurrency: int) -> None:
        try:
            from distributed import Client, LocalCluster, get_client
        except ImportError:
            from ..errors import ConfigError

            raise ConfigError("engine 'dask' needs dask.distributed: "
                              "pip install 'jupyter-agent[dask]'") from None
        self._own: tuple[Any, Any] | None = None
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
        self._tag = _secrets.token_hex(4)
        from distributed import as_completed

        # Results are gathered in the background as futures end: one wait per batch of ended
        # items instead of a round trip to the cluster per item.
        self._ended = as_completed(with_results=True, raise_errors=False)
        self._results: dict[str, Any] = {}

    def submit(self, task: ItemTask, position: int) -> Any:
        """Send one item to the cluster."""
        future = self.client.submit(run_remote, task, pure=False,
                                    key=f"jupyter-agent-item-{self._tag}-{position}")
        self._ended.add(future)
        return future

    def wait(self, handles: list[Any], timeout: float) -> list[Any]:
        """The futures that ended (finished, failed or cancelled), waiting up to ``timeout``."""
        end = time.monotonic() + timeout
        while not self._ended.has_ready():
            if time.monotonic() >= end:
                return []
            time.sleep(0.01)  # short: a kernel interrupt is seen at once
        ended = []
        for future, value in self._ended.next_batch(block=False):
            if future.status == "error" and isinstance(value, tuple):
                value = value[1]  # a failed task comes back as (type, exception, traceback)
            self._results[future.key] = value
            ended.append(future)
        return ended

    def result(self, handle: Any) -> Any:
        """The outcome, or the exception that ended it (a fatal mistake made on the worker,
        rebuilt here; a cancelled future; a worker that died too often)."""
        out = self._results.pop(handle.key, None)
        if out is None:
            try:
                out = handle.result()
            except (KeyboardInterrupt, SystemExit):
                raise
            except BaseException as exc:
                return exc
        if isinstance(out, BaseException):
            return out
        if isinstance(out, dict) and out.get("fatal"):
            from ..errors import ConfigError, MagicUsageError, ParameterError, ToolError

            kinds = {"ToolError": ToolError, "ParameterError": ParameterError,
                     "MagicUsageError": MagicUsageError}
            return kinds.get(out["fatal"], ConfigError)(out["error"])
        return out

    def cancel(self, handles: list[Any]) -> None:
        """Abort: drop the items still queued or running on the cluster."""
        if handles:
            self.client.cancel(list(handles))

    def close(self) -> None:
        """Close the cluster this pool started (an active client is left as it was)."""
        if self._own is not None:
            client, cluster = self._own
            client.close()
            cluster.close()


def _worker_env() -> dict[str, str]:
    """A key set with ``%config AgentMagics.api_key`` (not in the environment) for the
    workers this process starts; they inherit the environment itself."""
    from .. import config

    key = config.settings.api_key.get_secret_value() if config.settings.api_key else None
    return {"OPENAI_API_KEY": key} if key and not os.environ.get("OPENAI_API_KEY") else {}
