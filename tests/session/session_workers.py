"""Functions run in spawned processes by the multi-process store tests.

They live in an importable module because ``spawn`` children import their target by name.
Each worker reports failures through the queue instead of raising, so the parent can assert
on them (a traceback in a child would only show up as an exit code).
"""

from __future__ import annotations

import time
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier, Event
from typing import Any

from jupyter_agent.session import Store


def claim_all(path: str, run_ids: list[str], barrier: Barrier, results: Queue[Any]) -> None:
    """Try to claim every run, in step with the other worker; report the ones won."""
    won: list[str] = []
    errors: list[str] = []
    store = Store(path)
    for run_id in run_ids:
        barrier.wait(timeout=120)
        try:
            if store.claim_pending(run_id, "call") is not None:
                won.append(run_id)
        except BaseException as exc:  # reported to the parent; keep in step with the other
            errors.append(repr(exc))
    store.close()
    results.put((won, errors))


def append_many(path: str, tag: str, count: int, barrier: Barrier, results: Queue[Any]) -> None:
    """Append ``count`` messages to session ``shared``, one transaction each."""
    errors: list[str] = []
    store = Store(path)
    barrier.wait(timeout=120)
    for i in range(count):
        try:
            store.append_messages("shared", None, [{"role": "user", "content": f"{tag}-{i}"}])
        except BaseException as exc:  # every failure is counted, the loop goes on
            errors.append(repr(exc))
    store.close()
    results.put((tag, errors))


def commit_then_hang(path: str, committed: int, ready: Event) -> None:
    """Commit ``committed`` messages, then sit inside a large uncommitted transaction."""
    store = Store(path)
    for i in range(committed):
        store.append_messages("s", None, [{"role": "user", "content": f"committed-{i}"}])
    with store.transaction():
        # About 8 MB: more than SQLite's default page cache, so the pages spill into the WAL
        # file before any commit, which is the state a crash must not corrupt.
        filler = "x" * 2000
        for i in range(4000):
            store.append_messages("s", None, [{"role": "user", "content": f"lost-{i}-{filler}"}])
        ready.set()
        time.sleep(600)  # killed long before this ends


def commit_forever(path: str, done: Any) -> None:
    """Commit one message at a time until killed, publishing the count after each commit."""
    store = Store(path)
    i = 0
    while True:
        store.append_messages("s", None, [{"role": "user", "content": f"m-{i}"}])
        i += 1
        done.value = i
