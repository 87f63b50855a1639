"""Where items run: threads of this process, or a Dask cluster. Same four calls for both.

The coordinator never hands a pool more than ``concurrency`` items at once (one more each time
one ends), so a table of 10,000 rows is 10,000 small dicts in memory, not 10,000 queued tasks,
and a stop takes effect at the next item.
"""

from __future__ import annotations

import concurrent.futures
import math
import os
import secrets as _secrets
from typing import Any, Callable

from .item import ItemTask, run_item, run_remote

__all__ = ["ThreadPool", "DaskPool"]


class ThreadPool:
    """Items on ``concurrency`` threads sharing this process's clients and store.

    One model client per model serves every thread: the ``openai`` client's HTTP pool is
    thread-safe and keeps up to 100 idle connections, so each worker reuses its own.
    """

    remote = False

    def __init__(self, concurrency: int, *, store: Any, is_aborted: Callable[[], bool],
                 on_event: Callable[[int, Any], None]) -> None:
        self._ex = concurrent.futures.ThreadPoolExecutor(
            max_workers=concurrency, thread_name_prefix="jupyter-agent-batch")
        self._store = store
        self._is_aborted = is_aborted
        self._on_event = on_event

    def submit(self, task: ItemTask, position: int) -> Any:
        """Start one item; returns its handle."""
        def listen(event: Any) -> None:
            self._on_event(position, event)

        return self._ex.submit(run_item, task, store=self._store, is_aborted=self._is_aborted,
                               on_event=listen)

    def wait(self, handles: list[Any], timeout: float) -> list[Any]:
        """The handles that are done, waiting up to ``timeout`` for the first one."""
        done, _ = concurrent.futures.wait(handles, timeout=timeout,
                                          return_when=concurrent.futures.FIRST_COMPLETED)
        return list(done)

    def result(self, handle: Any) -> dict[str, Any]:
        """The outcome (a fatal mistake is raised again here)."""
        return handle.result()

    def cancel(self, handles: list[Any]) -> None:
        """Nothing to do: a running item sees the abort flag before its next round."""

    def close(self) -> None:
        """Let the threads end (items still running finish on their own)."""
        self._ex.shutdown(wait=False, cancel_futures=True)


class DaskPool:
    """Items on a ``dask.distributed`` cluster: the active client's, or a ``LocalCluster``
    started here (and closed at the end). A worker that dies loses nothing: the scheduler runs
    its items again on another worker."""

    remote = True

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

    def submit(self, task: ItemTask, position: int) -> Any:
        """Send one item to the cluster."""
        return self.client.submit(run_remote, task, pure=False,
                                  key=f"jupyter-agent-item-{self._tag}-{position}")

    def wait(self, handles: list[Any], timeout: float) -> list[Any]:
        """The futures that are done (finished, failed or cancelled)."""
        from distributed import wait

        try:
            wait(handles, timeout=timeout, return_when="FIRST_COMPLETED")
        except (TimeoutError, OSError):
            pass
        return [f for f in handles if f.done()]

    def result(self, handle: Any) -> dict[str, Any]:
        """The outcome; a fatal mistake made on the worker is raised again here."""
        out = handle.result()
        if isinstance(out, dict) and out.get("fatal"):
            from ..errors import ConfigError, MagicUsageError, ParameterError, ToolError

            kinds = {"ToolError": ToolError, "ParameterError": ParameterError,
                     "MagicUsageError": MagicUsageError}
            raise kinds.get(out["fatal"], ConfigError)(out["error"])
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
