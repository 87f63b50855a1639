"""While a batch runs, the collector's young collections are spaced out: its objects die young.

A batch allocates and frees objects by the hundred thousand. Each item's requests, events and
run live for the item's round trips and are freed by reference counting. At CPython's default
threshold (a young collection every 700 net allocations) a CPU-bound batch of 2,000 items ran
about 240 young collections. Frees of older objects hold the count back, so each one examined
2,000–6,500 objects of the items in flight, and it promoted the survivors. Their number then
set off full collections of the whole heap. All this took 0.6–0.8 s of the batch's 13–16 s of
CPU, 4–5% (``bench/bench_batch.py``), where a hand-written thread pool spent 0.03–0.15 s.

So while a batch runs (:func:`short_lived`), the young threshold is at least 10,000 (CPython's
default is 700 up to 3.13), and most items' objects are freed before any collection sees them.
The setting is the process's: a batch started with ``wait=False`` spaces the collections of
the user's cells too, until it ends.

Cyclic garbage is still collected on the way: the batch itself leaves none, and a tool's
cycles (a kept traceback, say) wait for up to 10,000 net allocations of tracked objects
instead of 700; once promoted to an older generation, about ten times that. That is a count
of objects, not of bytes: a cycle that holds a large buffer holds it that much longer.

The user's settings win:
- a threshold of 10,000 or more, or zero, is left alone, and so is a collector the user
  turned off;
- a threshold changed while the batch runs is kept (unless it is set to exactly 10,000,
  which cannot be told from ours).

Two batches at once in one process share one raise, undone when the last one ends. When the
SDK's first import (``_long_lived.py``) has paused collection as the last batch ends, the
import puts back the threshold the batch replaced. A child forked during a batch gets the
threshold back (``os.register_at_fork``), and a block a child inherits by forking from inside
it leaves the child's count alone. Free-threaded builds (no generations) are left as they are.
"""

from __future__ import annotations

import gc
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from ._long_lived import FREE_THREADED, paused_over

__all__ = ["SPACED", "short_lived"]

SPACED = 10_000
"""The young threshold while a batch runs (CPython's default is 700)."""


class _Raise:
    """The raise in progress: how many batches run under it, and the threshold it replaced
    (``None`` when it changed nothing)."""

    lock = threading.Lock()
    active = 0
    replaced: int | None = None


def _restore() -> None:
    """Put the replaced threshold back, unless someone changed ours meanwhile; an import's
    pause over ours restores it instead when it ends."""
    replaced, _Raise.replaced = _Raise.replaced, None
    if replaced is None:
        return
    now = gc.get_threshold()[0]
    if now == SPACED:
        gc.set_threshold(replaced)
    elif now == 0:
        paused_over(SPACED, replaced)


def _reset_in_child() -> None:
    """In a child forked during a batch: no batch runs there."""
    _Raise.lock = threading.Lock()  # the parent's may have been held by another thread
    _Raise.active = 0
    _restore()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_in_child)


def _enter() -> None:
    with _Raise.lock:
        _Raise.active += 1
        if _Raise.active == 1:
            first = gc.get_threshold()[0]
            if not FREE_THREADED and gc.isenabled() and 0 < first < SPACED:
                _Raise.replaced = first
                gc.set_threshold(SPACED)


def _leave() -> None:
    with _Raise.lock:
        _Raise.active -= 1
        if _Raise.active == 0:
            _restore()


@contextmanager
def short_lived() -> Iterator[None]:
    """Run the block with young collections at least :data:`SPACED` allocations apart (see the
    module doc)."""
    pid = os.getpid()
    entered = False
    try:
        _enter()
        entered = True
        yield
    finally:
        if entered and os.getpid() == pid:  # a forked child was reset by _reset_in_child
            _leave()
