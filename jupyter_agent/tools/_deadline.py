"""Running one tool call under a total deadline (docs/sandbox.md, "Deadlines").

A sync tool called on the main thread (a cell running a tool loop: the usual case) runs right
there, as a plain call, under a ``SIGALRM`` timer: at the deadline the timer raises inside the
tool, which also breaks a blocking ``sleep`` or read. Keeping the main thread matters in a
notebook: matplotlib figures, SQLite connections made in another cell and widgets all expect it.

Elsewhere (a parallel batch in worker threads, or a timer already in use) a Python function
cannot be stopped from outside, so the call runs in a daemon thread and the caller waits at
most that long: a sync tool still running then is *abandoned* (the caller reports the timeout
and moves on; an exception is raised inside it at its next Python instruction, which ends a busy
loop but not a blocking system call); an async tool is *cancelled* on its private event loop. A kernel interrupt (Ctrl-C) reaches the waiting thread
and is passed on to the tool the same way, so a tool that cleans up (``bash`` stops its
processes) gets a few seconds to do so.

A tool with no deadline (``timeout=math.inf``) runs in the caller's thread, as a plain
function call: for the rare tool that must run on the kernel's main thread.
"""

from __future__ import annotations

import asyncio
import contextvars
import math
import os
import signal
import threading
from collections.abc import Callable, Coroutine, Mapping
from types import FrameType

from ..base.errors import ConfigError
from ..base.interrupt import raise_in_thread

__all__ = ["DEFAULT_TOOL_TIMEOUT", "TOOL_TIMEOUT_ENV", "ToolTimeout", "call_with_deadline",
           "resolve_timeout"]

DEFAULT_TOOL_TIMEOUT = 300.0
"""Seconds a tool call may take when neither the tool nor the environment says otherwise."""
TOOL_TIMEOUT_ENV = "JUPYTER_AGENT_TOOL_TIMEOUT"
"""Environment variable overriding :data:`DEFAULT_TOOL_TIMEOUT` (seconds, or ``none``)."""
_INTERRUPT_GRACE = 5.0  # seconds an interrupted tool gets to clean up before we re-raise
_CANCEL_GRACE = 2.0  # seconds a cancelled coroutine gets to unwind


class ToolTimeout(Exception):
    """A tool call passed its deadline; ``how`` says what became of it."""

    def __init__(self, seconds: float, how: str) -> None:
        super().__init__(f"timed out after {seconds:g} s")
        self.seconds = seconds
        self.how = how
        """``interrupted`` (a main-thread call stopped by its timer), ``abandoned`` (a sync
        function left running in its thread) or ``cancelled`` (a coroutine)."""


class ToolAbandoned(BaseException):
    """Raised inside an abandoned tool's thread (a BaseException: ``except Exception`` in the
    tool does not swallow it)."""


def resolve_timeout(timeout: float | None) -> float | None:
    """The deadline in seconds for a tool declared with ``timeout``, or None for none.

    ``None`` means the package default (``JUPYTER_AGENT_TOOL_TIMEOUT``, else
    :data:`DEFAULT_TOOL_TIMEOUT`); ``math.inf`` means no deadline.

    Raises:
        ConfigError: ``JUPYTER_AGENT_TOOL_TIMEOUT`` is neither a positive number nor ``none``.
    """
    if timeout is None:
        raw = os.environ.get(TOOL_TIMEOUT_ENV, "").strip()
        if not raw:
            return DEFAULT_TOOL_TIMEOUT
        if raw.lower() in ("none", "inf"):
            return None
        try:
            timeout = float(raw)
        except ValueError:
            timeout = -1.0
        if not timeout > 0:
            raise ConfigError(f"{TOOL_TIMEOUT_ENV} must be a positive number of seconds or "
                              f"'none', not {raw!r}.")
    return None if math.isinf(timeout) else timeout


