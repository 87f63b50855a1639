"""Questions that wait while other turns go on, and one conversation per notebook, in real
kernels.

The kernels are driven the way JupyterLab drives them: each ``execute_request`` names its cell
(``cellId`` in the request's metadata), and a kernel a Jupyter server starts knows its
notebook's path (``JPY_SESSION_NAME``). The model is the scripted OpenAI-compatible server;
the store is one SQLite file that every kernel and this test process open.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.manager import KernelManager

from jupyter_agent.session.store import Store
from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls
from tests.notebooks.test_core_notebook import python3_kernel  # noqa: F401  (a fixture)
from tests.stored import stored_messages

pytestmark = [pytest.mark.notebook, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parents[2]
ASK = {"reason": "r", "blockerType": "ambiguous_goal", "question": "Which period?",
       "options": ["Q1", "Q2", "Both"]}
SETUP = ("%load_ext jupyter_agent\n"
         "from jupyter_agent import tool\n\n"
         "@tool\n"
         "def add(a: int, b: int) -> int:\n"
         "    '''Add two integers.'''\n"
         "    return a + b")


class Kernel:
    """A real kernel, cells sent with their cell id as JupyterLab sends them."""

    def __init__(self, kernel_name: str, notebook: str | None) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
        env.pop("JPY_SESSION_NAME", None)
        if notebook is not None:
            env["JPY_SESSION_NAME"] = notebook
        self.km = KernelManager(kernel_name=kernel_name)
        self.km.start_kernel(env=env)
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=60)

    def run(self, cell_id: str, code: str) -> str:
        """Run ``code`` as cell ``cell_id``; its text outputs. A failing cell fails the test."""
        msg = self.kc.session.msg(
            "execute_request",
            {"code": code, "silent": False, "store_history": True, "user_expressions": {},
             "allow_stdin": False, "stop_on_error": True},
            metadata={"cellId": cell_id})
        self.kc.shell_channel.send(msg)
        msg_id = msg["header"]["msg_id"]
        texts: list[str] = []
        while True:
            m = self.kc.get_iopub_msg(timeout=120)
            if m["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = m["msg_type"], m["content"]
            if kind == "status" and content["execution_state"] == "idle":
                break
            if kind == "stream":
                texts.append(content["text"])
            elif kind in ("display_data", "update_display_data", "execute_result"):
                texts.append(str(content["data"].get("text/plain", "")))
            elif kind == "error":
                raise AssertionError(f"cell {cell_id} failed: {content['ename']}: "
                                     f"{content['evalue']}")
        return "\n".join(texts)

    def value(self, expr: str) -> Any:
        """A JSON value computed in the kernel."""
        out = self.run("probe", f"import json as _j; print(_j.dumps({expr}))")
        return json.loads(out.strip().splitlines()[-1])

    def stop(self) -> None:
        if self.km.has_kernel:
            self.kc.stop_channels()
            self.km.shutdown_kernel(now=True)


@pytest.fixture
def kernels(server: ScriptedOpenAI, python3_kernel: str  # noqa: F811
            ) -> Iterator[Any]:
    started: list[Kernel] = []

    def start(notebook: str | None) -> Kernel:
        k = Kernel(python3_kernel, notebook)
        started.append(k)
        k.run("setup", SETUP)
        return k

    yield start
    for k in started:
        k.stop()


def contents(messages: list[dict[str, Any]]) -> list[str]:
    """The text of each message (tool calls by their id), to compare conversations."""
    out = []
    for m in messages:
        calls = [c["id"] for c in m.get("tool_calls") or []]
        out.append(f"{m['role']}:{m.get('content') or ''}{calls or ''}")
    return out


def test_a_side_question_never_kills_a_waiting_plan(server: ScriptedOpenAI, kernels: Any) -> None:
    nb = kernels("work/report.ipynb")
    session = "notebook:work/report.ipynb"
    # Cell 1: the plan asks and waits.
    server.enqueue(tool_calls([call("ask_agent", ASK, id="ask_1")]))
    nb.run("cell-plan", "%%plan\nWrite the sales report.")
    plan_id = nb.value("_agent_run.run_id")
    assert nb.value("_agent_run.status") == "ask"

    # Cell 2 (same notebook, default session): an ordinary tool loop runs around it.
    server.enqueue(tool_calls([call("add", {"a": 2, "b": 3}, id="add_1")]), text("2 + 3 = 5."))
    nb.run("cell-side", "%%toolloop\nWhat is 2 + 3?")
    assert nb.value("_agent_run.status") == "done"
    side_request = server.requests[1]["messages"]
    # The waiting plan's half turn is not in the side question's request.
    assert not any("sales report" in str(m.get("content")) for m in side_request)

    # The plan still waits: `%agent pending` lists it, and its answer is taken.
    assert plan_id in nb.run("cell-pending", "%agent pending")
    store = Store()
    record = store.get_run(plan_id)
    assert record is not None and record.status == "ask" and record.session == session
    assert record.origin == "cell:cell-plan"

    server.enqueue(text("Report for Q2 written."))
    answered = nb.run("cell-answer", f"%agent resume {plan_id} --option 2")
    # The footer of the resumed run: the whole run's time, in its two parts.
    assert " s in 2 parts" in answered
    assert store.get_run(plan_id).status == "done"  # type: ignore[union-attr]
    resumed = server.requests[3]["messages"]
    # The resumed request is the plan's own conversation and the answer, nothing of cell 2.
    assert not any("2 + 3" in str(m.get("content")) for m in resumed)
    assert resumed[-1]["role"] == "tool" and resumed[-1]["tool_call_id"] == "ask_1"
    assert "option 2 of 3: Q2" in resumed[-1]["content"]

    # A later turn's history: each finished turn in one piece, in the order they started.
    server.enqueue(text("Both done."))
    nb.run("cell-chat", "%%chat\nWhat did we do?")
    history = contents(server.requests[4]["messages"])
    assert history == [
        "user:Write the sales report.", "assistant:['ask_1']",
        "tool:The user chose option 2 of 3: Q2", "assistant:Report for Q2 written.",
        "user:What is 2 + 3?", "assistant:['add_1']", "tool:5", "assistant:2 + 3 = 5.",
        "user:What did we do?"]
    # `%agent history` (the transcript) shows the plan's turn in one piece too.
    entries = store.session_transcript(session)
    runs = [e["run_id"] for e in entries]
    assert runs == sorted(runs, key=runs.index)  # each run's entries contiguous
    assert runs[0] == plan_id
    # A turn's status is its final one: no turn of the finished plan still says "ask".
    assert [t.status for t in store.list_turns(session)] == ["done"] * 4

    # Hostile: re-running the plan's cell replaces only that cell's question.
    server.enqueue(tool_calls([call("ask_agent", ASK, id="ask_2")]))
    nb.run("cell-plan", "%%plan\nWrite the sales report again.")
    first_again = nb.value("_agent_run.run_id")
    server.enqueue(tool_calls([call("ask_agent", ASK, id="ask_3")]))
    nb.run("cell-other-plan", "%%plan\nPlan the budget.")
    other = nb.value("_agent_run.run_id")
    server.enqueue(tool_calls([call("ask_agent", ASK, id="ask_4")]))
    nb.run("cell-plan", "%%plan\nWrite the sales report, third try.")
    third = nb.value("_agent_run.run_id")
    assert store.get_run(first_again).status == "superseded"  # type: ignore[union-attr]
    assert {r.run_id for r in store.list_pending(session)} == {other, third}
    # A late answer to the superseded question is refused; nothing changes.
    out = nb.run("cell-late", f"try:\n    %agent resume {first_again} --option 1\n"
                              "except Exception as e:\n    print('refused:', e)")
    assert "refused:" in out and "superseded" in out
    assert {r.run_id for r in store.list_pending(session)} == {other, third}
    store.close()


def test_two_notebooks_keep_their_own_conversations(server: ScriptedOpenAI, kernels: Any
                                                    ) -> None:
    a, b = kernels("a.ipynb"), kernels("b.ipynb")
    # Interleaved cells, questions pending in both notebooks at once.
    server.enqueue(tool_calls([call("ask_agent", ASK, id="ask_a")]))
    a.run("a1", "%%plan\nAlpha plan.")
    run_a = a.value("_agent_run.run_id")
    server.enqueue(tool_calls([call("ask_agent", ASK, id="ask_b")]))
    b.run("b1", "%%plan\nBravo plan.")
    run_b = b.value("_agent_run.run_id")
    server.enqueue(text("Alpha chat answer."))
    a.run("a2", "%%chat\nAlpha side question.")
    server.enqueue(text("Bravo chat answer."))
    b.run("b2", "%%chat\nBravo side question.")
    store = Store()
    assert {r.run_id for r in store.list_pending()} == {run_a, run_b}  # neither touched
    server.enqueue(text("Bravo finished."))
    b.run("b3", f"%agent resume {run_b} --option 1")
    server.enqueue(text("Alpha finished."))
    a.run("a3", f"%agent resume {run_a} --option 3")

    # No request of one notebook carries the other's words.
    for body in server.requests:
        words = json.dumps(body["messages"])
        assert not ("Alpha" in words and "Bravo" in words)
    texts = {s: [e["text"] for e in store.session_transcript(s) if e["role"] == "user"]
             for s in ("notebook:a.ipynb", "notebook:b.ipynb")}
    assert texts == {"notebook:a.ipynb": ["Alpha plan.", "Alpha side question."],
                     "notebook:b.ipynb": ["Bravo plan.", "Bravo side question."]}
    assert store.get_run(run_a).status == store.get_run(run_b).status == "done"  # type: ignore[union-attr]
    assert stored_messages(store, "default") == []  # nothing fell into the shared default

    # A restarted kernel of notebook A continues A's conversation (and only A's).
    a.stop()
    a2 = kernels("a.ipynb")
    server.enqueue(text("Still alpha."))
    a2.run("a4", "%%chat\nAlpha again.")
    sent = json.dumps(server.requests[-1]["messages"])
    assert "Alpha finished." in sent and "Bravo" not in sent
    # `--session NAME` still shares on purpose; a plain script's session stays `default`.
    server.enqueue(text("Shared."))
    b.run("b4", "%%chat --session notebook:a.ipynb\nJoin alpha.")
    assert "Alpha again." in json.dumps(server.requests[-1]["messages"])
    script = kernels(None)
    assert script.value("__import__('jupyter_agent.base.config', fromlist=['settings']).settings.session") == "default"
    store.close()
