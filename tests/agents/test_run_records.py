"""What a run records (docs/behaviour.md §1.3, §2.3): an id for every request, a failed one
too; the turn record's error; the stop gate's refusal with its id and withdrawn draft."""

from __future__ import annotations

import pytest

from jupyter_agent import chat, tool, toolloop
from jupyter_agent.agents.plan import plan
from jupyter_agent.session import default_store
from tests.agents.plan.plan_scripts import set_plan, step_done
from tests.fakes.openai_server import ScriptedOpenAI, call, error, text, tool_calls

pytestmark = pytest.mark.timeout(60)


def test_scenario_9_the_failed_second_call_has_an_id_and_only_the_first_is_billed(
        server: ScriptedOpenAI, fast_retries: None) -> None:
    @tool
    def look() -> str:
        """Look."""
        return "seen"

    server.enqueue(tool_calls([call("look", {})]), error(400, "bad request from the model"))
    run = toolloop("Look.", tools=["look"])
    assert run.status == "error" and "bad request" in (run.error or "")
    assert len(run.request_ids) == 2 == len(server.requests)
    assert run.request_ids[0].startswith("chatcmpl-") and run.request_ids[1]
    assert len(set(run.request_ids)) == 2
    billed = [e for e in run.events if e.type == "usage"]
    assert len(billed) == 1  # the failed call brought no usage


def test_the_turn_record_keeps_the_error(server: ScriptedOpenAI, fast_retries: None) -> None:
    server.enqueue(error(401, "invalid api key sk-test-key-0123456789"))
    run = chat("Hi.")
    assert run.status == "error"
    (turn,) = default_store().list_turns("default")
    assert turn.status == "error" and turn.error
    assert "invalid api key" in turn.error
    assert "sk-test-key-0123456789" not in turn.error  # masked
    server.enqueue(text("fine"))
    chat("Again.")
    assert default_store().list_turns("default")[-1].error is None


def test_a_stop_gate_refusal_carries_its_id_and_the_withdrawn_draft(
        server: ScriptedOpenAI) -> None:
    server.enqueue(tool_calls([call("update_plan", set_plan("1"), id="p1")]),
                   text("finished early"),  # refused: step 1 is open
                   tool_calls([call("update_plan", step_done("1"), id="p2")]),
                   text("done"))
    run = plan("Do the one step.", tools=[])
    assert run.status == "done" and run.answer == "done"
    (refusal,) = [e for e in run.events if e.type == "stop_gate_feedback"]
    assert refusal.assistant_text == "finished early"
    assert refusal.id == f"stop_gate_{refusal.round}_{run.request_ids[refusal.round - 1]}"
    assert "finished early" != run.answer
