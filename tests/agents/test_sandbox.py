"""The sandboxed Python tool: a separate process in the workspace, the last expression as the
result, stdout/stderr captured, and killed at its timeout or stopped at its memory limit."""

from __future__ import annotations

import importlib.util
import json
import os
import time
from pathlib import Path

import pytest

from jupyter_agent import Agent, python_sandbox, toolloop
from jupyter_agent.agents.sandbox import SandboxResult, run_python_code
from jupyter_agent.base.errors import ConfigError
from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls
from tests.fakes.processes import running_with

pytestmark = pytest.mark.timeout(120)


def run_code(sandbox: object, code: str) -> SandboxResult:
    result = sandbox.invoke(json.dumps({"code": code}))  # type: ignore[attr-defined]
    assert isinstance(result.value, SandboxResult), result.output
    assert json.loads(result.output) == result.value.model_dump()  # the model reads the JSON
    return result.value


def test_simplest_sandbox_call(tmp_path: Path) -> None:
    sandbox = python_sandbox(tmp_path)
    r = run_code(sandbox, "print('hello')\nx = 20\nx + 22")
    assert r == SandboxResult(stdout="hello\n", result="42")
    assert sandbox.name == "sandbox_python" and sandbox.requires_approval is True


def test_the_model_runs_code_in_a_run(server: ScriptedOpenAI, tmp_path: Path) -> None:
    code = "sum(range(10))"
    server.enqueue(tool_calls([call("sandbox_python", {"code": code}, id="call_py")]),
                   text("The sum is 45."))
    run = toolloop("Add 0..9 with Python.", tools=[python_sandbox(tmp_path)], auto_approve=True)
    assert run.answer == "The sum is 45."
    tool_msg = server.requests[1]["messages"][-1]
    assert tool_msg["tool_call_id"] == "call_py"
    assert json.loads(tool_msg["content"]) == {
        "stdout": "", "stderr": "", "result": "45", "error": None, "timed_out": False,
        "killed_for_memory": False}
    assert run.tool_values["call_py"].result == "45"


def test_last_expression_like_a_notebook_cell(tmp_path: Path) -> None:
    sandbox = python_sandbox(tmp_path)
    assert run_code(sandbox, "'a' * 3").result == "'aaa'"       # the repr
    assert run_code(sandbox, "x = 1").result is None            # a statement: no result
    assert run_code(sandbox, "None").result is None
    assert run_code(sandbox, "def f():\n    return [1, 2]\nf()").result == "[1, 2]"
    assert run_code(sandbox, "y = 2").result is None
    assert run_code(sandbox, "y").error is not None             # nothing is kept between calls


def test_errors_come_back_as_a_traceback_of_the_code(tmp_path: Path) -> None:
    r = run_code(python_sandbox(tmp_path), "print('before')\nvalue = 1\nvalue / 0")
    assert r.stdout == "before\n" and r.result is None
    assert r.error is not None
    assert r.error.startswith("Traceback (most recent call last):")
    assert 'File "<sandbox>", line 3' in r.error and "value / 0" in r.error
    assert r.error.endswith("ZeroDivisionError: division by zero")
    assert "_sandbox_runner" not in r.error and "main()" not in r.error
    syntax = run_code(python_sandbox(tmp_path), "def broken(:\n")
    assert syntax.error is not None and "SyntaxError" in syntax.error
    assert run_code(python_sandbox(tmp_path), "import sys\nsys.exit(3)").error == "SystemExit: 3"


def test_stdout_and_stderr_are_captured_and_capped(tmp_path: Path) -> None:
    r = run_code(python_sandbox(tmp_path),
                 "import sys\nprint('out line')\nprint('warned', file=sys.stderr)")
    assert (r.stdout, r.stderr, r.error) == ("out line\n", "warned\n", None)
    big = run_code(python_sandbox(tmp_path, limit=1000),
                   "print('A' * 50_000)\nprint('THE END')\n'R' * 5000")
    assert len(big.stdout) < 1200 and big.stdout.startswith("AAAA")
    assert "bytes cut" in big.stdout and big.stdout.endswith("THE END\n")
    assert big.result is not None and len(big.result) < 1100
    assert big.result.startswith("'RRRR") and "characters cut" in big.result


def test_the_working_directory_is_the_workspace(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "data.csv").write_text("a,b\n1,2\n")
    sandbox = python_sandbox(workspace)
    r = run_code(sandbox, "import os\nopen('out.txt', 'w').write('x')\n"
                          "(os.getcwd(), open('data.csv').read())")
    assert r.result == repr((str(workspace.resolve()), "a,b\n1,2\n"))
    assert (workspace / "out.txt").read_text() == "x"


