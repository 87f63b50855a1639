"""Time limits for code that runs in the caller's own thread (the kernel's main thread).

Code the model asks to run, or a hostile ``__repr__``, runs where the notebook's variables
live: in the kernel, usually in its main thread. It cannot be moved to a thread we could
abandon (the user's objects are not thread-safe and the result must land in the namespace),
so the limit interrupts the thread itself:

- in the main thread, a watchdog thread sends it a real signal (``pthread_kill``) whose
  handler raises :class:`TimeLimitExceeded`. A real signal also wakes a blocking call
  (``time.sleep``, a socket read), which ``_thread.interrupt_main`` alone would not. The
  signal is :data:`LIMIT_SIGNAL` (``SIGUSR2``), not ``SIGINT``: the user's Ctrl-C (the
  kernel's stop button) stays untouched and a plain ``KeyboardInterrupt``, and code that
  ignores ``SIGINT`` (many libraries do) is still stopped;
- in any other thread, or when the code replaced our handler, ``PyThreadState_SetAsyncExc``
  raises the exception at the thread's next bytecode (a blocking C call is not woken; it is
  interrupted when it returns).

Code that swallows the interrupt is interrupted again every :data:`REFIRE_SECONDS`, at most
:data:`MAX_FIRES` times. An interrupt that arrives after the code finished is absorbed before
the limit is lifted, so it can never hit the caller's own code later.

One watchdog thread serves every limit, so arming one costs a lock and a notify. Limits nest
(a 1 s repr inside a 10 s inspection): each interrupt carries its limit, so an inner limit
catches only its own and an outer one unwinds through the inner ones.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TypeVar, Union

from ...base.interrupt import raise_in_thread

__all__ = ["LIMIT_SIGNAL", "MAX_FIRES", "REFIRE_SECONDS", "TimeLimitExceeded",
           "call_with_limit", "time_limit"]

T = TypeVar("T")
_Handler = Union[Callable[[int, "FrameType | None"], object], int, signal.Handlers, None]
"""What ``signal.signal`` takes and returns: a handler, ``SIG_DFL``/``SIG_IGN``, or None
(installed from C)."""

LIMIT_SIGNAL: int | None = getattr(signal, "SIGUSR2", None)
"""The signal that interrupts the main thread (None where the platform has none)."""
REFIRE_SECONDS = 0.5
"""Seconds between repeated interrupts of code that swallowed the first one."""
MAX_FIRES = 6
"""Interrupts sent to one over-time call before the watchdog gives up on it."""
_ABSORB_SECONDS = 1.0


class TimeLimitExceeded(KeyboardInterrupt):
    """Raised inside code whose time limit ran out; ``limit`` says which limit it was.

    A ``KeyboardInterrupt`` on purpose: ``except Exception`` in the user's code does not
    swallow it, and should one ever escape, the agent loop treats it like the user's interrupt.
    """

    limit: _Limit | None = None


class _Limit:
    """One armed limit: which thread, when, and how many interrupts were sent/arrived."""

    __slots__ = ("thread_id", "deadline", "seconds", "use_signal", "sent", "fired",
                 "delivered", "async_sent", "done", "_exc_class")

    def __init__(self, seconds: float, use_signal: bool) -> None:
        self.thread_id = threading.get_ident()
        self.seconds = seconds
        self.deadline = time.monotonic() + seconds
        self.use_signal = use_signal
        self.sent = 0
        """Interrupts sent, by either means."""
        self.fired = 0
        """Signals sent; ``delivered`` counts those whose handler ran."""
        self.delivered = 0
        self.async_sent = False
        self.done = False
        self._exc_class: type[TimeLimitExceeded] | None = None

    def owns(self, exc: BaseException) -> bool:
        """Whether ``exc`` is this limit's interrupt (not an outer limit's)."""
        return isinstance(exc, TimeLimitExceeded) and exc.limit is self

    def exception(self) -> TimeLimitExceeded:
        exc = TimeLimitExceeded(f"time limit of {self.seconds:g} s reached")
        exc.limit = self
        return exc

    def fire(self) -> None:
        """Interrupt the limited thread (called by the watchdog, under its lock)."""
        self.sent += 1
        # (use_signal implies a LIMIT_SIGNAL: the test says so to the type checker too)
        if (self.use_signal and LIMIT_SIGNAL is not None
                and signal.getsignal(LIMIT_SIGNAL) is _handler):
            self.fired += 1
            signal.pthread_kill(self.thread_id, LIMIT_SIGNAL)
            return
        # Another thread, or the code replaced our handler: raise at its next bytecode.
        if self._exc_class is None:
            # The interpreter instantiates the class without arguments: the limit rides on it.
            self._exc_class = type("TimeLimitExceeded", (TimeLimitExceeded,), {"limit": self})
        self.async_sent = True
        raise_in_thread(self.thread_id, self._exc_class)


class _Stack(threading.local):
    """The limits active in this thread, outermost first, and the signal handler they
    replaced (main thread)."""

    def __init__(self) -> None:
        self.limits: list[_Limit] = []
        self.previous: _Handler = None


_stack = _Stack()


def _handler(signum: int, frame: FrameType | None) -> None:
    """:data:`LIMIT_SIGNAL` in the main thread: the due limit's interrupt (a stray one is
    ignored: its limit already ended)."""
    due = [lim for lim in _stack.limits if lim.delivered < lim.fired]
    # Signals sent close together arrive as one: this delivery settles every pending one.
    for limit in due:
        limit.delivered = limit.fired
    if due:  # the outermost: its interrupt unwinds the inner ones too
        raise due[0].exception()


class _Watchdog:
    """A daemon thread that fires every armed limit whose deadline has passed."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._limits: set[_Limit] = set()
        self._thread: threading.Thread | None = None

    def arm(self, limit: _Limit) -> None:
        with self._cond:
            self._limits.add(limit)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, daemon=True,
                                                name="jupyter-agent-time-limit")
                self._thread.start()
            self._cond.notify()

    def disarm(self, limit: _Limit) -> None:
        with self._cond:
            limit.done = True
            self._limits.discard(limit)

    def _run(self) -> None:
        with self._cond:
            while True:
                now = time.monotonic()
                for limit in [lim for lim in self._limits if lim.deadline <= now]:
                    limit.fire()
                    limit.deadline = now + REFIRE_SECONDS
                    if limit.sent >= MAX_FIRES:
                        self._limits.discard(limit)
                wait = min((lim.deadline for lim in self._limits), default=now + 60) - now
                self._cond.wait(max(wait, 0.0))


