"""What a large import makes goes straight to the collector's oldest generation.

The objects the SDK's import makes (modules, classes, functions and their tables: about 70,000)
live as long as the process. Left alone, CPython's cyclic collector examined each of them in
about 165 young collections, and their number set off a full collection of the whole heap
before the first answer: 60–90 ms of a first run (``bench/bench_cold.py``), more in a kernel,
whose heap is larger. So :func:`long_lived` pauses automatic collection while the import runs
and then moves every tracked object of the process to the oldest generation without examining
one (``gc.freeze()`` then ``gc.unfreeze()``: two list splices on CPython 3.10 to 3.13; not
measured on 3.14, whose collector is incremental).

What this changes, and what it does not:

- The young collections are saved. The full collection is not: the next one comes later, at
  the pace of the process's later allocations (in a kernel, in a later cell), and over a long
  session the collector does about the same work. What the first answer no longer waits for
  is the collector.
- The objects stay visible to ``gc.get_objects`` and ``gc.get_referrers``, and every later full
  collection examines them, as any old object; a cycle among them that dies is freed then.
- The pause is the whole process's, for the length of the import (about 0.4 s): garbage
  cycles other threads make meanwhile, and the few hundred the import itself leaves, wait for
  the next full collection instead of a young one. The caller's young garbage is collected
  first (``gc.collect(1)``, under a millisecond), so it is not moved with the rest.
- Collection is paused by a threshold of zero (``gc.set_threshold(0)``), not ``gc.disable()``,
  so a thread that turns the collector off meanwhile keeps it off; a threshold that another
  thread changes meanwhile is kept, and nothing is moved then. A collector that was off, a zero
  threshold, or objects the user froze (``gc.get_freeze_count()``, before or during the
  import: unfreezing would thaw them) leave everything as it is, and so does an import that
  failed.
- A child forked during the import (from another thread) gets its collector back
  (``os.register_at_fork``): nothing in the child would ever restore it.
- A free-threaded build has no generations to skip: nothing is done there.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["FREE_THREADED", "long_lived", "paused_over"]

FREE_THREADED = "t" in getattr(sys, "abiflags", "")
"""A free-threaded build: its collector has no generations to spare work in."""


class _Pause:
    """The pause in progress: the threshold it replaced, and whether the objects are frozen
    (between ``gc.freeze()`` and ``gc.unfreeze()``), for a child forked meanwhile."""

    threshold: int | None = None
    frozen = False


def _resume_in_child() -> None:
    """In a child forked during a pause: thaw and restore what the parent would have."""
    if _Pause.threshold is None:
        return
    if _Pause.frozen:
        gc.unfreeze()
    if gc.get_threshold()[0] == 0:
        gc.set_threshold(_Pause.threshold)
    _Pause.threshold, _Pause.frozen = None, False


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_resume_in_child)


def paused_over(threshold: int, instead: int) -> bool:
    """If an import's pause is over ``threshold`` now, have it restore ``instead`` when it ends
    (whoever set ``threshold`` is done with it meanwhile); whether it was."""
    if _Pause.threshold is not None and _Pause.threshold == threshold:
        _Pause.threshold = instead
        return True
    return False


@contextmanager
def long_lived(name: str) -> Iterator[None]:
    """Import module ``name`` in the block with automatic collection paused; then move every
    tracked object to the oldest generation, if the import succeeded (see the module doc)."""
    threshold = gc.get_threshold()[0]
    if (FREE_THREADED or not gc.isenabled() or threshold == 0 or gc.get_freeze_count()
            or _Pause.threshold is not None):
        yield
        return
    gc.collect(1)
    _Pause.threshold = threshold
    gc.set_threshold(0)
    try:
        yield
    finally:
        if gc.get_threshold()[0] == 0:  # nobody changed it meanwhile
            if name in sys.modules and not gc.get_freeze_count():
                _Pause.frozen = True
                gc.freeze()
                gc.unfreeze()
                _Pause.frozen = False
            # Read now, not before: a batch that ended meanwhile leaves the value it replaced
            # here (_short_lived.py), not its own.
            gc.set_threshold(_Pause.threshold or threshold)
        _Pause.threshold = None
