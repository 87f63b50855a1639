"""A card's widget is sent to the front end once per cell: the bundle drawn at a question
(and the hint under it) waits for the cell's end, and is never sent when the run ends within
the cell (a question answered up front). JupyterLab renders a widget bundle sent again as a
second view of the same widget; an update right after then disposed an output whose views were
still being built, and ipywidgets threw ``processLuminoMessage`` of null (issue #22; the
browser side is tests/browser/test_tutorial03_open_lab.py). In a real IPython shell."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.testing.globalipapp import start_ipython
from IPython.utils.capture import capture_output

from jupyter_agent.base.events import RUN_MIME_TYPE
from tests.agents.plan.plan_scripts import ask
from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls

WIDGET = "application/vnd.jupyter.widget-view+json"


@pytest.fixture
def shell() -> Iterator[InteractiveShell]:
    ip = start_ipython() or InteractiveShell.instance()
    assert ip.run_cell("%load_ext jupyter_agent").success
    assert ip.run_cell("%config AgentMagics.widgets = True").success
    yield ip
    ip.user_ns.pop("_agent_run", None)


def outputs(shell: InteractiveShell, source: str) -> tuple[Any, list[Any]]:
    with capture_output() as cap:
        result = shell.run_cell(source)
    assert result.success, result.error_in_exec
    return shell.user_ns["_agent_run"], [o for o in cap.outputs if RUN_MIME_TYPE in o.data]


def test_an_ask_answered_up_front_never_sends_the_widget_again(
        server: ScriptedOpenAI, shell: InteractiveShell) -> None:
    server.enqueue(tool_calls([call("ask_agent", ask(), id="a1")]), text("Booked option 3."))
    run, shown = outputs(shell, "%%plan --option 3 --no-history\nPlan a dinner.")
    assert run.status == "done", run.error
    assert WIDGET in shown[0].data and not shown[0].update  # the live card
    # What follows in the cell: only the finished, static card (no second widget bundle).
    assert [WIDGET in o.data for o in shown[1:]] == [False]
    assert shown[-1].update and shown[-1].data[RUN_MIME_TYPE]["view"]["status"] == "done"


def test_a_waiting_question_sends_its_card_once_when_the_cell_ends(
        server: ScriptedOpenAI, shell: InteractiveShell) -> None:
    server.enqueue(tool_calls([call("ask_agent", ask(), id="a1")]))
    run, shown = outputs(shell, "%%plan --no-history\nPlan a dinner.")
    assert run.status == "ask"
    # The live card, then one update: the question and the hint together (not one each).
    assert [(WIDGET in o.data, bool(o.update)) for o in shown] == [(True, False), (True, True)]
    view = shown[-1].data[RUN_MIME_TYPE]["view"]
    assert view["status"] == "ask" and view["ask"]["question"] == "Which one?"
    assert "Waiting for your answer" in view["hint"]

    # Answered from another cell: the static card replaces it at once.
    server.enqueue(text("Booked."))
    with capture_output() as cap:
        assert shell.run_cell(f"%agent resume {run.run_id} --option 2").success
    final = [o for o in cap.outputs if RUN_MIME_TYPE in o.data]
    assert final and WIDGET not in final[-1].data
    assert final[-1].data[RUN_MIME_TYPE]["view"]["status"] == "done"
