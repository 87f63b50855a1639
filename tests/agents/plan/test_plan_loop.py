"""The ``%%plan`` loop against the scripted server (docs/behaviour.md §6).

Scenarios §14.15–14.19, 14.24, 14.25, 14.33: tool routing, the stop gate
with our ``incomplete`` ending, require-plan detection, batching, the conflict warning.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from jupyter_agent.agents.plan import INTERACTIVE_NOT_SUPPORTED, MAIN_AGENT_MARKER, plan
from jupyter_agent.session import Store
from jupyter_agent.tools.registry import Tool, tool
from tests.agents.plan.plan_scripts import ask, events_of, set_plan, step_done, tool_names
from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls
from tests.stored import stored_messages

pytestmark = pytest.mark.usefixtures("plan_env")


def planning_prompt(message: dict[str, Any], *, runtime_tools: bool) -> bool:
    """True for the planning agent's system prompt (the tool constraint only without tools).

    Checked by its sections rather than verbatim: the runtime layer may add hints to the
    background section.
    """
    content = message["content"]
    return (message["role"] == "system" and content.startswith(MAIN_AGENT_MARKER)
            and ("<tool_constraint>" in content) is not runtime_tools)


def test_simplest_plan_run_answers_directly(srv: ScriptedOpenAI, client: Any, store: Store):
    # §14.17: no plan asked for, none made: the answer is accepted as it is.
    srv.enqueue(text("Hi! How can I help?"))
    run = plan("hello there", client=client, store=store, tools=[])

    assert run.status == "done" and run.answer == "Hi! How can I help?"
    assert run.plan is None and run.error is None
    assert not events_of(run, "stop_gate_feedback")
    (req,) = srv.requests
    assert req["tool_choice"] == "auto"
    assert tool_names(req) == ["ask_agent", "update_plan"]
    system, user = req["messages"]
    assert planning_prompt(system, runtime_tools=False)
    assert user == {"role": "user", "content": "hello there"}
    assert store.get_run(run.run_id).status == "done"
    assert stored_messages(store, "default") == [
        {"role": "user", "content": "hello there"},
        {"role": "assistant", "content": "Hi! How can I help?"},
    ]


def test_session_history_comes_before_the_user_message_and_system_text_is_background(
        srv: ScriptedOpenAI, client: Any, store: Store):
    srv.enqueue(text("one"), text("two"))
    plan("first question", client=client, store=store, tools=[])
    plan("second question", client=client, store=store, tools=[], system="Be terse.")

    messages = srv.requests[1]["messages"]
    assert planning_prompt(messages[0], runtime_tools=False)
    assert "Be terse." in messages[0]["content"].split("</user_background>")[0]
    assert messages[1:] == [
        {"role": "user", "content": "first question"},
        {"role": "assistant", "content": "one"},
        {"role": "user", "content": "second question"},
    ]


def test_require_plan_feedback_then_plan_then_forced_final_answer(
        srv: ScriptedOpenAI, client: Any, store: Store):
    # §14.15, §14.25, §2.8: the draft is withdrawn, the feedback is added,
    # and once the plan is complete the final request forces an answer (tool_choice none).
    srv.enqueue(
        text("Here is the migration, no plan needed."),
        tool_calls([call("update_plan", set_plan("1"), id="p1")]),
        tool_calls([call("update_plan", step_done("1"), id="p2")]),
        text("Final."),
    )
    run = plan("Please create a plan for migrating the DB", client=client, store=store,
               tools=[])

    assert run.status == "done" and run.answer == "Final."
    (gate,) = events_of(run, "stop_gate_feedback")
    assert gate.reason == "Explicit plan requirement has no active plan."
    second = srv.requests[1]["messages"]
    assert second[-2] == {"role": "assistant",
                          "content": "Here is the migration, no plan needed."}
    assert second[-1]["role"] == "user"
    assert second[-1]["content"].startswith("<stop_gate_feedback>\nYou cannot finish yet.")
    assert [r["tool_choice"] for r in srv.requests] == ["auto", "auto", "auto", "none"]
    texts = [i for i in run.view["items"] if i["kind"] == "text"]
    assert [(t["text"], t["withdrawn"]) for t in texts] == [
        ("Here is the migration, no plan needed.", True), ("Final.", False)]
    assert run.view["answer"] == "Final."
    assert run.plan is not None and run.plan["steps"][0]["status"] == "done"
    # The withdrawn draft and the feedback never reach the session history.
    saved = stored_messages(store, "default")
    assert [m["role"] for m in saved] == ["user", "assistant", "tool", "assistant", "tool",
                                          "assistant"]
    assert all("no plan needed" not in (m.get("content") or "") for m in saved)


def test_three_direct_answers_end_incomplete_with_the_last_draft(
        srv: ScriptedOpenAI, client: Any, store: Store):
    # §14.16, §6.8: status incomplete, draft kept.
    srv.enqueue(text("draft 1"), text("draft 2"), text("draft 3"))
    run = plan("Please create a plan for migrating the DB", client=client, store=store,
               tools=[])

    assert run.status == "incomplete"
    assert run.answer == "draft 3"
    assert run.error is not None
    assert run.error.splitlines()[0] == "Active plan is not complete after 3 stop checks."
    assert "Explicit plan requirement has no active plan." in run.error
    assert len(srv.requests) == 3 and len(events_of(run, "stop_gate_feedback")) == 2
    withdrawn = [(i["text"], i["withdrawn"]) for i in run.view["items"] if i["kind"] == "text"]
    assert withdrawn == [("draft 1", True), ("draft 2", True), ("draft 3", False)]
    (finished,) = events_of(run, "run_finished")
    assert finished.status == "incomplete" and finished.answer == "draft 3"
    assert store.get_run(run.run_id).status == "incomplete"


def test_update_plan_set_plan_response_and_event(srv: ScriptedOpenAI, client: Any, store: Store):
    # §14.18.
    srv.enqueue(tool_calls([call("update_plan", set_plan("1"), id="p1")]),
                tool_calls([call("update_plan", step_done("1"), id="p2")]), text("ok"))
    run = plan("tidy up", client=client, store=store, tools=[])

    tool_msg = srv.requests[1]["messages"][-1]
    assert tool_msg == {
        "role": "tool", "tool_call_id": "p1",
        "content": "Applied 1 plan update.\n"
                   "Plan progress: 0 done, 0 in progress, 1 pending, 0 blocked, 0 skipped."}
    first, second = events_of(run, "plan_updated")
    assert len(first.plan["planId"]) == 6 and first.plan["steps"][0]["status"] == "pending"
    assert second.plan["planId"] == first.plan["planId"]
    assert run.plan == second.plan
    cards = [i for i in run.view["items"] if i["kind"] == "tool"]
    assert all(c["internal"] and c["state"] == "done" for c in cards)


def test_failed_batch_changes_nothing(srv: ScriptedOpenAI, client: Any, store: Store):
    # §14.19.
    bad = {"updates": [{"action": "update_step", "stepId": "1", "status": "done",
                        "outputSummary": "ok"},
                       {"action": "update_step", "stepId": "99", "status": "done",
                        "outputSummary": "ok"}]}
    srv.enqueue(tool_calls([call("update_plan", set_plan("1", "2"), id="p1")]),
                tool_calls([call("update_plan", bad, id="p2")]),
                tool_calls([call("update_plan", step_done("1", "2"), id="p3")]), text("ok"))
    run = plan("tidy up", client=client, store=store, tools=[])

    response = srv.requests[2]["messages"][-1]["content"]
    assert response.startswith("Batch update failed at operation 2/2. No changes were applied.")
    assert "Unknown plan step: 99" in response
    updates = events_of(run, "plan_updated")
    assert len(updates) == 2  # the failed batch emitted nothing
    failed = next(r for r in run.tool_records if r["call_id"] == "p2")
    assert failed["error"] == response
    assert run.status == "done"


def test_answer_is_the_text_without_tool_calls(srv: ScriptedOpenAI, client: Any, store: Store):
    # §14.33: [text "A" with tool calls, tool message, text "B"] answers "B".
    @tool(register=False)
    def lookup(key: str) -> str:
        """Look a key up."""
        return f"value of {key}"

    srv.enqueue(tool_calls([call("lookup", {"key": "k"}, id="c1")], text="A"), text("B"))
    run = plan("look k up", client=client, store=store, tools=[lookup])

    assert run.status == "done" and run.answer == "B"
    assert tool_names(srv.requests[0]) == ["lookup", "ask_agent", "update_plan"]
    assert planning_prompt(srv.requests[0]["messages"][0], runtime_tools=True)
    assert run.tool_values["c1"] == "value of k"


def test_runtime_tool_after_complete_plan_is_gated_and_tool_choice_returns_to_auto(
        srv: ScriptedOpenAI, client: Any, store: Store):
    # §14.24, §14.25, §6.3: the forced answer is ignored by the model, a
    # runtime tool runs, so the gate refuses until update_plan records it.
    @tool(register=False)
    def lookup(key: str) -> str:
        """Look a key up."""
        return "v"

    srv.enqueue(
        tool_calls([call("update_plan", set_plan("1"), id="p1")]),
        tool_calls([call("update_plan", step_done("1"), id="p2")]),
        tool_calls([call("lookup", {"key": "k"}, id="c1")]),  # sent with tool_choice none
        text("done early"),
        tool_calls([call("update_plan", step_done("1"), id="p3")]),
        text("done"),
    )
    run = plan("do it", client=client, store=store, tools=[lookup])

    assert [r["tool_choice"] for r in srv.requests] == ["auto", "auto", "none", "auto", "auto",
                                                        "none"]
    (gate,) = events_of(run, "stop_gate_feedback")
    assert gate.reason == "Runtime tool result is not recorded in active plan."
    assert ("The active plan is resolved, but recent runtime tool results are not recorded yet."
            in gate.feedback)
    assert run.status == "done" and run.answer == "done"


def test_runtime_tools_batch_and_internal_tools_run_alone_in_order(
        srv: ScriptedOpenAI, client: Any, store: Store):
    # §14.3 on the plan loop: [rt1, update_plan, rt2, rt3] runs rt1, then update_plan,
    # then rt2 and rt3 together (a barrier only they can pass together proves it).
    order: list[str] = []
    lock = threading.Lock()
    pair = threading.Barrier(2, timeout=5)

    @tool(register=False)
    def single(tag: str) -> str:
        """Record a tag."""
        with lock:
            order.append(tag)
        return tag

    @tool(register=False)
    def together(tag: str) -> str:
        """Wait for a partner call, then record a tag."""
        pair.wait()
        with lock:
            order.append(tag)
        return tag

    def on_event(event: Any) -> None:
        if event.type == "plan_updated":
            with lock:
                order.append("plan")

    srv.enqueue(tool_calls([call("single", {"tag": "rt1"}, id="c1"),
                            call("update_plan", set_plan("1"), id="p1"),
                            call("together", {"tag": "rt2"}, id="c2"),
                            call("together", {"tag": "rt3"}, id="c3")]),
                tool_calls([call("update_plan", step_done("1"), id="p2")]), text("ok"))
    run = plan("go", client=client, store=store, tools=[single, together],
               listeners=[on_event])

    assert order[:2] == ["rt1", "plan"] and sorted(order[2:4]) == ["rt2", "rt3"]
    tool_msgs = [m for m in srv.requests[1]["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_msgs] == ["c1", "p1", "c2", "c3"]  # call order
    assert [m["content"] for m in tool_msgs if m["tool_call_id"] in ("c2", "c3")] == ["rt2",
                                                                                      "rt3"]
    assert run.status == "done"


def test_runtime_batches_hold_at_most_five_calls(srv: ScriptedOpenAI, client: Any, store: Store):
    state = {"active": 0, "max": 0, "entered": 0, "finished": 0}
    cond = threading.Condition()
    seen_finished: dict[int, int] = {}

    @tool(register=False)
    def work(n: int) -> str:
        """Count concurrent calls."""
        with cond:
            state["active"] += 1
            state["entered"] += 1
            state["max"] = max(state["max"], state["active"])
            seen_finished[n] = state["finished"]
            cond.notify_all()
            cond.wait_for(lambda: state["entered"] >= 5, timeout=5)
            state["active"] -= 1
            state["finished"] += 1
        return str(n)

    srv.enqueue(tool_calls([call("work", {"n": i}, id=f"w{i}") for i in range(6)]), text("ok"))
    run = plan("go", client=client, store=store, tools=[work])

    assert run.status == "done"
    assert state["max"] == 5
    assert seen_finished[5] == 5  # the sixth call started after the first batch of five ended


def test_runtime_tool_named_like_an_internal_tool_is_dropped_with_a_warning(
        srv: ScriptedOpenAI, client: Any, store: Store):
    # §14.31.
    def impostor() -> str:
        return "should never run"

    @tool(register=False)
    def lookup(key: str) -> str:
        """Look a key up."""
        return "v"

    srv.enqueue(text("ok"))
    run = plan("go", client=client, store=store,
               tools=[Tool(impostor, name="update_plan"), lookup])

    (warning,) = events_of(run, "warning")
    assert warning.message == 'Runtime tool "update_plan" conflicts with internal agent tool.'
    assert tool_names(srv.requests[0]) == ["lookup", "ask_agent", "update_plan"]
    assert {"kind": "warning", "message": warning.message} in run.view["items"]


def test_invalid_ask_is_a_tool_error_not_a_pause(srv: ScriptedOpenAI, client: Any, store: Store):
    # §14.28.
    srv.enqueue(tool_calls([call("ask_agent", ask(options=["x", "y"]), id="a1")]), text("fine"))
    run = plan("go", client=client, store=store, tools=[])

    assert run.status == "done" and run.answer == "fine"
    response = srv.requests[1]["messages"][-1]
    assert response["tool_call_id"] == "a1"
    assert response["content"].startswith("Invalid ask_agent arguments:")
    assert not events_of(run, "ask_pending")


def test_unknown_tool_goes_back_to_the_model(srv: ScriptedOpenAI, client: Any, store: Store):
    srv.enqueue(tool_calls([call("nope", {}, id="c1")]), text("sorry"))
    run = plan("go", client=client, store=store, tools=[])

    assert srv.requests[1]["messages"][-1]["content"] == (
        'Unknown tool "nope". Available tools: ask_agent, update_plan')
    assert run.status == "done"


def test_an_interactive_child_is_not_supported(srv: ScriptedOpenAI, client: Any, store: Store):
    # §6.4: an agent used as a tool suspends on its own question; the planning loop
    # answers the fixed message instead of suspending.
    @tool(register=False)
    def helper_agent(question: str) -> Any:
        """Ask a helper agent."""
        return plan(question, client=client, store=None, tools=[])

    srv.enqueue(tool_calls([call("helper_agent", {"question": "which?"}, id="h1")]),  # outer
                tool_calls([call("ask_agent", ask(), id="inner_ask")]),  # the helper asks
                text("I will decide myself."))  # outer again
    run = plan("go", client=client, store=store, tools=[helper_agent])

    assert run.status == "done" and run.answer == "I will decide myself."
    assert srv.requests[2]["messages"][-1] == {"role": "tool", "tool_call_id": "h1",
                                               "content": INTERACTIVE_NOT_SUPPORTED}
    assert run.tool_values["h1"].status == "ask"  # the child's Run is kept as the value
    assert store.get_run(run.run_id).status == "done"


def test_round_limit_ends_with_one_forced_final_answer(srv: ScriptedOpenAI, client: Any,
                                                       store: Store):
    # §2.9 on the plan loop: max_rounds, then one tool_choice='none' request.
    srv.enqueue(tool_calls([call("update_plan", set_plan("1", "2"), id="p1")]),
                tool_calls([call("update_plan", step_done("1"), id="p2")]),
                text("Step 2 is still open; here is what I have."))
    run = plan("go", client=client, store=store, tools=[], max_rounds=2)

    assert run.status == "max_rounds"
    assert run.answer == "Step 2 is still open; here is what I have."
    assert [r["tool_choice"] for r in srv.requests] == ["auto", "auto", "none"]
    assert srv.requests[2]["messages"][-1]["role"] == "user"
    assert store.get_run(run.run_id).status == "max_rounds"


def test_card_footer_lists_exactly_the_runtime_tools_sent_to_the_model(
        srv: ScriptedOpenAI, client: Any, store: Store):
    # Issue #22: the footer ("Tools: ...", the tools_offered event) names only what the model
    # was offered; a runtime tool dropped for its internal name is not listed.
    def impostor() -> str:
        return "should never run"

    @tool(register=False)
    def lookup(key: str) -> str:
        """Look a key up."""
        return "v"

    srv.enqueue(text("ok"))
    run = plan("go", client=client, store=store,
               tools=[Tool(impostor, name="ask_agent"), lookup])

    sent = [n for n in tool_names(srv.requests[0]) if n not in ("ask_agent", "update_plan")]
    (offered,) = events_of(run, "tools_offered")
    assert offered.tools == sent == ["lookup"]
    assert run.view["tools"] == ["lookup"]


def test_plan_without_tools_offers_and_lists_every_registered_tool(
        srv: ScriptedOpenAI, client: Any, store: Store):
    # plan(tools=None) offers every registered @tool (docs/behaviour.md §5.1), so the footer
    # listing them is accurate; tools=[] offers and lists none.
    @tool
    def registered_lookup(key: str) -> str:
        """Look a key up."""
        return "v"

    srv.enqueue(text("ok"), text("ok"))  # plan_env unregisters it afterwards
    run = plan("go", client=client, store=store)
    sent = [n for n in tool_names(srv.requests[0]) if n not in ("ask_agent", "update_plan")]
    assert "registered_lookup" in sent and run.view["tools"] == sent
    run = plan("go", client=client, store=store, tools=[])
    assert tool_names(srv.requests[1]) == ["ask_agent", "update_plan"]
    assert run.view["tools"] == []


def test_plan_updates_are_whole_snapshots_that_later_updates_leave_alone(
        srv: ScriptedOpenAI, client: Any, store: Store):
    # Each plan_updated carries the plan exactly as ``to_json`` writes it (key order too: it is
    # what the store saves), though unchanged steps are shared between the events; marking a
    # step done later changes none of the earlier snapshots.
    from jupyter_agent.agents.plan import Plan

    srv.enqueue(tool_calls([call("update_plan", set_plan("1", "2", "3"), id="p1")]),
                tool_calls([call("update_plan", step_done("2"), id="p2")]),
                tool_calls([call("update_plan", step_done("1", "3"), id="p3")]), text("ok"))
    run = plan("go", client=client, store=store)

    snaps = [e.plan for e in events_of(run, "plan_updated")]
    assert [[s["status"] for s in p["steps"]] for p in snaps] == [
        ["pending"] * 3, ["pending", "done", "pending"], ["done"] * 3]
    for p in snaps:
        again = Plan.model_validate(p).to_json()
        assert list(again) == list(p) and again == p
        assert [list(s) for s in again["steps"]] == [list(s) for s in p["steps"]]
    assert snaps[1]["steps"][1] is snaps[2]["steps"][1]  # unchanged: not dumped again
    assert run.plan == snaps[-1]
