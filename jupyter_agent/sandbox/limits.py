"""How many processes and how much memory a sandboxed command may use (docs/sandbox.md).

Two mechanisms, because one does not cover every kernel:

* resource limits set by the command's own shell inside the sandbox (``ulimit``): an
  address-space limit per process (``RLIMIT_AS``) and a process count (``RLIMIT_NPROC``), hard
  limits the command cannot raise again. In the sandbox's user namespace the count covers
  only the sandbox's processes. Linux never applies ``RLIMIT_NPROC`` to host uid 0, though,
  and inside the user namespace a root kernel's command is still uid 0 to the host.
* so when the kernel runs as root, a ``pids`` control group (cgroup v1 or v2), made inside the
  kernel's own group, caps the count; the command joins it before bubblewrap starts and it is
  removed when the call ends. Where no
  such group can be made (a container with a read-only ``/sys/fs/cgroup``) the count is not
  capped for a root kernel, and docs/sandbox.md says so.

``JUPYTER_AGENT_SANDBOX_MEMORY_MB`` and ``JUPYTER_AGENT_SANDBOX_PROCESSES`` change the figures.
"""

from __future__ import annotations

import os
import threading
import time
import uuid

from jupyter_agent.base.errors import ConfigError

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


def _own_groups() -> dict[str, str]:
    """This process's cgroup path per hierarchy ("pids" for v1, "" for v2)."""
    found: dict[str, str] = {}
    try:
        with open("/proc/self/cgroup", encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError:
        return found
    for line in lines:
        _id, controllers, path = line.split(":", 2)
        for name in controllers.split(",") if controllers else [""]:
            found[name] = path
    return found


def _pids_parents() -> list[str]:
    return _parents("pids")


def _parents(controller: str) -> list[str]:
    """Folders under which a ``pids`` group for a command can be made, from mountinfo.

    Always under our own group, never above it: moving the command out of the kernel's group
    would free it from the limits a container or a login session puts there. cgroup v2 allows
    a child with controllers only where no process lives, so there it works only when our group
    is the root of the hierarchy (a container's own namespace, or a kernel in the root group).
    """
    own = _own_groups()
    found: list[str] = []
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
        mount_root, point, fstype = fields[3], fields[4], tail[0]
        if fstype == "cgroup" and controller in tail[2].split(",") and controller in own:
            rel = os.path.relpath(own[controller], mount_root) if mount_root != "/" else \
                own[controller].lstrip("/")
            if not rel.startswith(".."):
                found.append(os.path.normpath(os.path.join(point, rel)))
        elif fstype == "cgroup2" and own.get("") == "/":
            try:
                with open(os.path.join(point, "cgroup.subtree_control"), encoding="utf-8") as f:
                    if controller in f.read().split():
                        found.append(point)
            except OSError:
                continue
    return found


TREE_FACTOR = 3
"""The whole process tree's memory cap, in memory figures (docs/sandbox.md, "Limits")."""


def _write(path: str, value: str) -> None:
    with open(path, "w", encoding="ascii") as f:
        f.write(value)


def _rmdir_quiet(path: str) -> bool:
    try:
        os.rmdir(path)
        return True
    except FileNotFoundError:
        return True
    except OSError:
        return False


class PidsGroup:
    """A ``pids`` control group for one command (only made when the kernel runs as root)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.procs = os.path.join(path, "cgroup.procs")
        self.others: list[str] = []
        """Further groups the command joins (a cgroup v1 ``memory`` group)."""
        self.memory_bound = False
        """The whole process tree's memory is capped (``memory.max`` or v1's limit)."""

    @classmethod
    def create(cls, processes: int, memory_mb: int | None = None) -> PidsGroup | None:
        """A new group capped at ``processes`` (and, where the kernel lets us make one, the
        whole tree's memory at ``memory_mb``), or None where none can be made."""
        if not hasattr(os, "geteuid") or os.geteuid() != 0:
            return None  # RLIMIT_NPROC does the job for any other uid
        for parent in _pids_parents():
            path = os.path.join(parent, _PREFIX + uuid.uuid4().hex[:12])
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
            if memory_mb is not None:
                # One process's figure plus the two memory-backed folders (``/tmp``,
                # ``/dev/shm``, each capped at the figure): a full tmpfs still says "No space
                # left" rather than killing the command.
                group._bound_memory(TREE_FACTOR * memory_mb * 1024 * 1024)
            return group
        return None

    def _bound_memory(self, limit: int) -> None:
        """Cap the memory of every process of the command together (page cache and the
        sandbox's tmpfs files included): ``memory.max`` beside ``pids.max`` on cgroup v2,
        a group of the v1 ``memory`` hierarchy otherwise. Without one, only the per-process
        address-space limit holds (docs/sandbox.md)."""
        v2 = os.path.join(self.path, "memory.max")
        if os.path.exists(v2):
            try:
                _write(v2, str(limit))
                swap = os.path.join(self.path, "memory.swap.max")
                if os.path.exists(swap):
                    _write(swap, "0")
                self.memory_bound = True
            except OSError:
                pass
            return
        for parent in _parents("memory"):
            path = os.path.join(parent, os.path.basename(self.path))
            try:
                os.mkdir(path, 0o755)
            except OSError:
                continue
            try:
                _write(os.path.join(path, "memory.limit_in_bytes"), str(limit))
                memsw = os.path.join(path, "memory.memsw.limit_in_bytes")
                if os.path.exists(memsw):
                    _write(memsw, str(limit))
            except OSError:
                _rmdir_quiet(path)
                continue
            self.others.append(path)
            self.memory_bound = True
            return

    def wrap(self, argv: list[str]) -> list[str]:
        """``argv`` run by a shell that first moves itself into the group (its children,
        bubblewrap and everything in the sandbox, are then counted)."""
        joins = " && ".join(f'echo $$ > "${i + 1}"' for i in range(len(self.others)))
        script = 'echo $$ > "$0"' + (" && " + joins if joins else "")
        if self.others:
            script += f" && shift {len(self.others)}"
        return ["/bin/sh", "-c", script + ' && exec "$@"', self.procs,
                *(os.path.join(p, "cgroup.procs") for p in self.others), *argv]

    def remove_soon(self) -> None:
        """Remove the group now if it is empty, else from a background thread: the sandbox's
        namespace takes a few milliseconds to end after the command, which the caller need
        not wait for (an empty group holds nothing)."""
        for other in self.others:
            _rmdir_quiet(other)
        try:
            os.rmdir(self.path)
            if not any(os.path.isdir(o) for o in self.others):
                return
        except OSError:
            pass
        threading.Thread(target=self.remove, name="jupyter-agent-pids-group",
                         daemon=True).start()

    def remove(self, wait: float = 2.0) -> None:
        """Remove the group once its last process is gone (the namespace ends shortly after
        the command)."""
        deadline = time.monotonic() + wait
        for other in self.others:  # v1 memory groups: emptied with the same processes
            while os.path.isdir(other) and not _rmdir_quiet(other) \
                    and time.monotonic() < deadline:
                time.sleep(0.02)
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
