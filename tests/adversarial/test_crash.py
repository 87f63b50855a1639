"""Whatever ends a run (an exception, Ctrl-C, SIGKILL), its row never stays ``running``.

Real processes throughout: a child Python process runs a tool loop against the scripted server
and is killed with SIGKILL; a real kernel is interrupted mid-stream. The store opened afterwards
marks the dead process's run ``interrupted``, and the session history it left is whole: the
next request sent to the model is a valid conversation.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent import tool, toolloop
from jupyter_agent.agents.chat import chat
from jupyter_agent.agents.resume import Answer, resume
from jupyter_agent.base.errors import ResumeError
from jupyter_agent.base.events import EVENT_ADAPTER
from jupyter_agent.session import Store, default_store, default_store_path, reset_default_store
from jupyter_agent.session._migrations import MIGRATIONS
from jupyter_agent.view.reduce import reduce_events
from tests.fakes.openai_server import ScriptedOpenAI, call, drip, text, tool_calls
from tests.stored import stored_messages

pytestmark = pytest.mark.timeout(240)

ROOT = Path(__file__).resolve().parents[2]

CHILD = '''
import pathlib, sys, time
from jupyter_agent import tool, toolloop

marker = pathlib.Path(sys.argv[1])

@tool
def quick() -> str:
    """Answer at once."""
    return "quick result"

@tool
def block() -> str:
    """Block until killed."""
    marker.write_text("inside the tool")
    time.sleep(600)
    return "never"

toolloop("First task", session="crash")
toolloop("Second task", session="crash")
'''


def _spawn(script: str, *args: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(script), *args], env=env,
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _wait_for(predicate: Any, what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def _assert_valid_conversation(messages: list[dict[str, Any]]) -> None:
    """Every assistant tool call is answered by a tool message right after it, and every tool
    message answers a call: what an OpenAI-compatible API requires."""
    i = 0
    while i < len(messages):
        m = messages[i]
        calls = [c["id"] for c in m.get("tool_calls") or ()] if m["role"] == "assistant" else []
        answered = []
        j = i + 1
        while j < len(messages) and messages[j]["role"] == "tool":
            answered.append(messages[j]["tool_call_id"])
            j += 1
        assert sorted(answered) == sorted(calls), (i, calls, answered)
        i = j


@pytest.fixture
def killed_child(server: ScriptedOpenAI, tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A child that finished one turn and was SIGKILLed inside a tool of the second."""
    marker = tmp_path / "in-tool"
    server.enqueue(tool_calls([call("quick", {}, id="q1")]), text("first done"),
                   tool_calls([call("quick", {}, id="q2")]),
                   tool_calls([call("block", {}, id="b2"), call("quick", {}, id="q3")]))
    child = _spawn(CHILD, str(marker))
    try:
        _wait_for(marker.exists, "the child never reached the blocking tool")
        child.send_signal(signal.SIGKILL)
        yield child
    finally:
        child.kill()
        child.wait(timeout=30)
        child.stdout.close()  # type: ignore[union-attr]
        child.stderr.close()  # type: ignore[union-attr]


