"""How many processes and how much memory a sandboxed command may use (docs/sandbox.md).

Two mechanisms, because one does not cover every kernel:

* resource limits set by the command's own shell inside the sandbox (``ulimit``): an
  address-space limit per process (``RLIMIT_AS``) and a process count (``RLIMIT_NPROC``), hard
  limits the command cannot raise again. In the sandbox's user namespace the count covers
  only the sandbox's processes. Linux never applies ``RLIMIT_NPROC`` to host uid 0, though,
  and inside the user namespace a root kernel's command is still uid 0 to the host.
* so when the kernel runs as root, a ``pids`` control group (cgroup v1 or v2) caps the count;
  the command joins it before bubblewrap starts and it is removed when the call ends. Where no
  such group can be made (a container with a read-only ``/sys/fs/cgroup``) the count is not
  capped for a root kernel, and docs/sandbox.md says so.

``JUPYTER_AGENT_SANDBOX_MEMORY_MB`` and ``JUPYTER_AGENT_SANDBOX_PROCESSES`` change the figures.
"""

from __future__ import annotations

import os
import time
import uuid

from jupyter_agent.errors import ConfigError

__all__ = ["MAX_PROCESSES", "MEMORY_MB", "PROCESSES_ENV", "MEMORY_ENV", "PidsGroup",
           "limits", "ulimit_prefix"]

MEMORY_MB = 2048
"""Default address-space limit of each process in the sandbox, in MB."""
MAX_PROCESSES = 256
"""Default number of processes (threads count too) the sandbox may hold at once."""
MEMORY_ENV = "JUPYTER_AGENT_SANDBOX_MEMORY_MB"
PROCESSES_ENV = "JUPYTER_AGENT_SANDBOX_PROCESSES"
_PREFIX = "jupyter-agent-"


def _read(name: str, default: int, minimum: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a whole number, not {raw!r}.") from None
    if value < minimum:
        raise ConfigError(f"{name} must be at least {minimum}, not {value}.")
    return value


def limits() -> tuple[int, int]:
    """(memory in MB per process, process count) for the next sandboxed command.

    Raises:
        ConfigError: one of the two variables is not a number or is too small.
    """
    return _read(MEMORY_ENV, MEMORY_MB, 64), _read(PROCESSES_ENV, MAX_PROCESSES, 8)


def ulimit_prefix(memory_mb: int, processes: int) -> str:
    """Shell text that sets both limits (soft and hard) for the shell and all it starts.

    A limit already lower stays (raising it would fail, and lower is what we want)."""
    return (f"ulimit -v {memory_mb * 1024} 2>/dev/null\n"
            f"ulimit -u {processes} 2>/dev/null\n")


def _pids_roots() -> list[tuple[str, bool]]:
    """(mount point, is v2) of the ``pids`` controller's hierarchies, from mountinfo."""
    found: list[tuple[str, bool]] = []
    try:
        with open("/proc/self/mountinfo", encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError:
        return found
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3:
            continue
        point, fstype, opts = fields[4], tail[0], tail[2].split(",")
        if fstype == "cgroup" and "pids" in opts:
            found.append((point, False))
        elif fstype == "cgroup2":
            try:
                with open(os.path.join(point, "cgroup.subtree_control"), encoding="utf-8") as f:
                    if "pids" in f.read().split():
                        found.append((point, True))
            except OSError:
                continue
    return found


class PidsGroup:
    """A ``pids`` control group for one command (only made when the kernel runs as root)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.procs = os.path.join(path, "cgroup.procs")

    @classmethod
    def create(cls, processes: int) -> PidsGroup | None:
        """A new group capped at ``processes``, or None where none can be made."""
        if not hasattr(os, "geteuid") or os.geteuid() != 0:
            return None  # RLIMIT_NPROC does the job for any other uid
        for root, _v2 in _pids_roots():
            path = os.path.join(root, _PREFIX + uuid.uuid4().hex[:12])
            try:
                os.mkdir(path, 0o755)
            except OSError:
                continue
            group = cls(path)
            try:
                with open(os.path.join(path, "pids.max"), "w", encoding="ascii") as f:
                    f.write(str(processes))
            except OSError:
                group.remove()
                continue
            return group
        return None

    def wrap(self, argv: list[str]) -> list[str]:
        """``argv`` run by a shell that first moves itself into the group (its children,
        bubblewrap and everything in the sandbox, are then counted)."""
        return ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', self.procs, *argv]

    def remove(self, wait: float = 2.0) -> None:
        """Remove the group once its last process is gone (the namespace ends shortly after
        the command)."""
        deadline = time.monotonic() + wait
        while True:
            try:
                os.rmdir(self.path)
                return
            except FileNotFoundError:
                return
            except OSError:
                if time.monotonic() >= deadline:
                    return  # still busy: left for the kernel; empty groups cost nothing
                time.sleep(0.02)
