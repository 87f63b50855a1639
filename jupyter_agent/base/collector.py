"""The cyclic garbage collector's young threshold: the one place jupyter-agent may change it.

**Opt-in, off by default** (docs/architecture.md, "Process-wide settings"): only with
``JUPYTER_AGENT_TUNE_INTERPRETER=1`` in the environment does anything below happen; unset,
:func:`long_lived` and :func:`short_lived` run their blocks untouched and no fork handler is
registered. A library imported into the user's process must not change its collector unasked,
and the next CPython moves the ground under these details. What the opt-in buys:

Two kinds of work make objects the collector's default pace (a young collection every 700 net
allocations, up to CPython 3.13) examines for nothing:

- **A large import** (:func:`long_lived`, the road of every ``preimport``). The SDK's import
  makes about 70,000 objects (modules, classes, functions and their tables) that live as long
  as the process. Left alone, about 165 young collections examined them, and their number set
  off a full collection of the whole heap before the first answer: 60–90 ms of a first run
  (``bench/bench_cold.py``), more in a kernel. So automatic collection is paused (threshold
  zero) while the import runs, then every tracked object of the process moves to the oldest
  generation unexamined (``gc.freeze()`` then ``gc.unfreeze()``: two list splices on CPython
  3.10 to 3.13; not measured on 3.14, whose collector is incremental). The young collections
  are saved; the full collection is not, it comes later at the pace of later allocations (in
  a kernel, in a later cell). The objects stay visible to ``gc.get_objects`` and
  ``gc.get_referrers``, and a cycle among them that dies is freed by a later full collection.
  The caller's young garbage is collected first (``gc.collect(1)``, under a millisecond), so
  it is not moved with the rest. A failed import moves nothing.
- **A batch** (:func:`short_lived`, around the coordinator: every road into a batch). Each
  item's requests, events and run live for its round trips and die by reference counting. At
  700, a CPU-bound batch of 2,000 items ran about 240 young collections, each examining the
  2,000–6,500 objects of the items in flight (frees of older objects hold the count back); the
  survivors set off full collections: 0.6–0.8 s of 13–16 s of CPU (``bench/bench_batch.py``),
  where a hand-written thread pool spent 0.03–0.15 s. So while a batch runs the threshold is
  at least :data:`SPACED`. Cyclic garbage is still collected on the way: a tool's cycles (a
  kept traceback, say) wait up to 10,000 net allocations of tracked objects instead of 700,
  about ten times that once promoted. That is a count of objects, not bytes: a cycle holding
  a large buffer holds it that much longer.

One holder, :class:`_Hold`, keeps the threshold it replaced (the user's) while either kind of
block runs, and sets what the blocks in progress want: zero during an import, at least
:data:`SPACED` during a batch, the user's value when the last block ends. Whatever order they
start and end in (a batch that ends while another thread's import has paused collection, two
batches at once), the user's value comes back once.

The setting is the process's: the pause (about 0.4 s) holds every thread's cyclic garbage for
the next full collection, and a batch started with ``wait=False`` spaces the collections of
the user's cells too, until it ends. The user's settings win:

- a collector turned off, or a zero threshold, is left alone, and objects the user froze
  (``gc.get_freeze_count()``) mean no pause (unfreezing would thaw them);
- a threshold that someone else changes while a block runs is theirs: it is kept, nothing is
  moved, and nothing is changed again until every block has ended (a threshold set to exactly
  the value we set cannot be told from ours, and one another thread sets in the instant a
  block starts or ends may be overwritten: the ``gc`` module has no compare-and-set);
- a threshold of :data:`SPACED` or more needs no spacing.

A child forked during a block (``os.register_at_fork``) gets the user's threshold back and
starts with no block; a block it inherited by forking from inside leaves it alone. A
free-threaded build has no generations to spare work in: nothing is done there.
"""

from __future__ import annotations

import gc
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["FREE_THREADED", "SPACED", "TUNE_ENV", "long_lived", "short_lived", "tuning"]

TUNE_ENV = "JUPYTER_AGENT_TUNE_INTERPRETER"
"""The opt-in (``1``): large imports on a fresh thread's stack (:mod:`._fresh_stack`) and the
collector's threshold held during imports and batches (this module). Unset: neither."""

FREE_THREADED = "t" in getattr(sys, "abiflags", "")
"""A free-threaded build: its collector has no generations to spare work in."""

SPACED = 10_000
"""The least young threshold while a batch runs (CPython's default is 700)."""


class _Hold:
    """What jupyter-agent holds of the young threshold (see the module doc)."""

    lock = threading.RLock()
    """Held while the state and the threshold change together, and across a fork (see
    :func:`_reset_in_child`); reentrant, as a finalizer the collector runs meanwhile may start
    a block on the same thread."""
    replaced: int | None = None
    """The threshold before we changed it (the user's); ``None`` when nothing is held."""
    ours = 0
    """The threshold we set last: any other value was set by someone else."""
    released = False
    """Someone else changed the threshold while held: theirs until every block has ended."""
    importing = False
    """An import runs with collection paused (one at a time; another one runs unpaused)."""
    frozen = False
    """Between ``gc.freeze()`` and ``gc.unfreeze()``, for a child forked meanwhile."""
    batches = 0
    """Batches running in this process."""


