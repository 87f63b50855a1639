"""The session store under real kernels: one killed in the middle of a turn, two writing the
same session at once."""

from __future__ import annotations

import os
import signal
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.manager import KernelManager, start_new_kernel

from jupyter_agent.agents.chat import chat
from jupyter_agent.session import Store, default_store_path, reset_default_store
from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls
from tests.stored import stored_messages

pytestmark = [pytest.mark.notebook, pytest.mark.timeout(240)]

SETUP = '''
%load_ext jupyter_agent
import pathlib, time
from jupyter_agent import tool

@tool
def quick() -> str:
    """Answer at once."""
    return "quick result"

@tool
def block(marker: str) -> str:
    """Block for a long time."""
    pathlib.Path(marker).write_text("inside the tool")
    time.sleep(600)
    return "never"
'''


def _start(server: ScriptedOpenAI) -> tuple[KernelManager, Any]:
    # The kernel inherits the test's environment: the private data dir and the fake server.
    km, kc = start_new_kernel(kernel_name="python3", startup_timeout=120,
                              env=dict(os.environ))
    return km, kc


@pytest.fixture
def kernels(server: ScriptedOpenAI) -> Iterator[list[tuple[KernelManager, Any]]]:
    started: list[tuple[KernelManager, Any]] = []
    yield started
    for km, kc in started:
        kc.stop_channels()
        if km.is_alive():
            km.shutdown_kernel(now=True)


def _execute(kc: Any, code: str, timeout: float = 120) -> None:
    errors: list[Any] = []

    def hook(msg: dict[str, Any]) -> None:
        if msg["msg_type"] == "error" or (msg["msg_type"] == "stream"
                                          and msg["content"]["name"] == "stderr"):
            errors.append(msg["content"])

    reply = kc.execute_interactive(code, timeout=timeout, output_hook=hook)
    assert reply["content"]["status"] == "ok", (reply["content"], errors)


def _wait_reply(kc: Any, msg_id: str, timeout: float = 180) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        msg = kc.get_shell_msg(timeout=max(1.0, deadline - time.monotonic()))
        if msg["parent_header"].get("msg_id") == msg_id:
            return msg


def test_a_kernel_killed_mid_turn_loses_nothing_written(server: ScriptedOpenAI, tmp_path: Path,
                                                        kernels: list[Any]) -> None:
    marker = tmp_path / "in-tool"
    server.enqueue(tool_calls([call("quick", {}, id="q1")]), text("first done"),
                   tool_calls([call("quick", {}, id="q2")]),
                   tool_calls([call("block", {"marker": str(marker)}, id="b2")]))
    km, kc = _start(server)
    kernels.append((km, kc))
    _execute(kc, SETUP)
    _execute(kc, "%%toolloop --session crash\nFirst task")
    kc.execute("%%toolloop --session crash\nSecond task")  # blocks in its second round
    deadline = time.monotonic() + 120
    while not marker.exists():
        assert time.monotonic() < deadline, "the tool never started"
        time.sleep(0.1)
    km.signal_kernel(signal.SIGKILL)
    deadline = time.monotonic() + 30
    while km.is_alive():
        assert time.monotonic() < deadline, "the kernel survived SIGKILL"
        time.sleep(0.1)

    path = default_store_path()
    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    reset_default_store()
    with Store(path) as store:
        history = stored_messages(store, "crash")
        # The first turn, and the second turn's finished first round (written per round).
        assert [m["role"] for m in history] == ["user", "assistant", "tool", "assistant",
                                                "user", "assistant", "tool"]
        assert history[0]["content"] == "First task" and history[3]["content"] == "first done"
        assert history[4]["content"] == "Second task" and history[6]["content"] == "quick result"
        first, second = store.list_runs("crash")
        # Opening the store found the killed kernel's run and ended it.
        assert first.status == "done" and second.status == "interrupted"
        events = store.get_events(second.run_id)
        # Everything of the finished first round was written when it ended; the round in
        # flight when the kernel died is lost whole, its start too (a round's events are
        # written with its end, in one transaction: agents/turn/drive.py).
        assert [e["output"] for e in events if e["type"] == "tool_returned"] == ["quick result"]
        assert [e["round"] for e in events if e["type"] == "round_started"] == [1]
        assert events[-1]["type"] == "run_failed"
        turns = store.list_turns("crash")
        assert [t.status for t in turns] == ["done", "interrupted"]
    # The session goes on in another process, with the history written before the kill.
    server.enqueue(text("still here"))
    chat("Are you there?", session="crash")
    sent = [m["content"] for m in server.requests[-1]["messages"]]
    assert sent == ["First task", "", "quick result", "first done", "Second task", "",
                    "quick result", "Are you there?"]


WRITER = '''
from jupyter_agent.agents.chat import chat
for i in range(8):
    run = chat("{tag}-" + str(i), session="shared", history=1)
    assert run.status == "done", run.error
'''


def test_two_kernels_write_one_session_at_once(server: ScriptedOpenAI,
                                               kernels: list[Any]) -> None:
    server.default = text("ok")
    for _ in range(2):
        kernels.append(_start(server))
    for _, kc in kernels:
        _execute(kc, "import jupyter_agent.agents.chat, jupyter_agent.session")  # warm imports
    ids = [kc.execute(WRITER.format(tag=tag)) for (_, kc), tag in zip(kernels, "AB", strict=True)]
    for (_, kc), msg_id in zip(kernels, ids, strict=True):
        reply = _wait_reply(kc, msg_id)
        assert reply["content"]["status"] == "ok", reply["content"]

    reset_default_store()
    with Store(default_store_path()) as store:
        messages = stored_messages(store, "shared")
        users = sorted(m["content"] for m in messages if m["role"] == "user")
        assert users == sorted(f"{t}-{i}" for t in "AB" for i in range(8))
        assert len(messages) == 32
        turns = store.list_turns("shared")
        assert len(turns) == 16 and {t.status for t in turns} == {"done"}
        runs = store.list_runs("shared")
        assert len(runs) == 16 and {r.status for r in runs} == {"done"}
        entries = store.session_transcript("shared")
        assert sorted(e["seq"] for e in entries) == list(range(1, 33))
        # Each run in one piece, the runs in the order they started (not the order they wrote).
        order = [e["run_id"] for e in entries]
        assert list(dict.fromkeys(order)) == [r.run_id for r in runs]
        assert all(order.count(r) == 2 for r in set(order))
        assert order == sorted(order, key=order.index)
