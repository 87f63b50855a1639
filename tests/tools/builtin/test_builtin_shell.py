"""The bash tool: output with exit code, caps, timeouts, and no process left behind."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import pytest

from jupyter_agent.base.errors import ToolError
from jupyter_agent.tools.builtin import Workspace, make_builtin_functions
from jupyter_agent.tools.builtin.shell import run_command
from tests.fakes.processes import running_with

pytestmark = [
    pytest.mark.timeout(60),
    pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="checks processes via /proc"),
]


@pytest.fixture(autouse=True, params=["auto", "off"])
def sandbox_mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test runs in the sandbox (when bubblewrap is here) and unconfined: the promises
    (exit codes, caps, timeouts, nothing left running) hold either way."""
    monkeypatch.setenv("JUPYTER_AGENT_SANDBOX", request.param)
    return str(request.param)


def test_run_a_command_in_the_workspace(tmp_path: Path) -> None:
    bash = make_builtin_functions(Workspace(tmp_path))["bash"]
    assert bash("echo hello; pwd") == f"hello\n{tmp_path.resolve()}\n[exit code 0]"


def test_stderr_is_merged_and_the_exit_code_reported(tmp_path: Path) -> None:
    bash = make_builtin_functions(Workspace(tmp_path))["bash"]
    assert bash("echo out; echo err >&2; exit 3") == "out\nerr\n[exit code 3]"
    assert bash("true") == "(no output)\n[exit code 0]"


def test_stdin_is_closed(tmp_path: Path) -> None:
    bash = make_builtin_functions(Workspace(tmp_path))["bash"]
    assert bash("cat; echo done") == "done\n[exit code 0]"  # would hang if stdin were open


def test_bad_arguments_are_refused(tmp_path: Path) -> None:
    bash = make_builtin_functions(Workspace(tmp_path))["bash"]
    with pytest.raises(ToolError, match="empty"):
        bash("  ")
    with pytest.raises(ToolError, match="positive"):
        bash("true", timeout=0)


def test_api_keys_are_not_passed_to_commands(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-openai-secret")
    monkeypatch.setenv("OTHER_SERVICE_API_KEY", "other-secret")
    monkeypatch.setenv("HARMLESS_SETTING", "visible")
    out = make_builtin_functions(Workspace(tmp_path))["bash"]("env")
    assert "secret" not in out
    assert "HARMLESS_SETTING=visible" in out


def test_ten_megabytes_of_output_are_capped(tmp_path: Path) -> None:
    bash = make_builtin_functions(Workspace(tmp_path))["bash"]
    out = bash("echo FIRST-LINE; head -c 10000000 /dev/zero | tr '\\0' a; echo; echo LAST-LINE")
    assert len(out) < 31_000
    assert out.startswith("FIRST-LINE\n")
    assert out.endswith("LAST-LINE\n[exit code 0]")
    assert "bytes cut (output was 10,000,022 bytes)" in out




def test_a_command_past_its_timeout_is_killed(tmp_path: Path, marker: str) -> None:
    bash = make_builtin_functions(Workspace(tmp_path))["bash"]
    out = bash(f"echo begun; sleep {marker}", timeout=1)
    assert out == ("begun\nCommand timed out after 1 s (killed; pass a larger timeout, at most "
                   "600 s)")
    assert running_with(marker) == []


@pytest.mark.parametrize("launch", [
    "sleep {m} & echo started",
    "sh -c 'sleep {m} & echo started'",
    "nohup sleep {m} >/dev/null 2>&1 & echo started",
    "setsid sleep {m} >/dev/null 2>&1 & echo started",
    "(setsid sh -c 'sleep {m} & sleep {m}' &) ; echo started",
    "bash -c 'trap \"\" TERM; sleep {m}' & echo started",
])
def test_background_processes_do_not_outlive_the_call(tmp_path: Path, marker: str,
                                                      launch: str) -> None:
    bash = make_builtin_functions(Workspace(tmp_path))["bash"]
    out = bash(launch.format(m=marker))
    assert out.startswith("started\n")
    assert "background process(es) still running when the command ended were stopped" in out
    assert out.endswith("[exit code 0]")
    assert running_with(marker) == []


def test_setsid_children_are_killed_on_timeout_too(tmp_path: Path, marker: str) -> None:
    bash = make_builtin_functions(Workspace(tmp_path))["bash"]
    out = bash(f"setsid sleep {marker} & sleep {marker}", timeout=1)
    assert out.endswith("Command timed out after 1 s (killed; pass a larger timeout, at most "
                        "600 s)")
    assert running_with(marker) == []


def test_keyboard_interrupt_kills_everything_and_propagates(tmp_path: Path, marker: str) -> None:
    # A kernel interrupt is SIGINT delivered to the main thread; send exactly that.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    try:
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            run_command(f"setsid sleep {marker} & sleep {marker}", cwd=tmp_path, timeout=30)
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    assert running_with(marker) == []
