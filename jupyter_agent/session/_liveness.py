"""Which process owns a running run, and whether that process is still alive.

A run row in status ``running`` records its owner: pid, host name, boot id and the process's
start time. A process killed with SIGKILL (or a machine that lost power) never updates its
rows, so whoever opens the store next checks the owners and marks the dead ones'
runs ``interrupted``.

Why four fields and not just the pid: pids are reused, so a pid alone could name an unrelated
process that started later. The start time (``/proc/<pid>/stat`` field 22, clock ticks since
boot) tells a reused pid apart, and the boot id tells a reboot apart (ticks restart at 0).
A row owned by another host is never judged: its processes cannot be seen from here.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass

__all__ = ["Owner", "current_owner", "owner_is_dead"]


@dataclass(frozen=True)
class Owner:
    """The identity of a process, as stored in a run row."""

    pid: int
    host: str
    boot: str | None = None
    """``/proc/sys/kernel/random/boot_id`` (Linux), else ``None``."""
    start: str | None = None
    """Start time of the process in clock ticks since boot (Linux), else ``None``."""


_cached: Owner | None = None


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii", errors="replace") as fh:
            return fh.read()
    except OSError:
        return None


def _stat_fields(pid: int) -> list[str] | None:
    """Fields 3.. of ``/proc/<pid>/stat`` (state first); ``None`` when unreadable."""
    text = _read(f"/proc/{pid}/stat")
    if not text or ")" not in text:
        return None
    # The command name (field 2) is in parentheses and may itself hold spaces or ')'.
    return text[text.rindex(")") + 1:].split()


def _boot_id() -> str | None:
    text = _read("/proc/sys/kernel/random/boot_id")
    return text.strip() or None if text else None


def _start_ticks(pid: int) -> str | None:
    fields = _stat_fields(pid)
    return fields[19] if fields is not None and len(fields) > 19 else None


def current_owner() -> Owner:
    """This process's identity (recomputed after a fork: the child has its own pid)."""
    global _cached
    pid = os.getpid()
    if _cached is None or _cached.pid != pid:
        _cached = Owner(pid=pid, host=socket.gethostname(), boot=_boot_id(),
                        start=_start_ticks(pid))
    return _cached


def owner_is_dead(owner: Owner) -> bool:
    """True only when ``owner`` is certainly gone; any doubt counts as alive.

    Dead means: same host and a different boot id (the machine restarted), or no process with
    that pid, or a zombie (killed, not yet reaped by its parent), or a process with that pid
    that started at another time (the pid was reused).
    """
    me = current_owner()
    if owner.host != me.host:
        return False  # another machine (a shared file system): its processes are invisible
    if owner.boot and me.boot and owner.boot != me.boot:
        return True
    if owner.pid == me.pid:
        return bool(owner.start and me.start and owner.start != me.start)
    if os.name == "nt":
        return False  # os.kill there terminates the process instead of probing it
    try:
        os.kill(owner.pid, 0)  # signal 0: checks existence, sends nothing
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # exists, owned by another user
    except OSError:
        return False
    fields = _stat_fields(owner.pid)
    if fields is None:
        return False  # no /proc (macOS, Windows): the pid exists, so trust it
    if fields[0] in ("Z", "X"):
        return True
    start = fields[19] if len(fields) > 19 else None
    return bool(owner.start and start and owner.start != start)