_WATCHDOG = _Watchdog()


def _can_use_signal() -> bool:
    if (LIMIT_SIGNAL is None or not hasattr(signal, "pthread_kill")
            or threading.current_thread() is not threading.main_thread()):
        return False
    # A handler installed from C (faulthandler) could not be put back: leave it alone.
    return signal.getsignal(LIMIT_SIGNAL) is not None


def _absorb(limit: _Limit) -> None:
    """Swallow this limit's interrupts that were sent but have not arrived yet (the code
    finished first). Another limit's interrupt propagates."""
    if limit.async_sent:
        raise_in_thread(limit.thread_id, None)  # clears a pending async exception, if any
    end = time.monotonic() + _ABSORB_SECONDS
    while limit.delivered < limit.fired and time.monotonic() < end:
        try:
            time.sleep(0.001)  # a pending signal's handler runs here
        except TimeLimitExceeded as exc:
            if not limit.owns(exc):
                raise


def _stray(signum: int, frame: FrameType | None) -> None:
    """Stands in for the default action of :data:`LIMIT_SIGNAL` (ending the process)."""


def _restore(previous: _Handler) -> None:
    # The default action of SIGUSR2 ends the process: should an interrupt still be on its
    # way, it must meet a Python handler, not kill the kernel. A Python handler (unlike
    # SIG_IGN) is reset to the default in child processes, so they are unaffected.
    if LIMIT_SIGNAL is None:  # never: only limits that use the signal get here
        return
    if previous in (signal.SIG_DFL, None) and signal.getsignal(LIMIT_SIGNAL) is _handler:
        previous = _stray
    if signal.getsignal(LIMIT_SIGNAL) is _handler:
        signal.signal(LIMIT_SIGNAL, previous)


@contextmanager
def time_limit(seconds: float | None) -> Iterator[_Limit | None]:
    """Interrupt the body with :class:`TimeLimitExceeded` after ``seconds``.

    Yields the limit (``limit.owns(exc)`` tells its interrupt from an outer limit's), or None
    when ``seconds`` is None or not positive (no limit). Limits nest: each interrupts at its
    own deadline, and an outer limit's interrupt unwinds through the inner ones.
    """
    if not seconds or seconds <= 0:
        yield None
        return
    limit = _Limit(seconds, _can_use_signal())
    if (limit.use_signal and LIMIT_SIGNAL is not None
            and not any(lim.use_signal for lim in _stack.limits)):
        _stack.previous = signal.signal(LIMIT_SIGNAL, _handler)
    _stack.limits.append(limit)
    _WATCHDOG.arm(limit)
    late: BaseException | None = None
    try:
        yield limit
    finally:
        while True:  # a late interrupt may land in this cleanup itself: just clean up again
            try:
                _WATCHDOG.disarm(limit)
                _absorb(limit)
                break
            except TimeLimitExceeded as exc:
                if not limit.owns(exc):
                    late = exc  # an outer limit's: raise it once we are cleaned up
        _stack.limits.remove(limit)
        if limit.use_signal and not any(lim.use_signal for lim in _stack.limits):
            _restore(_stack.previous)
            _stack.previous = None
    if late is not None:
        raise late


def call_with_limit(fn: Callable[[], T], seconds: float) -> tuple[bool, T | None]:
    """``(True, fn())``, or ``(False, None)`` when ``fn`` ran out of its ``seconds``.

    Exceptions of ``fn`` propagate, and so does an outer limit's interrupt.
    """
    with time_limit(seconds) as limit:
        try:
            return True, fn()
        except TimeLimitExceeded as exc:
            if limit is None or not limit.owns(exc):
                raise
    return False, None
