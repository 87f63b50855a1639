"""``%%toolloop --acp`` at its edges, in a real kernel: an interrupt cancels and the agent
serves the next cell, fs confinement, a command that cannot start, flags refused naming
``--acp``, no SDK, kernel shutdown, the update shapes besides text (a diff, a terminal, usage).

Fails on the code before ``--acp`` existed (the flag was unknown)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from tests.acp.conftest import DEMO, Kernel
from tests.acp.test_cell_permissions import _alive

pytestmark = [pytest.mark.timeout(300)]


def test_interrupt_cancels_then_the_agent_serves_the_next_cell(kernel: Kernel) -> None:
    kernel.ok(f"%%toolloop {DEMO}\nhello")  # the agent runs (its start is not timed here)
    msg_id = kernel.send(f"%%toolloop {DEMO}\nslow please")
    time.sleep(3)  # the agent streams a dot every 0.1 s meanwhile
    kernel.km.interrupt_kernel()
    kernel.collect(msg_id)
    assert kernel.value("_agent_run.status") == "aborted"
    assert kernel.value("_agent_run.answer").startswith(".")
    pid = kernel.value("[a.pid for a in __import__('jupyter_agent.acp.client', "
                       "fromlist=['x'])._AGENTS.values()]")
    kernel.ok(f"%%toolloop {DEMO}\nhello")
    assert "prompt 3 of this session" in kernel.value("_agent_run.answer")
    assert kernel.value("[a.pid for a in __import__('jupyter_agent.acp.client', "
                        "fromlist=['x'])._AGENTS.values()]") == pid
    # Another session is another ACP session of the same process.
    kernel.ok(f"%%toolloop {DEMO} --session other\nhello")
    assert "prompt 1 of this session" in kernel.value("_agent_run.answer")


def test_a_second_interrupt_ends_an_agent_that_ignores_cancel(kernel: Kernel) -> None:
    kernel.ok(f"%%toolloop {DEMO}\nhello")
    pid = kernel.value("[a.pid for a in __import__('jupyter_agent.acp.client', "
                       "fromlist=['x'])._AGENTS.values()][0]")
    msg_id = kernel.send(f"%%toolloop {DEMO}\nstubborn")
    time.sleep(2)
    kernel.km.interrupt_kernel()  # session/cancel: this agent ignores it
    time.sleep(1)
    kernel.km.interrupt_kernel()  # the second one ends the process
    kernel.collect(msg_id)
    assert kernel.value("_agent_run.status") == "aborted"
    assert not _alive(pid)
    kernel.ok(f"%%toolloop {DEMO}\nhello")  # a new process serves the next cell
    assert "prompt 1 of this session" in kernel.value("_agent_run.answer")


def test_an_agent_that_dies_mid_prompt_then_a_new_one(kernel: Kernel) -> None:
    _, error = kernel.run(f"%%toolloop {DEMO}\ncrash now")
    assert error is not None and "ended (exit 5)" in error and "crashing on purpose" in error
    run = kernel.value("[_agent_run.status, _agent_run.answer]")
    assert run == ["error", "About to fail."]
    kernel.ok(f"%%toolloop {DEMO}\nhello")  # a new process, a new ACP session
    assert "prompt 1 of this session" in kernel.value("_agent_run.answer")


def test_a_rerun_while_a_permission_waits_cancels_it(kernel: Kernel, workdir: Path) -> None:
    kernel.ok(f"%%toolloop {DEMO}\nSummarise the notes")
    first = kernel.value("_agent_run.run_id")
    kernel.ok(f"%%toolloop {DEMO}\nhello")
    assert "prompt 2 of this session" in kernel.value("_agent_run.answer")
    assert "No run is waiting" in kernel.ok("%agent pending")
    runs = kernel.ok("%agent runs")
    assert "aborted" in runs.split(first, 1)[1].splitlines()[0]
    _, error = kernel.run(f"%agent resume {first} --option 1")
    assert error is not None and "not waiting" in error
    assert not (workdir / "summary.txt").exists()


def test_the_agent_gets_the_kernels_environment_cwd_and_no_terminal(kernel: Kernel,
                                                                     workdir: Path) -> None:
    kernel.ok("import os; os.environ['ACP_DEMO_MARKER'] = 'from-the-kernel'")
    kernel.ok(f"%%toolloop {DEMO}\nyour capabilities?")
    said = kernel.value("_agent_run.answer")
    assert "fs read=True write=True terminal=False" in said
    assert f"cwd={workdir}" in said and "env=from-the-kernel" in said


def test_a_write_outside_the_cwd_is_refused(kernel: Kernel, workdir: Path) -> None:
    target = workdir.parent / "acp-demo-outside.txt"
    kernel.ok(f"%%toolloop {DEMO}\nwrite outside")
    rows = kernel.value("[(i['name'], i.get('error')) for i in _agent_run.view['items'] "
                        "if i['kind'] == 'tool']")
    fs = [r for r in rows if r[0] == "fs/write_text_file"]
    assert fs and "outside the notebook's folder" in fs[0][1]
    assert "refused" in kernel.value("_agent_run.answer")
    assert not target.exists()


def test_a_command_that_cannot_start(kernel: Kernel) -> None:
    _, error = kernel.run('%%toolloop --acp "no-such-acp-agent --flag"\nhello')
    assert error is not None and "no-such-acp-agent" in error
    code = "import sys; print('acp: OPENAI_API_KEY is not set', file=sys.stderr); sys.exit(3)"
    kernel.ok(f"cmd = [{sys.executable!r}, '-c', {code!r}]")
    text, error = kernel.run("%%toolloop --acp cmd\nhello")
    assert error is not None and "did not start" in error
    assert "OPENAI_API_KEY is not set" in error + text


def test_the_agents_stderr_never_shows_a_key(workdir: Path, monkeypatch: pytest.MonkeyPatch
                                              ) -> None:
    key = "sk-acp-test-0123456789abcdefghij"
    monkeypatch.setenv("OPENAI_API_KEY", key)  # the kernel's, so the agent's environment too
    k = Kernel(workdir, workdir.parent / "home")
    try:
        code = "import os, sys; print('bad key', os.environ['OPENAI_API_KEY'], file=sys.stderr)"
        k.ok(f"cmd = [{sys.executable!r}, '-c', {code!r}]")
        text, error = k.run("%%toolloop --acp cmd\nhello")
        assert error is not None and "bad key [redacted]" in error
        assert key not in error + text
    finally:
        k.close()


@pytest.mark.parametrize("flag", ["--tools add", "--model gpt-4o", "--record", "--notebook",
                                  "--over rows", "--agent coder", "--schema S", "--approve add",
                                  "--replay", "--max-rounds 3"])
def test_flags_refused_naming_acp(kernel: Kernel, flag: str) -> None:
    _, error = kernel.run(f"%%toolloop {DEMO} {flag}\nhello")
    assert error is not None and "with --acp" in error and flag.split()[0] in error


def test_without_the_sdk_one_line_names_the_extra(kernel: Kernel) -> None:
    kernel.ok("import sys; sys.modules['acp'] = None")
    _, error = kernel.run(f"%%toolloop {DEMO}\nhello")
    assert error is not None and 'pip install "jupyter-agent[acp]"' in error


def test_kernel_shutdown_ends_the_agent(workdir: Path) -> None:
    k = Kernel(workdir, workdir.parent / "home")
    try:
        k.ok(f"%%toolloop {DEMO}\nhello")
        pid = k.value("[a.pid for a in __import__('jupyter_agent.acp.client', "
                      "fromlist=['x'])._AGENTS.values()][0]")
        assert _alive_now(pid)
    finally:
        k.close()
    assert not _alive(pid)


def _alive_now(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()


def test_a_killed_kernel_leaves_no_agent(workdir: Path) -> None:
    """SIGKILL skips atexit: the agent's stdin closes with its kernel, and it ends."""
    k = Kernel(workdir, workdir.parent / "home")
    try:
        k.ok(f"%%toolloop {DEMO}\nhello")
        pid = k.value("[a.pid for a in __import__('jupyter_agent.acp.client', "
                      "fromlist=['x'])._AGENTS.values()][0]")
        k.km.signal_kernel(9)  # SIGKILL, as an out-of-memory kill would
    finally:
        k.kc.stop_channels()
    assert not _alive(pid)