def test_sigkilled_run_is_marked_interrupted_when_the_store_is_next_opened(
        server: ScriptedOpenAI, killed_child: subprocess.Popen[bytes]) -> None:
    killed_child.wait(timeout=30)
    path = default_store_path()
    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        (status,) = raw.execute("SELECT status FROM runs ORDER BY created DESC").fetchone()
        assert status == "running"  # what the kill left behind, before any store opens it
    reset_default_store()
    with Store(path) as store:
        first, second = store.list_runs("crash")
        assert store.recovered_runs == [second.run_id]
        assert first.status == "done" and first.error is None
        assert second.status == "interrupted"
        assert second.owner_pid == killed_child.pid
        assert second.error == (f"the process running it (pid {killed_child.pid} "
                                f"on {second.owner_host}) ended before the run finished")
        assert second.pending is None
        assert [t.status for t in store.list_turns("crash")] == ["done", "interrupted"]
        assert store.list_turns("crash")[1].error == second.error
        events = store.get_events(second.run_id)
        assert events[-1] == {"type": "run_failed", "t": events[-1]["t"],
                              "error": f"Interrupted: {second.error}"}
        view = reduce_events([EVENT_ADAPTER.validate_python(e) for e in events])
        assert view["status"] == "error" and view["error"] == f"Interrupted: {second.error}"
        # The whole first round of the killed turn survived; its second round (the one that
        # was killed) left nothing half-written.
        history = stored_messages(store, "crash")
        assert [m["role"] for m in history] == ["user", "assistant", "tool", "assistant",
                                                "user", "assistant", "tool"]
        _assert_valid_conversation(history)
        assert store.list_pending() == []
    with Store(path) as again:
        assert again.recovered_runs == []  # marked once; a second open changes nothing
        assert again.get_run(second.run_id).status == "interrupted"  # type: ignore[union-attr]


def test_the_session_goes_on_with_a_valid_history(server: ScriptedOpenAI,
                                                  killed_child: subprocess.Popen[bytes]) -> None:
    killed_child.wait(timeout=30)
    reset_default_store()

    @tool
    def quick() -> str:
        """Answer at once."""
        return "quick result"

    server.enqueue(tool_calls([call("quick", {}, id="q4")]), text("back on track"))
    run = toolloop("Third task", session="crash")
    assert run.status == "done" and run.answer == "back on track"
    for body in server.requests[-2:]:
        _assert_valid_conversation(body["messages"])
    sent = [m["content"] for m in server.requests[-2]["messages"] if m["role"] == "user"]
    assert sent == ["First task", "Second task", "Third task"]
    interrupted = [r for r in default_store().list_runs("crash") if r.status == "interrupted"]
    assert len(interrupted) == 1
    with pytest.raises(ResumeError, match=r"not waiting for an answer any more \(interrupted\)"):
        resume(interrupted[0].run_id, Answer("option", option_index=1))


def test_a_killed_but_unreaped_process_counts_as_dead(server: ScriptedOpenAI,
                                                      tmp_path: Path) -> None:
    marker = tmp_path / "in-tool"
    server.enqueue(tool_calls([call("block", {}, id="b1")]))
    child = _spawn(CHILD.replace('toolloop("First task", session="crash")\n', ""), str(marker))
    try:
        _wait_for(marker.exists, "the child never reached the blocking tool")
        os.kill(child.pid, signal.SIGKILL)
        # Not reaped yet: the pid still exists, as a zombie.
        _wait_for(lambda: _state(child.pid) == "Z", "the child did not become a zombie", 30)
        with Store(default_store_path()) as store:
            (run,) = store.list_runs("crash")
            assert run.status == "interrupted" and store.recovered_runs == [run.run_id]
    finally:
        child.kill()
        child.wait(timeout=30)
        child.stdout.close()  # type: ignore[union-attr]
        child.stderr.close()  # type: ignore[union-attr]


def _state(pid: int) -> str | None:
    try:
        text_ = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text_[text_.rindex(")") + 2]


OWNER = '''
import sys, time
from jupyter_agent.session import Store
store = Store(sys.argv[1])
store.create_run("live-run", "s", "toolloop")
print("READY", flush=True)
time.sleep(600)
'''


