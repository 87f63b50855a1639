"""``run_python`` in a real kernel (jupyter_client): the next cell sees what the code did, an
error or a time limit leaves the kernel usable, figures are captured, and it works from a tool
loop running inside a cell."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls

pytestmark = [pytest.mark.notebook, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parents[3]
KEY = "sk-test-key-0123456789"  # the ``server`` fixture's key

SETUP = """
import json
from jupyter_agent.tools.notebook import notebook_tools
T = {t.name: t for t in notebook_tools(timeout=2)}
def agent_run(code, tools=T):
    r = tools['run_python'].invoke(json.dumps({'code': code}))
    print(r.output)
    return r
"""


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Any]]:
    from jupyter_client.manager import start_new_kernel

    home = tmp_path_factory.mktemp("kernel-home")
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "JUPYTER_AGENT_MODEL")}
    env.update(PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p),
               MPLBACKEND="Agg", JUPYTER_AGENT_HOME=str(home))
    km, kc = start_new_kernel(kernel_name="python3", env=env, cwd=str(home))
    try:
        status, msgs = execute(kc, SETUP)
        assert status == "ok", msgs
        yield km, kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def execute(kc: Any, code: str, timeout: float = 120) -> tuple[str, list[dict[str, Any]]]:
    msgs: list[dict[str, Any]] = []
    reply = kc.execute_interactive(code, output_hook=msgs.append, timeout=timeout,
                                   allow_stdin=False)
    return reply["content"]["status"], msgs


def stdout(msgs: list[dict[str, Any]]) -> str:
    return "".join(m["content"]["text"] for m in msgs
                   if m["msg_type"] == "stream" and m["content"]["name"] == "stdout")


def images(msgs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in msgs if m["msg_type"] in ("display_data", "execute_result")
            and "image/png" in m["content"]["data"]]


_STARTED = "__cell_started__"


def interrupted_cell(km: Any, kc: Any, code: str, after: float) -> dict[str, Any]:
    """Run ``code``, interrupt the kernel ``after`` seconds after the cell has started (it
    prints a marker first: a kernel slow to start the cell is not interrupted too early),
    return the reply."""
    msg_id = kc.execute(f"print({_STARTED!r}, flush=True)\n{code}")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        msg = kc.get_iopub_msg(timeout=60)
        if (msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "stream"
                and _STARTED in msg["content"]["text"]):
            break
    time.sleep(after)
    km.interrupt_kernel()
    while True:
        reply = kc.get_shell_msg(timeout=60)
        if reply["parent_header"].get("msg_id") == msg_id:
            break
    while True:  # drain this cell's outputs
        msg = kc.get_iopub_msg(timeout=60)
        if (msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "status"
                and msg["content"]["execution_state"] == "idle"):
            return reply["content"]


def test_the_next_cell_sees_what_the_code_did(kernel: tuple[Any, Any]) -> None:
    _, kc = kernel
    status, msgs = execute(kc, "r = agent_run('made_by_agent = 6 * 7\\nmade_by_agent')")
    assert status == "ok" and stdout(msgs) == "[result]\n42\n"
    status, msgs = execute(kc, "print(made_by_agent + 1)")
    assert status == "ok" and stdout(msgs) == "43\n"


def test_an_error_is_short_and_the_kernel_goes_on(kernel: tuple[Any, Any]) -> None:
    _, kc = kernel
    status, msgs = execute(kc, "r = agent_run('def f():\\n    return {}[\"missing\"]\\nf()')\n"
                               "print('error field:', r.error)")
    out = stdout(msgs)
    assert status == "ok"  # the tool reports the error; the cell itself did not fail
    assert out.startswith('[error]\nTraceback (most recent call last):\n  File "<agent-cell-')
    assert "return {}[\"missing\"]" in out and "error field: KeyError: 'missing'" in out
    assert "ipykernel" not in out and "IPython" not in out and "jupyter_agent" not in out
    assert not [m for m in msgs if m["msg_type"] == "error"]
    status, msgs = execute(kc, "print('alive')")
    assert (status, stdout(msgs)) == ("ok", "alive\n")


def test_the_time_limit_interrupts_and_the_kernel_stays_usable(kernel: tuple[Any, Any]) -> None:
    km, kc = kernel
    start = time.perf_counter()
    status, msgs = execute(kc, "r = agent_run('import time\\nticks = 0\\nwhile True:\\n"
                               "    ticks += 1\\n    time.sleep(0.01)')")
    assert time.perf_counter() - start < 60
    out = stdout(msgs)
    assert status == "ok" and out.startswith("[error]\nInterrupted: the code ran longer than 2 s")
    status, msgs = execute(kc, "print(ticks > 0, r.value.timed_out)")
    assert (status, stdout(msgs)) == ("ok", "True True\n")
    # The kernel's own interrupt (the stop button) still works afterwards.
    reply = interrupted_cell(km, kc, "import time\ntime.sleep(60)", after=0.2)
    assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt"
    status, msgs = execute(kc, "print('still here')")
    assert (status, stdout(msgs)) == ("ok", "still here\n")


def test_the_users_interrupt_during_run_python_stops_the_cell(kernel: tuple[Any, Any]) -> None:
    km, kc = kernel
    reply = interrupted_cell(km, kc, "slow = {t.name: t for t in notebook_tools(timeout=120)}\n"
                                     "agent_run('import time\\ntime.sleep(60)', slow)", after=1)
    assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt"
    status, msgs = execute(kc, "r = agent_run('1 + 1')")
    assert (status, stdout(msgs)) == ("ok", "[result]\n2\n")


def test_figures_are_captured_with_agg_and_inline(kernel: tuple[Any, Any]) -> None:
    _, kc = kernel
    code = ("r = agent_run('import matplotlib.pyplot as plt\\nplt.plot([1, 2, 3])\\n"
            "plt.title(\"growth\")\\nplt.show()')\n"
            "print(len(r.value.figures), r.value.figures[0].png_base64[:10])")
    status, msgs = execute(kc, "import matplotlib\nprint(matplotlib.get_backend())\n" + code)
    out = stdout(msgs)
    assert status == "ok" and out.lower().startswith("agg\n"), out
    assert "[figure 1: 640x480 PNG, 1 axes, (title 'growth', 1 lines)]" in out
    assert out.rstrip().endswith("1 iVBORw0KGg")  # the PNG is kept for the card
    assert images(msgs) == []
    status, msgs = execute(kc, "%matplotlib inline")
    assert status == "ok"
    status, msgs = execute(kc, code)
    out = stdout(msgs)
    assert status == "ok" and "title 'growth', 1 lines" in out and "1 iVBORw0KGg" in out
    assert images(msgs) == []  # captured, not shown again by the inline backend


def test_run_python_from_a_tool_loop_inside_a_cell(kernel: tuple[Any, Any],
                                                   server: ScriptedOpenAI) -> None:
    _, kc = kernel
    server.enqueue(
        tool_calls([call("list_variables", {}, id="call_list")]),
        tool_calls([call("run_python", {"code": "total = sum(values)\nprint('total', total)\n"
                                                "total * 2"}, id="call_run")]),
        text("The total is 60."))
    status, msgs = execute(kc, (
        "import os\n"
        f"os.environ['OPENAI_BASE_URL'] = {server.base_url!r}\n"
        f"os.environ['OPENAI_API_KEY'] = {KEY!r}\n"
        "from jupyter_agent import toolloop\n"
        "values = [10, 20, 30]\n"
        "run = toolloop('Sum the values.', tools=notebook_tools(), auto_approve=True)\n"
        "print(run.status, run.answer)"))
    assert status == "ok", msgs
    assert stdout(msgs).endswith("done The total is 60.\n")
    results = {m["tool_call_id"]: m["content"] for m in server.requests[-1]["messages"]
               if m["role"] == "tool"}
    assert "values (list): 3 items: [10, 20, 30]" in results["call_list"]
    assert results["call_run"] == "[stdout]\ntotal 60\n[result]\n120"
    status, msgs = execute(kc, "print(total)")  # the agent's variable is in the kernel
    assert (status, stdout(msgs)) == ("ok", "60\n")
    assert KEY not in json.dumps(server.requests)  # the key only ever went in the header