def _raise_in(thread: threading.Thread, exc: type[BaseException]) -> None:
    """Make ``thread`` raise ``exc`` at its next Python instruction (best effort)."""
    ident = thread.ident
    if ident is None:
        return
    raise_in_thread(ident, exc)


class _Box:
    """What a call in another thread left: its value or its error (and whether its deadline
    cancelled it)."""

    __slots__ = ("deadline", "error", "value")

    def __init__(self) -> None:
        self.value: object = None
        self.error: BaseException | None = None
        self.deadline = False


def call_with_deadline(fn: Callable[..., object], kwargs: Mapping[str, object],
                       limit: float | None, *, is_async: bool, name: str) -> object:
    """``fn(**kwargs)`` (awaited when ``is_async``) within ``limit`` seconds.

    Raises:
        ToolTimeout: the deadline passed.
        KeyboardInterrupt: the kernel was interrupted (after the tool had its chance to stop).
        Exception: whatever the tool raised.
    """
    if is_async:
        coro = fn(**kwargs)
        if not isinstance(coro, Coroutine):  # an async def always gives one
            raise TypeError(f"async tool {name} returned {type(coro).__name__}, not a coroutine")
        return _call_async(coro, limit, name)
    if limit is None:
        return fn(**kwargs)
    if _alarm_free():
        return _call_on_main_thread(fn, kwargs, limit)
    ctx = contextvars.copy_context()  # usage sinks and other context vars reach the thread
    runner = _Runner.take()
    box = _Box()
    done = threading.Event()
    runner.submit(lambda: ctx.run(fn, **kwargs), box, done, f"jupyter-agent-tool-{name}")
    _wait(done, limit, lambda: runner.raise_in(KeyboardInterrupt, done))
    if not done.is_set():
        runner.raise_in(ToolAbandoned, done)
        raise ToolTimeout(limit, "abandoned")
    return _unbox(box)


class _Runner:
    """A daemon thread that runs sync tool calls for callers off the main thread, one at a time.

    Reused: a batch runs a tool call per item from 32 worker threads, and a new thread per call
    cost a thread start each (the start waits for the new thread to get the interpreter lock).
    A runner an exception was raised into (a timeout, an interrupt) is *retired*: it never takes
    another call, so that exception can land nowhere but in the call it was meant for. An idle
    runner ends after :data:`_IDLE` seconds.
    """

    _lock = threading.Lock()
    _idle: list[_Runner] = []

    def __init__(self) -> None:
        self._go = threading.Event()
        self._job: tuple[Callable[[], object], _Box, threading.Event] | None = None
        self._retired = False
        self.thread = threading.Thread(target=self._loop, name="jupyter-agent-tool-runner",
                                       daemon=True)  # an abandoned call never blocks exit

    @classmethod
    def take(cls) -> _Runner:
        """An idle runner, or a new one."""
        with cls._lock:
            if cls._idle:
                return cls._idle.pop()
        runner = cls()
        runner.thread.start()
        return runner

    def submit(self, job: Callable[[], object], box: _Box, done: threading.Event,
               name: str) -> None:
        """Run ``job``: its value or error goes in ``box``, then ``done`` is set."""
        self._job = (job, box, done)
        self.thread.name = name
        self._go.set()

    def raise_in(self, exc: type[BaseException], done: threading.Event) -> None:
        """Raise ``exc`` in the call ``done`` belongs to, unless it ended, and retire."""
        with self._lock:
            if done.is_set():
                return
            self._retired = True
            _raise_in(self.thread, exc)

    def _loop(self) -> None:
        try:
            while True:
                if not self._go.wait(_IDLE):
                    if self._leave():
                        return
                    continue  # taken meanwhile: its call is being handed over
                self._go.clear()
                assert self._job is not None
                (job, box, done), self._job = self._job, None
                try:
                    box.value = job()
                except BaseException as exc:  # re-raised in the caller's thread
                    box.error = exc
                finally:
                    done.set()
                with self._lock:
                    if self._retired:
                        return
                    self.thread.name = "jupyter-agent-tool-runner"
                    self._idle.append(self)
        except BaseException:  # noqa: BLE001 - a late exception meant for a finished call
            return

    def _leave(self) -> bool:
        """Idle too long: leave the pool, unless a call was handed over meanwhile."""
        with self._lock:
            if self in self._idle:
                self._idle.remove(self)
                return True
        return False


