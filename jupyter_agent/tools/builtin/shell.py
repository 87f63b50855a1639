"""The built-in ``bash`` tool: run a shell command in the workspace, bounded in time and output.

When bubblewrap works here (see ``jupyter_agent.sandbox.bwrap`` and docs/sandbox.md) the command runs inside it:
the workspace read-write (minus its protected parts), the system read-only, no home folder, its
own PID and user namespaces, process and memory limits and, unless the workspace allows it, no
network. Otherwise it runs unconfined, and the tool description and
the approval card say so.

Either way the command runs as ``bash -c`` in a new session (so a kernel interrupt does not hit
it and its process group can be signalled as a whole), with the workspace root as working
directory, stdin closed and an environment without secret-looking variables
(:func:`jupyter_agent.base.secrets.scrub_env`). Nothing it started outlives the call: in the sandbox
the PID namespace ends with the command; unconfined, every process it left behind is found and
stopped (see ``jupyter_agent.sandbox.procs``).
"""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from collections.abc import Mapping

from pydantic import BaseModel

from jupyter_agent.base.errors import ToolError
from jupyter_agent.base.secrets import scrub_env
from jupyter_agent.sandbox import ChangedText, OverlayRun, Record, summary
from jupyter_agent.sandbox.bwrap import SandboxStatus, bwrap_command, sandbox_status
from jupyter_agent.sandbox.limits import PidsGroup, limits, ulimit_prefix
from jupyter_agent.sandbox.pipes import drain, pump
from jupyter_agent.sandbox.procs import ProcessTracker
from jupyter_agent.sandbox.seccomp import filter_fd
from jupyter_agent.tools.builtin.cap import DEFAULT_LIMIT, HeadTailBuffer
from jupyter_agent.tools.builtin.shadow import ImportFolders
from jupyter_agent.tools.builtin.workspace import Workspace

__all__ = [
    "DEFAULT_TIMEOUT",
    "MAX_TIMEOUT",
    "CommandResult",
    "bash",
    "child_environment",
    "run_command",
]

DEFAULT_TIMEOUT = 60.0
"""Seconds a command may run when the caller gives no timeout."""
MAX_TIMEOUT = 600.0
"""Upper bound on any requested timeout, so a model cannot block a cell for hours."""
MARKER_VAR = "JUPYTER_AGENT_COMMAND"
"""Environment variable that tags every process of one command (see ``jupyter_agent.sandbox.procs``)."""
_DRAIN_GRACE = 2.0  # seconds to keep reading output after everything was stopped

# Inside the sandbox: run the command in a child shell (without our counting pipe), then count
# the processes it left in the PID namespace (pid 1 is bwrap's init, $$ is this shell) and
# report the number on the counting pipe. They all die with the namespace when we exit.
_COUNTING_WRAPPER = r"""eval 'bash -c "$1" '"$2"'>&-'
rc=$?
n=0
for d in /proc/[0-9]*; do
  case ${d#/proc/} in 1|$$) continue ;; esac
  read -r st 2>/dev/null < "$d/stat" || continue
  st=${st##*) }
  [ "${st%% *}" = Z ] || n=$((n + 1))
done
echo "$n" >&"$2"
exit $rc
"""


class CommandResult(BaseModel):
    """What one command did, before it is turned into the tool's text."""

    output: str
    """stdout and stderr interleaved, already capped."""
    exit_code: int | None
    """The shell's exit code; None when it timed out."""
    timed_out: bool = False
    timeout: float
    """The time limit that applied, in seconds."""
    stopped_leftovers: int = 0
    """Processes still running when the command ended that were stopped."""
    confined: bool = False
    """True when the command ran inside the bubblewrap sandbox."""
    changes: list[str] = []
    """What the command changed in the workspace, what was held (``jupyter_agent.sandbox``),
    or why its changes were not checked."""
    checked: bool = False
    """True when the command ran over an overlay and its changes were checked."""
    record: Record | None = None
    """The record of its changes (the card's row: ``jupyter_agent.sandbox.card``)."""

    def to_text(self) -> str:
        """The tool result shown to the model."""
        parts = [self.output.rstrip("\n")] if self.output.strip() else ["(no output)"]
        if self.stopped_leftovers and not self.timed_out:
            parts.append(
                f"[{self.stopped_leftovers} background process(es) still running when the "
                "command ended were stopped: nothing outlives a bash call]"
            )
        if self.timed_out:
            parts.append(f"Command timed out after {_seconds(self.timeout)} s (killed; "
                         f"{_raise_hint(self.timeout, MAX_TIMEOUT)})")
        else:
            parts.append(f"[exit code {self.exit_code}]")
        return "\n".join([*parts, *self.changes])


