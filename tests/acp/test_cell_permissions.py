"""``%%toolloop --acp``: an external ACP agent's plan, tools and a three-option permission in
a real kernel, answered by option number, by name, dismissed, and twice.

Fails on the code before ``--acp`` existed (the flag was unknown)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.acp.conftest import DEMO, Kernel

pytestmark = [pytest.mark.timeout(300)]


def _ask(k: Kernel) -> str:
    k.ok(f"%%toolloop {DEMO}\nSummarise the notes")
    assert k.value("_agent_run.status") == "ask"
    return str(k.value("_agent_run.run_id"))


def test_plan_tools_and_option_2_sends_its_option_id(kernel: Kernel, workdir: Path) -> None:
    run_id = _ask(kernel)
    view = kernel.value("{'plan': _agent_run.view['plan'], 'ask': _agent_run.view['ask'], "
                        "'tools': [i['name'] for i in _agent_run.view['items'] "
                        "if i['kind'] == 'tool'], 'model': _agent_run.model}")
    assert [s["title"] for s in view["plan"]["steps"]] == ["Read notes.txt", "Write summary.txt"]
    assert [s["status"] for s in view["plan"]["steps"]] == ["done", "in_progress"]
    assert view["plan"]["task"] == "Summarise the notes"
    assert view["ask"]["options"] == ["Allow once", "Always allow notes", "Reject"]
    assert view["ask"]["kind"] == "approval" and view["ask"]["question"] == "Write summary.txt"
    assert "Read notes.txt" in view["tools"] and "fs/read_text_file" in view["tools"]
    assert view["model"] == "acp:demo-acp"
    pending = kernel.ok("%agent pending")
    assert run_id in pending and "2. Always allow notes" in pending
    assert not (workdir / "summary.txt").exists()  # nothing before the answer

    out = kernel.ok(f"%agent resume {run_id} --option 2")
    assert "it finished" in out
    assert kernel.value("_agent_run.status") == "done"
    assert "option id always" in kernel.value("_agent_run.answer")
    assert (workdir / "summary.txt").read_text() == "3 lines of notes."
    steps = kernel.value("[s['status'] for s in _agent_run.view['plan']['steps']]")
    assert steps == ["done", "done"]
    # A second answer is refused in one line; nothing changes.
    out = kernel.ok(f"%agent resume {run_id} --option 3")
    assert "already answered" in out and out.strip().count("\n") == 0
    assert kernel.value("_agent_run.status") == "done"


def test_answer_by_name_and_out_of_range(kernel: Kernel, workdir: Path) -> None:
    run_id = _ask(kernel)
    _, error = kernel.run(f"%agent resume {run_id} --option 4")
    assert error is not None and "between 1 and 3" in error
    _, error = kernel.run(f"%agent resume {run_id} --answer Maybe")
    assert error is not None and "Allow once, Always allow notes, Reject" in error
    kernel.ok(f"%agent resume {run_id} --answer Reject")
    assert "option id reject" in kernel.value("_agent_run.answer")
    assert not (workdir / "summary.txt").exists()


def test_dismiss_cancels_the_prompt(kernel: Kernel, workdir: Path) -> None:
    run_id = _ask(kernel)
    kernel.ok(f"%agent resume {run_id} --dismiss")
    assert kernel.value("_agent_run.status") == "aborted"
    assert not (workdir / "summary.txt").exists()
    # The same agent and session serve the next cell.
    kernel.ok(f"%%toolloop {DEMO}\nhello")
    assert "prompt 2 of this session" in kernel.value("_agent_run.answer")


def test_a_new_kernel_says_the_agent_ended(workdir: Path) -> None:
    first = Kernel(workdir, workdir.parent / "home")
    try:
        run_id = _ask(first)
        pid = first.value("[a.pid for a in __import__('jupyter_agent.acp.client', "
                          "fromlist=['x'])._AGENTS.values()][0]")
    finally:
        first.close()
    assert not _alive(pid), "the agent outlived its kernel"
    other = Kernel(workdir, workdir.parent / "home")
    try:
        _, error = other.run(f"%agent resume {run_id} --option 1")
        assert error is not None and "ended with its kernel" in error
        runs = other.ok("%agent runs")
        assert f"{run_id}" in runs and "aborted" in runs.split(run_id, 1)[1].splitlines()[0]
    finally:
        other.close()


def _alive(pid: int) -> bool:
    import os
    import time

    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        try:  # a zombie of ours is gone too
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return False
        except ChildProcessError:
            pass
        if Path(f"/proc/{pid}/stat").exists() and Path(f"/proc/{pid}/stat").read_text(
                ).split()[2] == "Z":
            return False
        time.sleep(0.1)
    return True


def test_a_cassette_never_answers_an_agents_permission(kernel: Kernel, workdir: Path) -> None:
    """Replay mode, with a cassette whose answers name the permission's call id and question
    (as a forged or recorded one would): the permission still waits for a person."""
    import json

    tape = {"version": 1, "model": "scripted-model", "interactions": [], "answers": [
        {"call_id": "write-1", "question": "Write summary.txt", "kind": "approval",
         "how": "option", "option_index": 1, "via": "click"}]}
    (workdir / "t.cassette.json").write_text(json.dumps(tape))
    kernel.ok("%agent replay t.cassette.json")
    run_id = _ask(kernel)
    assert kernel.value("_agent_run.view['ask']['answered']") is None
    assert not (workdir / "summary.txt").exists()
    assert run_id in kernel.ok("%agent pending")
