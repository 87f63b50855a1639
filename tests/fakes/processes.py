"""Find the processes a test started, by a unique marker in their command line."""

from __future__ import annotations

import os
import random
import signal
from collections.abc import Iterator

import pytest

__all__ = ["marker", "running_with", "unique_marker"]


def unique_marker() -> str:
    """A unique sleep duration: it shows in the argv of the processes a test starts."""
    return f"1000.{random.randrange(10**8, 10**9)}"


def running_with(marker: str) -> list[int]:
    """Pids of live (non-zombie) processes whose command line contains ``marker``."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode()
            with open(f"/proc/{name}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in cmdline and state != "Z":
            found.append(int(name))
    return found


@pytest.fixture
def marker() -> Iterator[str]:
    """A unique marker; processes still carrying it after the test are killed (never leak
    processes from a failing test)."""
    m = unique_marker()
    yield m
    for pid in running_with(m):
        os.kill(pid, signal.SIGKILL)
