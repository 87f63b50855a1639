"""The built-in ``bash`` tool: run a shell command in the workspace, bounded in time and output.

The command runs as ``bash -c`` in a new session (so a kernel interrupt does not hit it and its
process group can be signalled as a whole), with the workspace root as working directory and
stdin closed. Nothing it started outlives the call: when the command ends, times out or is
interrupted, every process it left behind is stopped (see ``_procs``).
"""

from __future__ import annotations

import os
import re
import subprocess
import time
import uuid
from collections.abc import Mapping

from pydantic import BaseModel

from jupyter_agent.errors import ToolError
from jupyter_agent.tools.builtin._cap import DEFAULT_LIMIT, HeadTailBuffer
from jupyter_agent.tools.builtin._pipes import drain, pump
from jupyter_agent.tools.builtin._procs import ProcessTracker
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
"""Environment variable that tags every process of one command (see ``_procs``)."""
_SECRET_NAME = re.compile(r"(^|_)(API_KEY|APIKEY)$", re.IGNORECASE)
_DRAIN_GRACE = 2.0  # seconds to keep reading output after everything was stopped


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

    def to_text(self) -> str:
        """The tool result shown to the model."""
        parts = [self.output.rstrip("\n")] if self.output.strip() else ["(no output)"]
        if self.stopped_leftovers and not self.timed_out:
            parts.append(
                f"[{self.stopped_leftovers} background process(es) still running when the "
                "command ended were stopped: nothing outlives a bash call]"
            )
        if self.timed_out:
            parts.append(f"Command timed out after {_seconds(self.timeout)} s (killed)")
        else:
            parts.append(f"[exit code {self.exit_code}]")
        return "\n".join(parts)


def _seconds(value: float) -> str:
    return f"{value:g}"


def child_environment(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment a command gets: ours minus API keys.

    A model that runs ``env`` must not see the key of the model it is talking to: tool results
    are sent to the provider and saved in the store.
    """
    env = dict(os.environ if base is None else base)
    return {k: v for k, v in env.items() if not _SECRET_NAME.search(k)}


def run_command(command: str, *, cwd: str | os.PathLike[str], timeout: float = DEFAULT_TIMEOUT,
                limit: int = DEFAULT_LIMIT, env: Mapping[str, str] | None = None) -> CommandResult:
    """Run ``bash -c command`` and stop every process it started before returning.

    Args:
        command: The shell command.
        cwd: Working directory.
        timeout: Seconds before the command and all its processes are killed.
        limit: Characters of output kept (head and tail).
        env: Environment for the command; defaults to :func:`child_environment`.

    Raises:
        KeyboardInterrupt: re-raised after all processes of the command were stopped.
    """
    marker = f"{MARKER_VAR}={uuid.uuid4().hex}"
    child_env = child_environment() if env is None else dict(env)
    child_env[MARKER_VAR] = marker.split("=", 1)[1]
    buffer = HeadTailBuffer(limit)
    proc = subprocess.Popen(
        ["bash", "-c", command], cwd=os.fspath(cwd), env=child_env,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    assert proc.stdout is not None
    tracker = ProcessTracker(proc.pid, marker)
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
        raise
    proc.stdout.close()
    exit_code = proc.wait()
    return CommandResult(
        output=buffer.render(limit), exit_code=None if timed_out else exit_code,
        timed_out=timed_out, timeout=timeout, stopped_leftovers=leftovers,
    )


def bash(workspace: Workspace, command: str, timeout: float | None = None) -> str:
    """Run a bash command with the workspace as working directory.

    Output (stdout and stderr together) comes back with the exit code, cut in the middle when
    long. Background processes do not outlive the call.

    Args:
        workspace: The workspace whose root is the working directory.
        command: The command, run with ``bash -c``.
        timeout: Seconds before the command is killed (default 60, at most 600).
    """
    if not command.strip():
        raise ToolError("command is empty.")
    if timeout is None:
        timeout = DEFAULT_TIMEOUT
    if timeout <= 0:
        raise ToolError("timeout must be a positive number of seconds.")
    result = run_command(command, cwd=workspace.root, timeout=min(timeout, MAX_TIMEOUT))
    return result.to_text()
