"""A sandboxed Python code tool: each call runs the code in a fresh, separate process.

``python_sandbox("data/")`` returns a ``sandbox_python`` tool (named apart from the notebook's
``run_python``, which runs code in the live kernel: docs/notebook-tools.md). The code runs as ``python -I`` (no
user site, no ``PYTHONPATH``) with the workspace as working directory, stdin closed, every
secret-looking variable removed from the environment (the rule ``bash`` follows:
:func:`jupyter_agent.base.secrets.scrub_env`), a wall-clock timeout after which the process and
everything it started are killed, and an address-space limit (``RLIMIT_AS``, Unix) so a runaway
allocation fails with ``MemoryError`` instead of taking the machine down. Like a notebook cell, the value
of the last line, when it is an expression, comes back as ``result`` (its ``repr``).

When bubblewrap works here (docs/sandbox.md) the process runs inside the same sandbox as
``bash``: only system folders, the kernel's Python (read-only) and the workspace (minus its
protected parts) exist, in its own PID and user namespaces, with no network unless
``allow_network``. Without bubblewrap (or when the kernel's Python cannot be shown in it: it
lives in a workspace that is the home folder) it confines time, memory and the working directory only: the
code can do what the user can. Either way the tool asks for approval by default, like
``bash``, and is denied in a read-only workspace.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import uuid
from functools import lru_cache
from pathlib import Path
from typing import IO

from pydantic import BaseModel, PrivateAttr

from ..base.errors import ConfigError, ToolError
from ..base.jsontypes import JSONValue
from ..sandbox import OverlayRun, Record, summary
from ..sandbox.bwrap import bwrap_command, python_binds, sandbox_status
from ..sandbox.limits import PidsGroup, limits
from ..sandbox.pipes import Sink, drain, pump
from ..sandbox.procs import ProcessTracker
from ..sandbox.seccomp import filter_fd
from ..tools.builtin.cap import DEFAULT_LIMIT, HeadTailBuffer
from ..tools.builtin.shadow import ImportFolders
from ..tools.builtin.shell import MARKER_VAR, child_environment
from ..tools.registry import AnyTool, ToolResult

__all__ = ["DEFAULT_TIMEOUT", "DEFAULT_MEMORY_MB", "MIN_MEMORY_MB", "SandboxResult",
           "python_sandbox", "run_python_code"]

DEFAULT_TIMEOUT = 10.0
"""Seconds a call may run before it is killed."""
DEFAULT_MEMORY_MB = 512
"""Address-space limit of the code's process, in MB."""
MIN_MEMORY_MB = 64
"""Below this the interpreter itself may not start."""
_DRAIN_GRACE = 2.0
_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
_MEMORY_SIGNS = ("MemoryError", "Cannot allocate memory", "bad_alloc", "out of memory")


class SandboxResult(BaseModel):
    """What one ``run_python`` call did (the model reads it as JSON)."""

    stdout: str = ""
    """Everything printed, cut in the middle when long."""
    stderr: str = ""
    """Warnings and other stderr output, cut in the middle when long."""
    result: str | None = None
    """``repr`` of the last line's value when it is an expression (None otherwise)."""
    error: str | None = None
    """The traceback, or why the code was stopped (timeout, memory limit); None on success."""
    timed_out: bool = False
    killed_for_memory: bool = False
    _record: Record | None = PrivateAttr(default=None)

    @property
    def record(self) -> Record | None:
        """The record of what the code changed in the workspace (for the card; not in the
        JSON the model reads)."""
        return self._record


class _Bytes(bytearray):
    """The result pipe's bytes, kept whole (the runner caps what it writes)."""

    def feed(self, data: bytes) -> None:
        """Append a chunk."""
        self.extend(data)


_Buffers = dict[int, Sink]
"""Pipe file descriptor -> where its bytes go."""


@lru_cache(maxsize=1)
def _runner_source() -> str:
    return (Path(__file__).with_name("_sandbox_runner.py")).read_text(encoding="utf-8")


def _feed(stream: IO[bytes], data: bytes) -> None:
    """Write the code to the child's stdin from a thread: a big script must not block us."""
    try:
        stream.write(data)
    except OSError:  # the child died before reading it all
        pass
    finally:
        try:
            stream.close()
        except OSError:
            pass


def _check_limits(timeout: float, memory_mb: int | None) -> None:
    if not timeout or timeout <= 0:
        raise ConfigError("The sandbox timeout must be a positive number of seconds.")
    if memory_mb is not None and memory_mb < MIN_MEMORY_MB:
        raise ConfigError(f"The sandbox memory limit must be at least {MIN_MEMORY_MB} MB "
                          "(or None for no limit).")


def _workspace(workspace: str | os.PathLike[str]) -> Path:
    raw = os.path.expanduser(os.fspath(workspace))
    if not os.path.isdir(raw):
        raise ConfigError(f"Sandbox workspace folder does not exist: {raw}")
    return Path(os.path.realpath(raw))


