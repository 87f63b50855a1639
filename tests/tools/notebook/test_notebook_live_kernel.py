"""The live notebook over a real kernel's comm (jupyter_client speaks the front end's part):
``%load_ext jupyter_agent`` opens the comm; a snapshot sent on it just before an execute
request is what that request's ``read_notebook`` reads; another client's snapshot is not; a
hostile snapshot is refused with a one-line error on the comm and the saved file is read;
after a restart the old comm is gone and the new ``%load_ext`` opens a fresh one."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest

from jupyter_agent.edge.live_comm import TARGET

pytestmark = [pytest.mark.notebook, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parents[3]
SAVED = "total = 1  # as saved"
READ = ("from jupyter_agent.tools.notebook import notebook_tools\n"
        "print({t.name: t for t in notebook_tools(get_ipython())}['read_notebook']"
        ".invoke('{}').output)")


def snapshot(source: str, path: str = "analysis.ipynb") -> dict[str, Any]:
    return {"version": 1, "path": path,
            "cells": [{"kind": "code", "source": source, "execution_count": None,
                       "outputs": []}]}


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Any]]:
    from jupyter_client.manager import start_new_kernel

    home = tmp_path_factory.mktemp("live-kernel")
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(SAVED)]),
                   home / "analysis.ipynb")
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "JUPYTER_AGENT_MODEL")}
    env.update(PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p),
               JUPYTER_AGENT_HOME=str(home), JPY_SESSION_NAME="analysis.ipynb")
    km, kc = start_new_kernel(kernel_name="python3", env=env, cwd=str(home))
    try:
        yield km, kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def execute(kc: Any, code: str) -> list[dict[str, Any]]:
    msgs: list[dict[str, Any]] = []
    reply = kc.execute_interactive(code, output_hook=msgs.append, timeout=120,
                                   allow_stdin=False)
    assert reply["content"]["status"] == "ok", msgs
    return msgs


def stdout(msgs: list[dict[str, Any]]) -> str:
    return "".join(m["content"]["text"] for m in msgs
                   if m["msg_type"] == "stream" and m["content"]["name"] == "stdout")


def load_ext(kc: Any) -> str:
    """Run ``%load_ext jupyter_agent``; the id of the comm the kernel opened."""
    opened = [m["content"]["comm_id"] for m in execute(kc, "%load_ext jupyter_agent")
              if m["msg_type"] == "comm_open" and m["content"]["target_name"] == TARGET]
    assert len(opened) == 1
    return str(opened[0])


def send(kc: Any, comm_id: str, data: Any) -> None:
    """What the extension does before an execute request: a comm message on the shell."""
    kc.shell_channel.send(kc.session.msg("comm_msg", {"comm_id": comm_id, "data": data}))


def comm_reply(kc: Any, comm_id: str, timeout: float = 30) -> dict[str, Any]:
    """The next message the kernel sends on ``comm_id`` (waits for it)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        msg = kc.get_iopub_msg(timeout=timeout)
        if msg["msg_type"] == "comm_msg" and msg["content"]["comm_id"] == comm_id:
            return dict(msg["content"]["data"])
    raise AssertionError("no comm message from the kernel")


def read(kc: Any) -> str:
    return stdout(execute(kc, READ))


def test_live_cells_over_a_real_comm(kernel: tuple[Any, Any]) -> None:
    km, kc = kernel
    # Before the extension is loaded, and before anything was sent: the saved file.
    comm_id = load_ext(kc)
    assert read(kc).startswith("Notebook from file analysis.ipynb (as last saved)")

    send(kc, comm_id, snapshot("total = 2  # typed, not saved"))
    out = read(kc)
    assert out.startswith("Notebook from live notebook analysis.ipynb (unsaved edits included)")
    assert "typed, not saved" in out and SAVED not in out

    # A second front end on the same kernel (its own client session) sends its notebook:
    # each request reads its own client's snapshot.
    from jupyter_client.session import Session

    other = km.client(session=Session(key=km.session.key))  # its own session id
    assert other.session.session != kc.session.session
    other.start_channels()
    try:
        other.wait_for_ready(timeout=60)
        send(other, comm_id, snapshot("other = 'notebook B'", path="B.ipynb"))
        assert "notebook B" in read(other) and "typed, not saved" not in read(other)
        out = read(kc)
        assert "typed, not saved" in out and "notebook B" not in out
    finally:
        other.stop_channels()

    # A hostile snapshot: refused with a one-line error on the comm; the file is read.
    send(kc, comm_id, {"version": 1, "cells": [{"kind": "code", "source": "c"}] * 10_000})
    error = comm_reply(kc, comm_id)["error"]
    assert error == "live cells refused: 10,000 cells (at most 2,000)"
    send(kc, comm_id, ["<script>alert(1)</script>"])
    assert comm_reply(kc, comm_id)["error"].startswith("live cells refused:")
    out = read(kc)
    assert out.startswith("Notebook from file analysis.ipynb") and SAVED in out
    assert "alert" not in out

    # A restart: the old comm is gone; until %load_ext runs again, the file.
    km.restart_kernel(now=True)
    kc.wait_for_ready(timeout=60)
    execute(kc, "pass")
    send(kc, comm_id, snapshot("stale = 'sent on the old comm'"))
    fresh = load_ext(kc)
    assert fresh != comm_id
    assert read(kc).startswith("Notebook from file analysis.ipynb")
    send(kc, fresh, snapshot("total = 3  # after the restart"))
    out = read(kc)
    assert "after the restart" in out and "old comm" not in out
