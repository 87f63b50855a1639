"""A slow synchronous tool shows while it runs, in a real kernel (issue 37).

The kernel sends the tool's row as a patch when the tool starts. A front end whose card module
was still loading drops that patch (anywidget attaches its listener late), and while a
synchronous tool sleeps no other event comes to carry a snapshot: the card said "Waiting for
the model… / 0 rounds" until the tool returned. The live display now sends the widget's
unasked snapshots on a timer, so the synced ``view`` trait (which the widget manager applies
with or without a listener) holds the running row within about a second of the start.

The test speaks the front end's part with jupyter_client and reads the widget's comm messages.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls

pytestmark = [pytest.mark.notebook, pytest.mark.timeout(180)]

ROOT = Path(__file__).resolve().parents[2]
SLEEP = 8


@pytest.fixture
def kernel(tmp_path: Path, server: ScriptedOpenAI) -> Iterator[Any]:
    from jupyter_client.manager import start_new_kernel

    env = {k: v for k, v in os.environ.items() if k != "JUPYTER_AGENT_MODEL"}
    env.update(PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p),
               JUPYTER_AGENT_HOME=str(tmp_path), OPENAI_API_KEY="sk-test-key-0123456789",
               OPENAI_BASE_URL=server.base_url)
    km, kc = start_new_kernel(kernel_name="python3", env=env, cwd=str(tmp_path))
    try:
        yield kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def _run(kc: Any, code: str) -> list[tuple[float, dict[str, Any]]]:
    """Execute ``code``; every iopub message of it with its arrival time."""
    got: list[tuple[float, dict[str, Any]]] = []
    reply = kc.execute_interactive(code, output_hook=lambda m: got.append((time.monotonic(), m)),
                                   timeout=120, allow_stdin=False)
    assert reply["content"]["status"] == "ok", [m["content"] for _, m in got]
    return got


def test_a_sync_tool_that_sleeps_is_on_the_card_while_it_runs(kernel: Any,
                                                              server: ScriptedOpenAI) -> None:
    server.enqueue(tool_calls([call("slow", {"seconds": SLEEP}, id="c1")]), text("Slept."))
    _run(kernel, f'''%load_ext jupyter_agent
%config AgentMagics.base_url = "{server.base_url}"
import time
from jupyter_agent import tool
STARTED = []

@tool
def slow(seconds: int) -> str:
    """Sleep a while."""
    STARTED.append(time.time())
    time.sleep(seconds)
    return "slept"
''')
    msgs = _run(kernel, "%%toolloop --tools slow\nTake your time.")
    printed = [m["content"]["text"] for _, m in _run(kernel, "print(STARTED[0])")
               if m["msg_type"] == "stream"]
    started = float("".join(printed))
    # The kernel's clock and ours agree (same machine): time.time() of each message.
    offset = time.time() - time.monotonic()
    snapshots = [(t + offset, m["content"]["data"]["state"]["view"]) for t, m in msgs
                 if m["msg_type"] == "comm_msg" and m["content"]["data"].get("method") == "update"
                 and "view" in m["content"]["data"].get("state", {})]
    running = [(t, v) for t, v in snapshots if v.get("status") == "running"
               and any(i.get("kind") == "tool" and i.get("name") == "slow"
                       and i.get("state") == "running" for i in v.get("items", []))]
    assert running, "no snapshot showed the running tool before it returned"
    at, view = running[0]
    # Within 2 s of the tool starting (generous: the unasked snapshot is due at 1 s of the
    # widget's age), and long before it returns.
    assert at - started < 2.0, at - started
    assert at < started + SLEEP - 2
    (row,) = [i for i in view["items"] if i.get("kind") == "tool"]
    assert row["arguments"] == '{"seconds": 8}' and row["started_at"]
    assert view["footer"]["rounds"] == 1  # the round counter follows