def _still_ours() -> bool:
    """Whether we hold the threshold and it is still the value we set; if someone else has
    changed it, it is theirs: let go."""
    if _Hold.replaced is not None and gc.get_threshold()[0] != _Hold.ours:
        _Hold.replaced, _Hold.released = None, True
    return _Hold.replaced is not None


def _take() -> bool:
    """Hold the threshold, if it is not held and may be; whether it is held."""
    if _Hold.replaced is not None:
        return _still_ours()
    now = gc.get_threshold()[0]
    if _Hold.released or FREE_THREADED or not gc.isenabled() or now == 0:
        return False
    _Hold.replaced = _Hold.ours = now
    return True


def _settle() -> None:
    """Set what the blocks in progress want; when none is left, give the user's value back
    and hold nothing. Called with the lock held."""
    if _still_ours():
        assert _Hold.replaced is not None
        if _Hold.importing:
            want = 0
        elif _Hold.batches:
            want = max(_Hold.replaced, SPACED)
        else:
            want = _Hold.replaced
        if want != _Hold.ours:
            gc.set_threshold(want)
            _Hold.ours = want
    if not _Hold.importing and not _Hold.batches:
        _Hold.replaced, _Hold.released = None, False


def _reset_in_child() -> None:
    """In a child forked during a block: no block runs there; the user's threshold comes back
    (if it is still ours), and objects frozen by an import's move are thawed."""
    _Hold.lock = threading.RLock()  # held by the forking thread (os.register_at_fork below)
    if _Hold.frozen:
        gc.unfreeze()
    _Hold.importing, _Hold.frozen, _Hold.batches = False, False, 0
    _settle()


def tuning() -> bool:
    """Whether the user opted in (:data:`TUNE_ENV`, read at each block: it may be set at any
    time). Off by default: a library imported into someone's process leaves its collector
    alone unasked."""
    return os.environ.get(TUNE_ENV, "").strip().lower() in ("1", "true", "yes", "on")


_fork_hooks: list[bool] = []


def _hook_forks() -> None:
    """Register the fork hooks, once, when the first block runs (not at import: opted out,
    this module changes nothing of the process, its fork handlers included)."""
    if _fork_hooks or not hasattr(os, "register_at_fork"):
        return
    _fork_hooks.append(True)
    # A fork waits for the state and the threshold to agree: a child forked between another
    # thread's gc.set_threshold and its record of it took the threshold for the user's and
    # kept collection off (zero) for good.
    os.register_at_fork(before=lambda: _Hold.lock.acquire(),
                        after_in_parent=lambda: _Hold.lock.release(),
                        after_in_child=_reset_in_child)


def _pause(paused: list[bool]) -> None:
    """Pause automatic collection for an import, if it may be; ``paused`` gets ``True`` if it
    was (at once: an interrupt after that still ends the pause)."""
    with _Hold.lock:
        if (_Hold.importing or not gc.isenabled() or gc.get_freeze_count()
                or not _take()):
            return
        _Hold.importing = True
        paused.append(True)
        _settle()


def _resume(name: str) -> None:
    """End an import's pause: move what it made if it succeeded and the threshold is still
    ours, then set what the other blocks want."""
    with _Hold.lock:
        _Hold.importing = False
        try:
            if _still_ours() and name in sys.modules and not gc.get_freeze_count():
                _Hold.frozen = True
                try:
                    gc.freeze()
                finally:  # an interrupt here must not leave the process frozen
                    gc.unfreeze()
                    _Hold.frozen = False
        finally:
            _settle()


@contextmanager
def long_lived(name: str) -> Iterator[None]:
    """Import module ``name`` in the block with automatic collection paused; then move every
    tracked object to the oldest generation, if the import succeeded (see the module doc).
    Only when the user opted in (:func:`tuning`); otherwise the block runs untouched."""
    if not tuning():
        yield
        return
    with _Hold.lock:
        _hook_forks()
    pid = os.getpid()
    paused: list[bool] = []
    try:
        _pause(paused)
        if paused:
            gc.collect(1)  # the caller's young garbage is collected, not moved
        yield
    finally:
        if paused and os.getpid() == pid:  # a forked child was reset by _reset_in_child
            _resume(name)


@contextmanager
def short_lived() -> Iterator[None]:
    """Run the block with young collections at least :data:`SPACED` allocations apart (see
    the module doc). Only when the user opted in (:func:`tuning`)."""
    if not tuning():
        yield
        return
    with _Hold.lock:
        _hook_forks()
    pid = os.getpid()
    entered = False
    try:
        with _Hold.lock:
            _Hold.batches += 1
            entered = True
            if _take():
                _settle()
        yield
    finally:
        if entered and os.getpid() == pid:  # a forked child was reset by _reset_in_child
            with _Hold.lock:
                _Hold.batches -= 1
                _settle()