def _confinement(cwd: Path, allow_network: bool,
                 merged: str | None = None) -> tuple[list[str], int | None]:
    """The bubblewrap prefix for the code's process (empty when it runs unconfined) and the
    seccomp filter's descriptor to pass (closed by the caller); ``merged``: the overlay to
    bind at the workspace's path."""
    status = sandbox_status()
    if status.mode == "require" and not status.confined:
        raise ToolError(f"The code was not run: the sandbox is required but unavailable "
                        f"({status.reason}).")
    extra = python_binds(str(cwd)) if status.confined else None
    if extra is None:
        return [], None
    assert status.bwrap is not None
    fd = None if allow_network else filter_fd()
    return bwrap_command(status.bwrap, cwd, allow_network=allow_network, userns=status.userns,
                         seccomp_fd=fd, extra_ro=extra, tmp_mb=limits()[0], merged=merged), fd


def _overlay(cwd: Path) -> tuple[OverlayRun | None, list[str]]:
    """The overlay the code runs over (docs/sandbox.md), or a note why there is none."""
    status = sandbox_status()
    if not status.confined:
        return None, []
    run = OverlayRun.start(str(cwd))
    if run is not None:
        return run, []
    why = OverlayRun.why_not(str(cwd)) or "unknown"
    if status.mode == "require":
        raise ToolError(f"The code was not run: its changes cannot be checked here ({why}) "
                        "and the sandbox is required.")
    return None, [f"[changes were not checked ({why}): files the code wrote took effect "
                  "directly]"]


def run_python_code(code: str, *, workspace: str | os.PathLike[str] = ".",
                    timeout: float = DEFAULT_TIMEOUT, memory_mb: int | None = DEFAULT_MEMORY_MB,
                    limit: int = DEFAULT_LIMIT, allow_network: bool = False) -> SandboxResult:
    """Run ``code`` in a fresh ``python -I`` process and return what it did.

    Args:
        code: Python source; its last line's value (an expression) becomes ``result``.
        workspace: Working directory (must exist).
        timeout: Seconds before the process and every process it started are killed.
        memory_mb: Address-space limit in MB (``None``: no limit; only Unix enforces it).
        limit: Characters kept of stdout, of stderr and of the result (head and tail).
        allow_network: In the bubblewrap sandbox, keep the network (cut off otherwise).

    Raises:
        KeyboardInterrupt: re-raised after every process of the code was stopped.

    Long: one sequence of start, pump and clean-up whose ``finally`` blocks must see every
    resource it made (pipes, the seccomp descriptor, the pids group, the import folders).
    """
    _check_limits(timeout, memory_mb)
    cwd = _workspace(workspace)
    marker_value = uuid.uuid4().hex
    env = child_environment()
    env[MARKER_VAR] = marker_value
    if memory_mb is not None:
        # Under an address-space limit every thread's stack and malloc arena counts: numeric
        # libraries that start one thread per core fail to import. One thread each fits.
        for var in _THREAD_VARS:
            env.setdefault(var, "1")
        env.setdefault("MALLOC_ARENA_MAX", "2")
    run, change_notes = _overlay(cwd)
    record: Record | None = None
    prefix, seccomp_fd = _confinement(cwd, allow_network, run.merged if run else None)
    if not prefix and run is not None:
        run.abandon()
        run, change_notes = None, []
    # Without the overlay's check: a module planted for the kernel to import (``shadow``).
    imports = ImportFolders(str(cwd)) if run is None else None
    if prefix:
        env["HOME"] = env["TMPDIR"] = "/tmp"  # no home folder in the sandbox
    result_read, result_write = os.pipe()
    max_bytes = 0 if memory_mb is None else memory_mb * 1024 * 1024
    passed = (result_write,) if seccomp_fd is None else (result_write, seccomp_fd)
    argv = [sys.executable, "-I", "-c", _runner_source(), str(result_write), str(max_bytes),
            str(limit)]
    group = None
    if prefix:  # the same process limit as bash (a pids cgroup too when the kernel is root)
        processes = limits()[1]
        argv = [*prefix, *argv, str(processes)]
        if run is not None:
            argv = run.wrap(argv)
            env["PYTHONDONTWRITEBYTECODE"] = "1"  # a cached module would be held
        group = PidsGroup.create(processes, memory_mb)
        if group is not None:
            argv = group.wrap(argv)
    try:
        proc = subprocess.Popen(
            argv,
            cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, start_new_session=True, pass_fds=passed)
    except BaseException:
        os.close(result_read)
        if group is not None:
            group.remove()
        if run is not None:
            run.abandon()
        raise
    finally:
        os.close(result_write)  # the child holds its own copy; EOF comes when it exits
        if seccomp_fd is not None:
            os.close(seccomp_fd)
    assert proc.stdout is not None and proc.stderr is not None
    threading.Thread(target=_feed, args=(proc.stdin, code.encode("utf-8", "surrogatepass")),
                     name="jupyter-agent-sandbox-stdin", daemon=True).start()
    tracker = ProcessTracker(proc.pid, f"{MARKER_VAR}={marker_value}")
    out, err, res = HeadTailBuffer(limit), HeadTailBuffer(limit), _Bytes()
    buffers: _Buffers = {proc.stdout.fileno(): out, proc.stderr.fileno(): err, result_read: res}
    try:
        finished = pump(proc, buffers, tracker, time.monotonic() + timeout)
        tracker.kill_all()  # a timeout, or children left running after the code ended
        drain(buffers, time.monotonic() + _DRAIN_GRACE)
    except BaseException:
        tracker.kill_all(grace=0.5)
        raise
    finally:
        proc.stdout.close()
        proc.stderr.close()
        os.close(result_read)
        exit_code = proc.wait()
        if group is not None:
            group.remove()
        if run is not None:  # also after an interrupt: what it wrote is checked
            record = run.finish("sandbox_python", code)
            change_notes = summary(record)
    lines = [*change_notes, *(imports.block_new_shadows() if imports is not None else [])]
    notes = "".join(f"\n{note}" for note in lines)
    result = _result(out.render(limit), err.render(limit) + notes, bytes(res),
                     timed_out=not finished, exit_code=exit_code, timeout=timeout,
                     memory_mb=memory_mb)
    if record is not None and (record.applied or record.held):  # else equal to a plain result
        result._record = record
    return result


