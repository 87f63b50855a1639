"""An approved tool that raises the stop signal ends the resumed run: no further request
(docs/behaviour.md §2.7), exactly as the same tool would without a card."""

from __future__ import annotations

import pytest

from jupyter_agent import StopRun, tool
from jupyter_agent.agents.resume import Answer, resume
from jupyter_agent.agents.toolloop import toolloop
from jupyter_agent.session import default_store
from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls

pytestmark = pytest.mark.timeout(60)


def _tools(calls: list[str]) -> None:
    @tool(requires_approval=True)
    def deploy(target: str) -> str:
        """Deploy, then stop the run."""
        calls.append(target)
        raise StopRun(f"deployed {target}; stopping")

    @tool
    def finish() -> str:
        """Stop the run."""
        raise StopRun("finished")


def test_an_approved_stop_ends_the_resumed_run(server: ScriptedOpenAI) -> None:
    calls: list[str] = []
    _tools(calls)
    server.enqueue(tool_calls([call("deploy", {"target": "prod"}, id="d1")]),
                   text("This request must never be made."))
    run = toolloop("Ship it.", tools=["deploy"])
    assert run.status == "ask" and calls == []
    sent = len(server.requests)

    done = resume(run.run_id, Answer("option", option_index=1))
    assert calls == ["prod"]
    assert done.status == "done"
    assert len(server.requests) == sent and server.pending == 1  # the model was not asked
    assert default_store().get_run(run.run_id).status == "done"
    saved = default_store().history_messages("default", 6)
    # The saved history ends with the call's real result (no dangling call).
    assert saved[-1]["role"] == "tool" and saved[-1]["content"] == "deployed prod; stopping"


def test_a_denied_stop_tool_lets_the_model_continue(server: ScriptedOpenAI) -> None:
    calls: list[str] = []
    _tools(calls)
    server.enqueue(tool_calls([call("deploy", {"target": "prod"}, id="d1")]),
                   text("Not deployed."))
    run = toolloop("Ship it.", tools=["deploy"])
    done = resume(run.run_id, Answer("option", option_index=3))
    assert calls == [] and done.status == "done" and done.answer == "Not deployed."


def test_a_stop_beside_a_waiting_card_still_ends_the_run(server: ScriptedOpenAI) -> None:
    """The round's other call stopped the run while deploy waited: after the card, no request."""
    calls: list[str] = []
    _tools(calls)
    server.enqueue(tool_calls([call("finish", {}, id="f1"),
                               call("deploy", {"target": "qa"}, id="d1")]),
                   text("This request must never be made."))
    run = toolloop("Finish and ship.", tools=["deploy", "finish"])
    assert run.status == "ask"
    sent = len(server.requests)
    done = resume(run.run_id, Answer("option", option_index=3))  # even denied
    assert done.status == "done" and len(server.requests) == sent and calls == []
