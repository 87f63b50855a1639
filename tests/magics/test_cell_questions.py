"""A question waits for its own cell: other cells go on around it; re-running its cell closes
its card at once (in a real IPython shell, cells named as JupyterLab names them)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.testing.globalipapp import start_ipython
from IPython.utils.capture import capture_output

from jupyter_agent.base.events import RUN_MIME_TYPE
from jupyter_agent.session import default_store
from jupyter_agent.ui.live import displays
from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls

ASK = {"reason": "r", "blockerType": "ambiguous_goal", "question": "Which period?",
       "options": ["Q1", "Q2", "Both"]}


@pytest.fixture
def shell() -> Iterator[InteractiveShell]:
    ip = start_ipython() or InteractiveShell.instance()
    assert ip.run_cell("%load_ext jupyter_agent").success
    yield ip
    ip.user_ns.pop("_agent_run", None)


def run(shell: InteractiveShell, source: str, cell_id: str | None) -> tuple[Any, Any]:
    with capture_output() as cap:
        result = shell.run_cell(source, cell_id=cell_id)
    assert result.success, result.error_in_exec
    return shell.user_ns["_agent_run"], cap


def test_rerunning_its_cell_closes_the_waiting_card_at_once(server: ScriptedOpenAI,
                                                           shell: InteractiveShell) -> None:
    server.enqueue(tool_calls([call("ask_agent", ASK, id="ask_1")]))
    first, _ = run(shell, "%%plan\nWrite the report.", "cell-1")
    assert first.status == "ask" and first.run_id in displays
    session = first.session

    # Another cell runs: the question of cell 1 stays waiting, its card untouched.
    server.enqueue(text("Five."))
    side, _ = run(shell, "%%chat\nWhat is 2 + 3?", "cell-2")
    assert side.status == "done" and first.view["status"] == "ask"
    assert [r.run_id for r in default_store().list_pending(session)] == [first.run_id]

    # Cell 1 again: its old question is withdrawn, and its card says so now (an update of the
    # old output by display id, sent from the new cell), buttons gone.
    server.enqueue(tool_calls([call("ask_agent", ASK, id="ask_2")]))
    second, cap = run(shell, "%%plan\nWrite the report, again.", "cell-1")
    assert second.status == "ask"
    assert first.view["status"] == "superseded" and first.view["ask"] is None
    assert "run again" in first.view["error"]
    assert first.run_id not in displays and second.run_id in displays
    updates = [o.data[RUN_MIME_TYPE] for o in cap.outputs if RUN_MIME_TYPE in o.data
               and o.data[RUN_MIME_TYPE]["view"]["run_id"] == first.run_id]
    assert updates and updates[-1]["view"]["status"] == "superseded"
    assert "application/vnd.jupyter.widget-view+json" not in [
        k for o in cap.outputs if RUN_MIME_TYPE in o.data
        and o.data[RUN_MIME_TYPE]["view"]["run_id"] == first.run_id for k in o.data]
    assert [r.run_id for r in default_store().list_pending(session)] == [second.run_id]


def test_without_a_cell_id_nothing_is_superseded(server: ScriptedOpenAI,
                                                 shell: InteractiveShell) -> None:
    server.enqueue(tool_calls([call("ask_agent", ASK, id="ask_1")]))
    first, _ = run(shell, "%%plan\nWrite the report.", None)
    server.enqueue(tool_calls([call("ask_agent", ASK, id="ask_2")]))
    second, _ = run(shell, "%%plan\nWrite the report.", None)
    # A console or a script cannot say "the same cell": both questions stay answerable.
    assert first.view["status"] == second.view["status"] == "ask"
    assert {r.run_id for r in default_store().list_pending()} == {first.run_id, second.run_id}