def _result(stdout: str, stderr: str, raw: bytes, *, timed_out: bool, exit_code: int,
            timeout: float, memory_mb: int | None) -> SandboxResult:
    try:
        decoded: JSONValue = json.loads(raw.decode("utf-8")) if raw else None
    except ValueError:
        decoded = None  # cut off by a kill mid-write
    payload = decoded if isinstance(decoded, dict) else None
    r = SandboxResult(stdout=stdout, stderr=stderr, timed_out=timed_out)
    if timed_out:
        r.error = (f"Code timed out after {timeout:g} s (killed; raise it with "
                   "python_sandbox(timeout=...))")
        return r
    memory = bool(payload and payload.get("memory_error")) or (
        payload is None and memory_mb is not None and any(s in stderr for s in _MEMORY_SIGNS))
    if memory:
        r.killed_for_memory = True
        r.error = f"Code exceeded the memory limit of {memory_mb} MB"
        return r
    if payload is None:
        how = f"signal {-exit_code}" if exit_code < 0 else f"exit code {exit_code}"
        r.error = f"The Python process ended without a result ({how})."
        return r
    result, error = payload.get("result"), payload.get("error")
    r.result = result if isinstance(result, str) else None
    r.error = error if isinstance(error, str) else None
    return r


class _SandboxTool(AnyTool):
    """``sandbox_python``: a failed, timed-out or out-of-memory run is marked as an error."""

    def invoke(self, arguments: str) -> ToolResult:
        """Run the code; the model reads the :class:`SandboxResult` as JSON."""
        result = super().invoke(arguments)
        if isinstance(result.value, SandboxResult) and result.value.error:
            result.error = result.value.error.splitlines()[-1][:300]
        return result


def python_sandbox(workspace: str | os.PathLike[str] = ".", timeout: float = DEFAULT_TIMEOUT,
                   memory_mb: int | None = DEFAULT_MEMORY_MB, *, name: str = "sandbox_python",
                   limit: int = DEFAULT_LIMIT, requires_approval: bool = True,
                   allow_network: bool = False) -> AnyTool:
    """A tool that runs Python code in a separate process, confined in time and memory.

    Args:
        workspace: The code's working directory (resolved now; must exist).
        timeout: Seconds per call before the process (and its children) are killed.
        memory_mb: Address-space limit per call, in MB (``None``: no limit).
        name: Tool name.
        limit: Characters kept of stdout, stderr and the result.
        requires_approval: Ask the user before each call (default, like ``bash``).
        allow_network: Keep the network inside the bubblewrap sandbox (cut off by default;
            without bubblewrap the code always has it).

    Raises:
        ConfigError: the workspace does not exist, or a limit is invalid.
    """
    _check_limits(timeout, memory_mb)
    root = _workspace(workspace)
    memory = "no memory limit" if memory_mb is None else f"{memory_mb} MB of memory"
    description = (
        "Run Python code in a fresh, separate process whose working directory is the workspace "
        f"folder; it may run {timeout:g} s and use {memory}. Returns JSON with stdout, stderr, "
        "result (the repr of the last line when it is an expression, like a notebook cell), "
        "error (the traceback), timed_out and killed_for_memory. Nothing is kept between calls: "
        "save files to reuse data.")

    def run_python(code: str) -> SandboxResult:
        """Run Python code in the sandbox.

        Args:
            code: The Python source; end with an expression to get its value back as result.
        """
        if not code or not code.strip():
            raise ToolError("code is empty.")
        return run_python_code(code, workspace=root, timeout=timeout, memory_mb=memory_mb,
                               limit=limit, allow_network=allow_network)

    # The tool's deadline leaves the call's own timeout room to kill the process first.
    t = _SandboxTool(run_python, name=name, description=description, batchable=False,
                     requires_approval=requires_approval, timeout=timeout + 30.0)
    return t