def test_a_live_owner_keeps_its_run_and_a_reused_pid_does_not(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite3"
    child = _spawn(OWNER, str(path))
    try:
        assert child.stdout.readline().strip() == b"READY"  # type: ignore[union-attr]
        with Store(path) as store:
            assert store.recovered_runs == []
            run = store.get_run("live-run")
            assert run is not None and run.status == "running" and run.owner_pid == child.pid
        # The same pid but another start time is another process (the pid was reused).
        with sqlite3.connect(path) as raw:
            raw.execute("UPDATE runs SET owner_start = '1' WHERE run_id = 'live-run'")
        with Store(path) as store:
            assert store.recovered_runs == ["live-run"]
            assert store.get_run("live-run").status == "interrupted"  # type: ignore[union-attr]
    finally:
        child.kill()
        child.wait(timeout=30)
        child.stdout.close()  # type: ignore[union-attr]
        child.stderr.close()  # type: ignore[union-attr]


CLAIMER = '''
import sys, time
from jupyter_agent.session import Store
store = Store(sys.argv[1])
assert store.claim_pending("asked", "call-1") is not None
print("CLAIMED", flush=True)
time.sleep(600)
'''


def test_a_resume_killed_mid_way_is_interrupted_not_left_to_its_first_owner(
        tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite3"
    with Store(path) as store:  # this (live) process starts the run and suspends it on an ask
        store.create_run("asked", "s", "plan")
        store.suspend("asked", {"call_id": "call-1", "ask": {"question": "Which?"}})
    child = _spawn(CLAIMER, str(path))
    try:
        assert child.stdout.readline().strip() == b"CLAIMED"  # type: ignore[union-attr]
        with Store(path) as store:
            run = store.get_run("asked")
            assert run is not None and run.status == "running" and run.owner_pid == child.pid
        child.kill()
        child.wait(timeout=30)
        with Store(path) as store:  # the claimer died: its run ends, although we still live
            assert store.recovered_runs == ["asked"]
            run = store.get_run("asked")
            assert run is not None and run.status == "interrupted" and run.pending is None
            assert store.claim_pending("asked", "call-1") is None  # cannot be answered twice
    finally:
        child.kill()
        child.wait(timeout=30)
        child.stdout.close()  # type: ignore[union-attr]
        child.stderr.close()  # type: ignore[union-attr]


def test_runs_of_another_host_are_never_judged(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite3"
    with Store(path) as store:
        store.create_run("remote", "s", "plan")
    with sqlite3.connect(path) as raw:  # a pid that cannot exist here, on another machine
        raw.execute("UPDATE runs SET owner_host = 'elsewhere', owner_pid = 999999999")
    with Store(path) as store:
        assert store.recovered_runs == []
        assert store.get_run("remote").status == "running"  # type: ignore[union-attr]


def test_an_old_store_loads_and_its_stale_ownerless_rows_are_ended(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    now = time.time()
    with sqlite3.connect(path) as raw:  # a file written by the release before owners existed
        raw.executescript(MIGRATIONS[0])
        raw.execute("PRAGMA user_version = 1")
        raw.execute("INSERT INTO runs (run_id, session, kind, status, created, updated)"
                    " VALUES ('stale', 's', 'chat', 'running', ?, ?)", (now - 3 * 86400,) * 2)
        raw.execute("INSERT INTO runs (run_id, session, kind, status, created, updated)"
                    " VALUES ('recent', 's', 'chat', 'running', ?, ?)", (now - 60,) * 2)
        raw.execute("INSERT INTO runs (run_id, session, kind, status, created, updated,"
                    " pending, pending_call_id) VALUES ('asking', 's', 'plan', 'ask', ?, ?,"
                    " '{\"call_id\": \"c1\"}', 'c1')", (now - 3 * 86400,) * 2)
    with Store(path) as store:
        assert store.recovered_runs == ["stale"]
        stale = store.get_run("stale")
        assert stale is not None and stale.status == "interrupted" and stale.owner_pid is None
        assert "earlier jupyter-agent release" in (stale.error or "")
        assert store.get_run("recent").status == "running"  # type: ignore[union-attr]
        assert [r.run_id for r in store.list_pending()] == ["asking"]  # an ask is not a crash
    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA user_version").fetchone() == (len(MIGRATIONS),)


def test_an_exception_from_a_listener_ends_the_run_error(server: ScriptedOpenAI) -> None:
    def explode(event: Any) -> None:
        if event.type == "text_delta":
            raise RuntimeError("display broke\nsecond line")

    server.enqueue(text("A long enough answer to stream."))
    with pytest.raises(RuntimeError, match="display broke"):
        chat("Hi", session="boom", listeners=[explode])
    with Store() as store:
        (row,) = store.list_runs("boom")
        assert row.status == "error" and row.error == "RuntimeError: display broke"
        assert [t.status for t in store.list_turns("boom")] == ["error"]


def test_a_tool_calling_sys_exit_ends_the_run_error(server: ScriptedOpenAI) -> None:
    @tool
    def leave() -> str:
        """Exit the interpreter."""
        sys.exit(3)

    server.enqueue(tool_calls([call("leave", {}, id="l1")]), text("unreachable"))
    with pytest.raises(SystemExit):
        toolloop("Leave", session="exit")
    with Store() as store:
        (row,) = store.list_runs("exit")
        assert row.status == "error" and row.error == "SystemExit: 3"
        _assert_valid_conversation(stored_messages(store, "exit"))


KERNEL_SETUP = '''
%load_ext jupyter_agent
import pathlib, time
from jupyter_agent import tool

@tool
def slow(marker: str) -> str:
    """Block for a long time."""
    pathlib.Path(marker).write_text("inside the tool")
    time.sleep(600)
    return "never"
'''


@pytest.mark.notebook
def test_ctrl_c_in_a_real_kernel_ends_the_run_aborted(server: ScriptedOpenAI,
                                                     tmp_path: Path) -> None:
    from jupyter_client.manager import start_new_kernel

    marker = tmp_path / "in-tool"
    # Mid-stream: some text, then keep-alives for a long time. Then inside a tool.
    server.enqueue(drip(600, interval=0.2, before="Thinking about it"),
                   tool_calls([call("slow", {"marker": str(marker)}, id="s1")]))
    km, kc = start_new_kernel(kernel_name="python3", startup_timeout=120, env=dict(os.environ))
    try:
        reply = kc.execute_interactive(KERNEL_SETUP, timeout=120)
        assert reply["content"]["status"] == "ok"
        for cell, ready in (("%%chat --session ctrlc\nTell me", lambda: len(server.requests) == 1),
                            ("%%toolloop --session ctrlc\nUse the tool", marker.exists)):
            msg_id = kc.execute(cell)
            _wait_for(ready, "the cell never reached the point to interrupt")
            time.sleep(0.5)  # well inside the stream / the tool
            km.interrupt_kernel()
            reply = _reply(kc, msg_id)
            assert reply["content"]["status"] in ("ok", "error")
        reset_default_store()
        with Store(default_store_path()) as store:
            runs = store.list_runs("ctrlc")
            assert [r.status for r in runs] == ["aborted", "aborted"]
            assert store.recovered_runs == []  # ended by the kernel itself, not by recovery
            assert [t.status for t in store.list_turns("ctrlc")] == ["aborted", "aborted"]
            _assert_valid_conversation(stored_messages(store, "ctrlc"))
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def _reply(kc: Any, msg_id: str, timeout: float = 120) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        msg = kc.get_shell_msg(timeout=max(1.0, deadline - time.monotonic()))
        if msg["parent_header"].get("msg_id") == msg_id:
            return msg


def test_agent_runs_lists_how_each_run_ended(server: ScriptedOpenAI,
                                             killed_child: subprocess.Popen[bytes],
                                             capsys: pytest.CaptureFixture[str]) -> None:
    from jupyter_agent.edge.commands import run_command

    killed_child.wait(timeout=30)
    reset_default_store()
    capsys.readouterr()
    run_command("runs --session crash", {})
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    assert lines[0].endswith("toolloop (session crash) done")
    assert lines[1].endswith(f"toolloop (session crash) interrupted: the process "
                             f"running it (pid {killed_child.pid} on {os.uname().nodename}) "
                             "ended before the run finished")
    run_command("runs --session nobody", {})
    assert capsys.readouterr().out == "No runs yet.\n"