def test_the_update_shapes_besides_text_become_rows_and_tokens(kernel: Kernel) -> None:
    """A diff, a terminal and text in one result; a call with no title (its kind names it)
    and text arguments; an update for a call never announced; an image thought; usage."""
    kernel.ok(f"%%toolloop {DEMO}\nshapes")
    rows = kernel.value("[[e.type, e.call_id, e.name, getattr(e, 'arguments', None), "
                        "getattr(e, 'output', None), getattr(e, 'error', None)] "
                        "for e in _agent_run.events if e.type.startswith('tool_')]")
    assert rows == [
        ["tool_called", "e1", "edit", "sed -i s/old/new/ a.txt", None, None],
        ["tool_started", "e1", "edit", None, None, None],
        ["tool_returned", "e1", "edit", None, "a.txt: -old +new\nok\n(terminal term-1)", None],
        ["tool_called", "x1", "tool", "{}", None, None],
        ["tool_started", "x1", "tool", None, None, None],
        ["tool_returned", "x1", "tool", None, "", "failed"]]
    run = kernel.value("[_agent_run.status, _agent_run.answer, [e.type for e in "
                       "_agent_run.events], [[e.input_tokens, e.output_tokens, e.priced] "
                       "for e in _agent_run.events if e.type == 'usage']]")
    assert run[:2] == ["done", "Shapes sent."]
    assert "reasoning_delta" not in run[2]  # an image thought has no text to show
    assert run[3] == [[12, 5, False]]
    # The run's own totals (what the Python API, the store and a batch read) count them too.
    assert kernel.value("[_agent_run.input_tokens, _agent_run.output_tokens]") == [12, 5]
