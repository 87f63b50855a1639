"""A widget view drawn afresh asks the kernel once (``{type: "sync"}``) and learns the truth.

The case: a run waits for an answer; the question is answered elsewhere (``resume``, as
``%agent resume`` in another cell does), so the card's synced snapshot still shows the
question. A view of that widget drawn again (reopened notebook, reloaded page) sends a sync:
the kernel must answer with a snapshot equal to the run's current view, then ``synced``.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from jupyter_agent.agents.resume import Answer, resume
from jupyter_agent.agents.toolloop import toolloop
from jupyter_agent.ui.live import displays
from tests.fakes.comms import recording_comms, run_widget_comm, widget_listener
from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls


@pytest.fixture(autouse=True)
def _quiet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def test_a_sync_after_an_answer_given_elsewhere_sends_the_current_view(
        server: ScriptedOpenAI) -> None:
    server.enqueue(tool_calls([call("bash", {"command": "echo hi"}, id="c1")]), text("ok"))
    shown, listener = widget_listener()
    with recording_comms() as comms, contextlib.redirect_stdout(io.StringIO()):
        run = toolloop("go", tools=["bash"], listeners=[listener])
        assert run.status == "ask"
        widget = shown[0].widget
        assert widget is not None and widget.view["status"] == "ask"  # the card's snapshot
        # Answered from "another cell": the widget's synced traits still show the question.
        resume(run.run_id, Answer("option", option_index=3), run=run,
               listeners=[displays[run.run_id].on_event])
        assert run.status == "done" and widget.view["status"] == "ask"
        wire = run_widget_comm(comms)
        start = len(wire.messages)
        widget._on_custom_msg(widget, {"type": "sync", "seq": 0}, [])  # a view drawn again
        sent = [d for kind, d in wire.messages[start:] if kind == "comm_msg"]
    snap, answer = sent
    assert snap["method"] == "update"
    assert snap["state"]["view"] == run.view and snap["state"]["view"]["status"] == "done"
    assert snap["state"]["view"]["ask"] is None  # no question left to click
    assert answer["content"] == {"type": "synced", "seq": snap["state"]["view_seq"]}
    # The same sync again (a second view drawn): nothing new to send but the answer.
    start = len(wire.messages)
    widget._on_custom_msg(widget, {"type": "sync", "seq": snap["state"]["view_seq"]}, [])
    again = [d["content"] for kind, d in wire.messages[start:] if kind == "comm_msg"]
    assert again == [answer["content"]]