def _seconds(value: float) -> str:
    return f"{value:g}"


def _raise_hint(seconds: float, most: float) -> str:
    """What the model can do about a time limit it set (the ``timeout`` argument)."""
    if seconds >= most:
        return f"{most:g} s is the most a call may take"
    return f"pass a larger timeout, at most {most:g} s"


def child_environment(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment a command gets: ours minus every secret-looking variable.

    A model that runs ``env`` must not see a key or token: tool results are sent to the
    provider and saved in the store. Names listed in ``JUPYTER_AGENT_ENV_ALLOW`` pass anyway
    (see :func:`jupyter_agent.base.secrets.scrub_env`).
    """
    return scrub_env(os.environ if base is None else base)


def run_command(command: str, *, cwd: str | os.PathLike[str], timeout: float = DEFAULT_TIMEOUT,
                limit: int = DEFAULT_LIMIT, env: Mapping[str, str] | None = None,
                sandbox: SandboxStatus | None = None,
                allow_network: bool = False, tool: str = "bash") -> CommandResult:
    """Run ``bash -c command`` and stop every process it started before returning.

    Args:
        command: The shell command.
        cwd: Working directory (the workspace root: the sandbox binds it read-write).
        timeout: Seconds before the command and all its processes are killed.
        limit: Characters of output kept (head and tail).
        env: Environment for the command; defaults to :func:`child_environment`.
        sandbox: Where to run it; a confined status runs it inside bubblewrap. Default:
            unconfined (callers that want the sandbox pass :func:`sandbox_status`).
        allow_network: Inside the sandbox, keep the network (it is cut off otherwise).
        tool: The tool's name, in the record of the command's changes.

    In the sandbox the command runs over an overlay of the workspace: its changes are applied
    afterwards, those that would take effect outside held for a person (docs/sandbox.md).

    Raises:
        ToolError: ``JUPYTER_AGENT_SANDBOX=require`` and no overlay can be had here.
        KeyboardInterrupt: re-raised after all processes of the command were stopped.

    Long: one command's life in order (start it in its own process group, read, time out,
    kill the group, drain the pipe), with the cleanup in one ``try``/``finally`` so that no
    path out of it leaves a process behind.
    """
    marker = uuid.uuid4().hex
    child_env = child_environment() if env is None else dict(env)
    child_env[MARKER_VAR] = marker
    confined = sandbox is not None and sandbox.bwrap is not None
    count_read = count_write = -1
    seccomp_fd: int | None = None
    group: PidsGroup | None = None
    run: OverlayRun | None = None
    changes: list[str] = []
    record: Record | None = None
    if confined:
        assert sandbox is not None and sandbox.bwrap is not None
        root = os.path.realpath(os.fspath(cwd))
        run, changes = _overlay(root, sandbox)
        # No home folder in the sandbox: HOME and TMPDIR point at its private /tmp.
        child_env["HOME"] = child_env["TMPDIR"] = "/tmp"
        memory_mb, processes = limits()
        seccomp_fd = None if allow_network else filter_fd()
        argv = [*bwrap_command(sandbox.bwrap, root, allow_network=allow_network,
                               userns=sandbox.userns, seccomp_fd=seccomp_fd,
                               tmp_mb=memory_mb, merged=run.merged if run else None),
                "bash", "-c", ulimit_prefix(memory_mb, processes) + _COUNTING_WRAPPER, "bash",
                command]
        if run is not None:
            argv = run.wrap(argv)
            child_env["PYTHONDONTWRITEBYTECODE"] = "1"  # a cached module would be held
        group = PidsGroup.create(processes, memory_mb)
        if group is not None:
            argv = group.wrap(argv)
        count_read, count_write = os.pipe()
        argv.append(str(count_write))
    else:
        argv = ["bash", "-c", command]
    buffer = HeadTailBuffer(limit)
    passed = tuple(fd for fd in (count_write, seccomp_fd) if fd is not None and fd >= 0)
    try:
        proc = subprocess.Popen(
            argv, cwd=os.fspath(cwd), env=child_env, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
            pass_fds=passed,
        )
    except BaseException:
        if confined:
            os.close(count_read)
        if group is not None:
            group.remove()
        if run is not None:
            run.abandon()
        raise
    finally:
        if confined:
            os.close(count_write)  # the child holds its own copy
        if seccomp_fd is not None:
            os.close(seccomp_fd)
    assert proc.stdout is not None
    tracker = ProcessTracker(proc.pid, f"{MARKER_VAR}={marker}")
    fd = proc.stdout.fileno()
    timed_out = False
    try:
        deadline = time.monotonic() + timeout
        timed_out = not pump(proc, {fd: buffer}, tracker, deadline)
        leftovers = tracker.kill_all()
        # Everything that held the pipe is gone now, so the rest is already in it.
        drain({fd: buffer}, time.monotonic() + _DRAIN_GRACE)
    except BaseException:
        # KeyboardInterrupt (kernel interrupt) or anything else: never leave processes behind.
        tracker.kill_all(grace=0.5)
        proc.stdout.close()
        proc.wait()
        if confined:
            os.close(count_read)
        if group is not None:
            group.remove()
        if run is not None:
            run.finish(tool, command)  # what it wrote before the interrupt is checked too
        raise
    proc.stdout.close()
    exit_code = proc.wait()
    if group is not None:
        group.remove_soon()
    if confined:
        # The wrapper's count, not the tracker's: the namespace may still be tearing down
        # (already-doomed processes) when bwrap has exited.
        counted = _read_count(count_read)
        leftovers = 0 if timed_out else counted
    if run is not None:
        record = run.finish(tool, command)
        changes = summary(record)
    return CommandResult(
        output=buffer.render(limit), exit_code=None if timed_out else exit_code,
        timed_out=timed_out, timeout=timeout, stopped_leftovers=leftovers, confined=confined,
        changes=changes, checked=run is not None, record=record,
    )


def _overlay(root: str, sandbox: SandboxStatus) -> tuple[OverlayRun | None, list[str]]:
    """The overlay a command runs over, or a note why there is none (refused when the
    sandbox is required: without it a command's files take effect unchecked)."""
    run = OverlayRun.start(root)
    if run is not None:
        return run, []
    why = OverlayRun.why_not(root) or "unknown"
    if sandbox.mode == "require":
        raise ToolError(f"The command was not run: its changes cannot be checked here ({why}) "
                        "and the sandbox is required.")
    return None, [f"[changes were not checked ({why}): files the command wrote took effect "
                  "directly]"]


def _read_count(fd: int) -> int:
    """The number the sandbox's wrapper wrote (0 if it wrote none, e.g. it was killed)."""
    try:
        os.set_blocking(fd, False)  # every writer is gone, but never risk a wait here
        data = os.read(fd, 64)
    except OSError:
        data = b""
    finally:
        os.close(fd)
    try:
        return max(0, int(data.strip() or b"0"))
    except ValueError:
        return 0


def bash(workspace: Workspace, command: str, timeout: float | None = None) -> str:
    """Run a bash command with the workspace as working directory.

    Output (stdout and stderr together) comes back with the exit code, cut in the middle when
    long. Background processes do not outlive the call. The command runs in the bubblewrap
    sandbox when it is available (network only if ``workspace.allow_network``).

    Args:
        workspace: The workspace whose root is the working directory.
        command: The command, run with ``bash -c``.
        timeout: Seconds before the command is killed (default 60, at most 600).

    Raises:
        ToolError: an empty command, a bad timeout, or ``JUPYTER_AGENT_SANDBOX=require``
            without a working sandbox.
    """
    if not command.strip():
        raise ToolError("command is empty.")
    if timeout is None:
        timeout = DEFAULT_TIMEOUT
    if timeout <= 0:
        raise ToolError("timeout must be a positive number of seconds.")
    workspace.check_root()
    status = sandbox_status()
    if status.mode == "require" and not status.confined:
        raise ToolError(f"bash was not run: the sandbox is required but unavailable "
                        f"({status.reason}).")
    # The snapshot lists the import folders: only needed when no overlay checks the changes.
    checked = status.confined and OverlayRun.why_not(str(workspace.root)) is None
    imports = None if checked else ImportFolders(str(workspace.root))
    result = run_command(command, cwd=workspace.root, timeout=min(timeout, MAX_TIMEOUT),
                         sandbox=status, allow_network=workspace.allow_network)
    # Without the overlay's check, a new module in the kernel's import folder that shadows an
    # installed one would run in the kernel, unsandboxed, at its next import (``shadow``).
    notes = imports.block_new_shadows() if imports is not None and not result.checked else []
    # The text is what the model reads; the record rides on it for the card only.
    return ChangedText.of(result.to_text() + "".join(f"\n{note}" for note in notes),
                          result.record)
