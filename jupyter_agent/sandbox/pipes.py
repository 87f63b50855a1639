"""Reading a child's pipes under a deadline, shared by ``bash`` and the Python sandbox."""

from __future__ import annotations

import os
import selectors
import subprocess
import time
from typing import Protocol

from .procs import ProcessTracker

__all__ = ["Sink", "pump", "drain"]

POLL = 0.05
"""Seconds between checks of the deadline while the process is quiet."""
SNAPSHOT_EVERY = 0.2
"""Seconds between /proc snapshots of the process's descendants."""


class Sink(Protocol):
    """Where a pipe's bytes go (a capped buffer, or plain bytes)."""

    def feed(self, data: bytes) -> None:
        """Take one chunk."""


def pump(proc: subprocess.Popen[bytes], sinks: dict[int, Sink], tracker: ProcessTracker,
         deadline: float) -> bool:
    """Copy every pipe into its sink until ``proc`` exits (True) or the deadline passes (False).

    Waits for the process, not for end-of-file: a background child (``sleep 9 &``) can keep a
    pipe open long after the process is done.
    """
    next_snapshot = 0.0
    with selectors.DefaultSelector() as selector:
        for fd in sinks:
            selector.register(fd, selectors.EVENT_READ)
        while True:
            now = time.monotonic()
            if now >= deadline:
                return False
            if now >= next_snapshot:
                tracker.snapshot()
                next_snapshot = now + SNAPSHOT_EVERY
            wait = min(POLL, deadline - now)
            if selector.get_map():
                read_any = False
                for key, _ in selector.select(timeout=wait):
                    data = os.read(key.fd, 65536)
                    if data:
                        sinks[key.fd].feed(data)
                        read_any = True
                    else:
                        selector.unregister(key.fd)
                if read_any:
                    continue  # keep reading while output flows
            else:
                try:
                    proc.wait(timeout=wait)
                except subprocess.TimeoutExpired:
                    pass
            if proc.poll() is not None:
                return True


def drain(sinks: dict[int, Sink], deadline: float) -> None:
    """Read what is left in the pipes until end-of-file or the deadline."""
    with selectors.DefaultSelector() as selector:
        for fd in sinks:
            selector.register(fd, selectors.EVENT_READ)
        while selector.get_map() and (left := deadline - time.monotonic()) > 0:
            ready = selector.select(timeout=left)
            if not ready:
                return  # something we could not stop still holds a pipe: give up on it
            for key, _ in ready:
                data = os.read(key.fd, 65536)
                if data:
                    sinks[key.fd].feed(data)
                else:
                    selector.unregister(key.fd)