_IDLE = 60.0
"""Seconds an idle tool runner waits for another call before its thread ends."""


class _DeadlineHit(BaseException):
    """Raised inside a main-thread tool by its timer (a BaseException: ``except Exception``
    in the tool does not swallow it)."""


def _alarm_free() -> bool:
    """True on the main thread when nothing else uses ``SIGALRM`` (nor an outer tool call)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "SIGALRM"):
        return False
    return signal.getsignal(signal.SIGALRM) in (signal.SIG_DFL, None)


def _call_on_main_thread(fn: Callable[..., object], kwargs: Mapping[str, object],
                         limit: float) -> object:
    armed = [True]

    def hit(signum: int, frame: FrameType | None) -> None:
        if not armed[0]:  # the call already ended: never raise into our own cleanup
            return
        # If the tool swallows it, fire again a little later.
        signal.setitimer(signal.ITIMER_REAL, _CANCEL_GRACE)
        raise _DeadlineHit()

    previous = signal.signal(signal.SIGALRM, hit)
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        return fn(**kwargs)
    except _DeadlineHit:
        raise ToolTimeout(limit, "interrupted") from None
    finally:
        armed[0] = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _wait(done: threading.Event, limit: float | None, interrupt: Callable[[], None]) -> None:
    """Wait up to ``limit`` s for the call to be ``done``; on Ctrl-C pass the interrupt on,
    give the tool time to clean up, and re-raise.

    An Event, not ``Thread.join``: a join interrupted by Ctrl-C can leave the thread looking
    finished while it still runs (CPython before 3.13).
    """
    try:
        done.wait(limit)
    except KeyboardInterrupt:
        if not done.is_set():
            interrupt()
            done.wait(_INTERRUPT_GRACE)
        raise


def _unbox(box: _Box) -> object:
    if box.error is not None:
        raise box.error
    return box.value


def _cancel(loop: asyncio.AbstractEventLoop, task: asyncio.Task[object]) -> None:
    try:
        loop.call_soon_threadsafe(task.cancel)
    except RuntimeError:  # the loop already finished and closed
        pass


def _call_async(coro: Coroutine[object, None, object], limit: float | None,
                name: str) -> object:
    """Run a coroutine on a private loop in a helper thread: the kernel's own loop is already
    running in this thread (no nest_asyncio)."""
    loop = asyncio.new_event_loop()
    task = loop.create_task(coro)  # the loop is not running yet, so this is safe here
    box = _Box()

    def hit_deadline() -> None:
        box.deadline = True
        task.cancel()

    done = threading.Event()

    def target() -> None:
        handle = loop.call_later(limit, hit_deadline) if limit is not None else None
        try:
            box.value = loop.run_until_complete(task)
        except BaseException as exc:
            box.error = exc
        finally:
            if handle is not None:
                handle.cancel()
            try:
                loop.run_until_complete(loop.shutdown_asyncgens())
            finally:
                loop.close()
                done.set()

    thread = threading.Thread(target=target, name=f"jupyter-agent-async-tool-{name}",
                              daemon=True)
    thread.start()
    wait = None if limit is None else limit + _CANCEL_GRACE
    _wait(done, wait, lambda: _cancel(loop, task))
    if not done.is_set():  # the coroutine blocks its loop (a sync call inside): abandon it
        _raise_in(thread, ToolAbandoned)
        raise ToolTimeout(limit or 0.0, "abandoned")
    if box.deadline and isinstance(box.error, asyncio.CancelledError):
        raise ToolTimeout(limit or 0.0, "cancelled")
    return _unbox(box)
