"""One back-off shared by every request to a server: a 429 or 5xx pauses them all.

Many threads calling one API (a batch at ``concurrency=32``) must not each retry on their own
schedule: after a 429 the server has said "not now", and thirty-one other workers sending
their next request anyway only earns more 429s. So the client (``llm/client.py``) waits on the
server's limiter before every attempt, and a 429 or 5xx *pauses* the limiter for the
server's ``Retry-After`` (else the client's backoff delay): every worker of the process waits
until that moment, then all go on. The pause only ever moves later, never earlier.

One limiter per base URL (requests to another provider are not held up). The waits are short
sleeps in a loop, so a kernel interrupt (``KeyboardInterrupt``) still reaches a waiting call.
"""

from __future__ import annotations

import threading
import time

from ..base.state import STATE

__all__ = ["Limiter", "limiter_for", "reset_limiters"]

_TICK = 0.05
"""Longest single sleep while paused: a kernel interrupt is seen within this time."""


class Limiter:
    """A pause shared by every request to one server."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._until = 0.0  # time.monotonic() before which no request may start
        self.pauses = 0
        """How many times a response paused the limiter (for tests and benchmarks)."""

    def pause(self, seconds: float) -> None:
        """No request may start for ``seconds`` from now (extends, never shortens, a pause)."""
        if seconds <= 0:
            return
        until = time.monotonic() + seconds
        with self._lock:
            self.pauses += 1
            if until > self._until:
                self._until = until

    def remaining(self) -> float:
        """Seconds left in the current pause (0 when requests may go)."""
        return max(0.0, self._until - time.monotonic())

    def wait(self) -> float:
        """Block until the pause (if any) is over; returns the seconds waited."""
        waited = 0.0
        while True:
            left = self._until - time.monotonic()  # a float read: no lock needed
            if left <= 0:
                return waited
            step = min(left, _TICK)
            time.sleep(step)
            waited += step


# A slot of the process state (reset between tests: a new server on a reused port starts
# unpaused).
_limiters: dict[str, Limiter] = STATE.slot("llm.limiters", dict)
_lock = threading.Lock()


def limiter_for(base_url: str | None) -> Limiter:
    """The limiter of the server at ``base_url`` (one per URL, for the whole process)."""
    key = (base_url or "").rstrip("/")
    limiter = _limiters.get(key)
    if limiter is None:
        with _lock:
            limiter = _limiters.setdefault(key, Limiter())
    return limiter


def reset_limiters() -> None:
    """Forget every pause (tests; a new server on a reused port starts unpaused)."""
    with _lock:
        _limiters.clear()