def test_the_code_gets_no_api_key_and_no_stdin(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-0123456789")
    r = run_code(python_sandbox(tmp_path),
                 "import os\ntry:\n    input()\n    got = 'input'\nexcept EOFError:\n"
                 "    got = 'eof'\n(os.environ.get('OPENAI_API_KEY'), got)")
    assert r.result == "(None, 'eof')"


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="needs /proc to find the processes")
def test_killed_at_its_timeout_with_nothing_left_running(tmp_path: Path, marker: str) -> None:
    # Found by a unique sleep in their command lines: inside the sandbox's PID namespace the
    # pids the code sees are not the host's.
    code = (
        "import os, subprocess, sys, time\n"
        f"sleep = ['sleep', '{marker}']\n"
        "child = subprocess.Popen(sleep)\n"
        "escaped = subprocess.Popen(sleep, start_new_session=True)\n"
        "print(os.getpid(), child.pid, escaped.pid)\n"
        "time.sleep(120)\n"
        "'never'")
    r = run_code(python_sandbox(tmp_path, timeout=1.5), code)
    assert r.timed_out is True and r.killed_for_memory is False
    assert r.error == ("Code timed out after 1.5 s (killed; raise it with "
                       "python_sandbox(timeout=...))")
    assert r.result is None
    assert len(r.stdout.split()) == 3  # printed before the kill, so captured
    deadline = time.monotonic() + 10  # the kill has been sent; allow the kernel to reap
    while running_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert running_with(marker) == []


@pytest.mark.skipif(importlib.util.find_spec("resource") is None,
                    reason="memory limits need Unix")
def test_stopped_at_its_memory_limit_with_a_clear_result(tmp_path: Path) -> None:
    sandbox = python_sandbox(tmp_path, memory_mb=128)
    r = run_code(sandbox, "print('allocating')\nblock = bytearray(512 * 1024 * 1024)\n"
                          "len(block)")
    assert r.killed_for_memory is True and r.timed_out is False
    assert r.error == "Code exceeded the memory limit of 128 MB"
    assert r.stdout == "allocating\n" and r.result is None
    # Within the limit the same tool works, in a fresh process.
    ok = run_code(sandbox, "len(bytearray(16 * 1024 * 1024))")
    assert (ok.result, ok.error, ok.killed_for_memory) == (str(16 * 1024 * 1024), None, False)


def test_it_asks_for_approval_like_bash(server: ScriptedOpenAI, tmp_path: Path) -> None:
    server.enqueue(tool_calls([call("sandbox_python", {"code": "open('x', 'w')"})]))
    run = toolloop("Make a file.", tools=[python_sandbox(tmp_path)])
    assert run.status == "ask" and len(server.requests) == 1
    assert not (tmp_path / "x").exists()
    assert run.pending is not None
    card = run.pending.card
    assert card.question == "Run this Python code in the workspace?"
    assert card.detail["code"] == "open('x', 'w')"


def test_denied_in_a_read_only_workspace(server: ScriptedOpenAI, tmp_path: Path) -> None:
    from jupyter_agent.runtime import agents

    viewer = Agent("viewer", workspace=tmp_path, read_only=True,
                   tools=[python_sandbox(tmp_path)])
    try:
        server.enqueue(tool_calls([call("sandbox_python", {"code": "open('x', 'w')"})]),
                       text("I may not run code here."))
        run = toolloop("Make a file.", agent=viewer, auto_approve=True)
    finally:
        agents.forget_agent("viewer")
    assert run.status == "done" and not (tmp_path / "x").exists()
    assert server.requests[1]["messages"][-1]["content"] == (
        "Permission denied by policy (workspace is read-only): sandbox_python was not run.")


def test_bad_settings_fail_when_the_tool_is_made(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        python_sandbox(tmp_path / "missing")
    with pytest.raises(ConfigError, match="positive"):
        python_sandbox(tmp_path, timeout=0)
    with pytest.raises(ConfigError, match="at least 64 MB"):
        python_sandbox(tmp_path, memory_mb=8)
    assert run_python_code("1 + 1", workspace=tmp_path, memory_mb=None).result == "2"


def test_numeric_libraries_import_under_the_memory_limit(tmp_path: Path) -> None:
    pytest.importorskip("numpy")
    sandbox = python_sandbox(tmp_path, memory_mb=128)
    assert run_code(sandbox, "import numpy\nint(numpy.arange(10).sum())").result == "45"
    too_big = run_code(sandbox, "import numpy\nnumpy.ones(10**8)")  # 800 MB
    assert too_big.killed_for_memory and too_big.error == (
        "Code exceeded the memory limit of 128 MB")
