"""Finding and stopping every process a shell command started, through /proc.

Killing the command's process group is not enough: ``setsid`` (and daemonising double forks)
move a child into a new session, out of reach of ``killpg``. Three nets catch them:

1. the process group and session the command was started in (``start_new_session=True``);
2. a marker variable put in the command's environment, which every descendant inherits even
   after ``setsid``, ``nohup`` or a double fork, found in ``/proc/<pid>/environ``;
3. descendants seen while the command ran (parent links are snapshotted periodically, so a
   child that later lost its parent is still known).

Only a process that both clears its environment and is orphaned between two snapshots can
escape. Without /proc (macOS) only the process group is used.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass

__all__ = ["ProcessTracker", "proc_available"]

_PROC = "/proc"


def proc_available() -> bool:
    """True when /proc can list processes (Linux)."""
    return os.path.isfile(os.path.join(_PROC, "self", "stat"))


@dataclass(frozen=True)
class _Stat:
    pid: int
    state: str
    ppid: int
    pgrp: int
    session: int
    start: int
    """Start time in clock ticks since boot: (pid, start) names a process even if pids wrap."""


def _read_stat(pid: int) -> _Stat | None:
    try:
        with open(f"{_PROC}/{pid}/stat", "rb") as f:
            data = f.read().decode("utf-8", "replace")
    except OSError:
        return None
    # The command name is in parentheses and may itself contain spaces or ")".
    fields = data[data.rfind(")") + 2 :].split()
    try:
        return _Stat(pid, fields[0], int(fields[1]), int(fields[2]), int(fields[3]),
                     int(fields[19]))
    except (IndexError, ValueError):
        return None


def _all_stats() -> list[_Stat]:
    try:
        names = os.listdir(_PROC)
    except OSError:
        return []
    stats = (_read_stat(int(name)) for name in names if name.isdigit())
    return [s for s in stats if s is not None]


def _has_marker(pid: int, marker: bytes) -> bool:
    try:
        with open(f"{_PROC}/{pid}/environ", "rb") as f:
            return marker in f.read().split(b"\0")
    except OSError:  # another user's process, or gone already
        return False


class ProcessTracker:
    """Tracks the processes of one command and stops all of them on request.

    Args:
        leader: Pid of the command's first process, leader of its own session and group.
        marker: ``NAME=value`` placed in the command's environment.
    """

    def __init__(self, leader: int, marker: str) -> None:
        self.leader = leader
        self.marker = marker.encode()
        self.known: dict[int, int] = {}  # pid -> start time
        self._me = os.getpid()

    def snapshot(self) -> None:
        """Record the current descendants of the leader (and of processes already known)."""
        if not proc_available():
            return
        stats = _all_stats()
        children: dict[int, list[_Stat]] = {}
        for s in stats:
            children.setdefault(s.ppid, []).append(s)
        todo = [self.leader, *self.known]
        seen: set[int] = set()
        while todo:
            pid = todo.pop()
            if pid in seen:
                continue
            seen.add(pid)
            for child in children.get(pid, ()):
                self.known.setdefault(child.pid, child.start)
                todo.append(child.pid)

    def living(self) -> list[_Stat]:
        """Processes of this command that are still running (zombies do not count)."""
        if not proc_available():
            return []
        found: list[_Stat] = []
        for s in _all_stats():
            if s.pid == self._me or s.state == "Z":
                continue
            ours = (
                s.pgrp == self.leader
                or s.session == self.leader
                or self.known.get(s.pid) == s.start
                or _has_marker(s.pid, self.marker)
            )
            if ours:
                found.append(s)
        return found

    def kill_all(self, grace: float = 1.0) -> int:
        """SIGTERM every process of the command, then SIGKILL what is left after ``grace`` s.

        Returns:
            How many processes other than the leader were found running (for the result note).
        """
        self.snapshot()
        first = self.living()
        others = sum(1 for s in first if s.pid != self.leader)
        self._signal(first, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            if not self._still_there():
                return others
            time.sleep(0.02)
        # Repeat: a process may have forked while we were terminating its parent.
        for _ in range(5):
            rest = self.living()
            if not rest and not self._group_alive():
                break
            self._signal(rest, signal.SIGKILL)
            time.sleep(0.05)
        return others

    def _still_there(self) -> bool:
        if proc_available():
            return bool(self.living())
        return self._group_alive()

    def _group_alive(self) -> bool:
        try:
            os.killpg(self.leader, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return not proc_available()  # with /proc, living() already covers the group

    def _signal(self, stats: list[_Stat], sig: signal.Signals) -> None:
        try:
            os.killpg(self.leader, sig)
        except (ProcessLookupError, PermissionError):
            pass
        for s in stats:
            current = _read_stat(s.pid)
            if current is None or current.start != s.start:
                continue  # gone, or the pid now names another process
            try:
                os.kill(s.pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
