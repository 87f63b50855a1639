"""While a batch runs, the collector's young collections are spaced out: its objects die young.

A batch allocates and frees objects by the hundred thousand. Each item's requests, events and
run live for the item's round trips and are freed by reference counting. At CPython's default
threshold (a young collection every 700 net allocations) a CPU-bound batch of 2,000 items ran
about 240 young collections. Frees of older objects hold the count back, so each one examined
2,000–6,500 objects of the items in flight, and it promoted the survivors. Their number then
set off full collections of the whole heap. All this took 0.6–0.8 s of the batch's 13–16 s of
CPU, 4–5% (``bench/bench_batch.py``), where a hand-written thread pool spent 0.03–0.15 s.

So while a batch runs (:func:`short_lived`), the young threshold is at least 10,000, and most
items' objects are freed before any collection sees them. Cyclic garbage is still collected,
after at most 10,000 net allocations (a few MB).

The user's settings win:
- a threshold of 10,000 or more, or zero, is left alone, and so is a collector the user
  turned off;
- a threshold changed while the batch runs is kept.

Two batches at once in one process share one raise, undone when the last one ends. A child
forked during a batch gets the threshold back (``os.register_at_fork``).
"""

from __future__ import annotations

import gc
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

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
    """Put the replaced threshold back, unless someone changed ours meanwhile."""
    if _Raise.replaced is not None and gc.get_threshold()[0] == SPACED:
        gc.set_threshold(_Raise.replaced)
    _Raise.replaced = None


def _reset_in_child() -> None:
    """In a child forked during a batch: no batch runs there."""
    _Raise.lock = threading.Lock()  # the parent's may have been held by another thread
    _Raise.active = 0
    _restore()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_in_child)


@contextmanager
def short_lived() -> Iterator[None]:
    """Run the block with young collections at least :data:`SPACED` allocations apart (see the
    module doc)."""
    with _Raise.lock:
        _Raise.active += 1
        if _Raise.active == 1:
            first = gc.get_threshold()[0]
            if gc.isenabled() and 0 < first < SPACED:
                _Raise.replaced = first
                gc.set_threshold(SPACED)
    try:
        yield
    finally:
        with _Raise.lock:
            _Raise.active -= 1
            if _Raise.active == 0:
                _restore()
