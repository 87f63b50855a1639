"""The stop gate (docs/behaviour.md §6.8, §14.15, §14.16, §14.24–14.27)."""

from __future__ import annotations

from jupyter_agent.agents.plan import (
    Plan,
    PlanRunState,
    PlanStep,
    StopGateCounter,
    evaluate_stop_gate,
    request_tool_choice,
    would_allow_stop,
)


def test_simplest_no_plan_allows_stop():
    decision = evaluate_stop_gate(None)
    assert decision.allow and decision.reason == "No active plan."


def _plan(*steps: PlanStep) -> Plan:
    return Plan(task="T", description="D", steps=list(steps))


def _step(id_: str, status: str = "pending", **kw) -> PlanStep:
    return PlanStep(id=id_, title=f"step {id_}", description="", status=status, **kw)


# §14.15 (gate part)
def test_required_plan_without_plan_is_refused_with_exact_feedback():
    decision = evaluate_stop_gate(None, require_plan=True)
    assert not decision.allow
    assert decision.reason == "Explicit plan requirement has no active plan."
    assert decision.feedback == (
        "<stop_gate_feedback>\n"
        "You cannot finish yet.\n"
        "The user explicitly requested a plan, plan mode, step breakdown, or per-step plan "
        "updates.\n"
        "Call update_plan with action set_plan before final answer. Keep the plan concise, then "
        "execute or update the steps until resolved.\n"
        "</stop_gate_feedback>"
    )
    assert decision.feedback.startswith("<stop_gate_feedback>\nYou cannot finish yet.")


def test_incomplete_plan_feedback_lists_unresolved_steps():
    decision = evaluate_stop_gate(_plan(_step("1", "done"), _step("2"), _step("3", "in_progress")))
    assert decision.reason == "Active plan is not complete."
    assert decision.feedback == (
        "<stop_gate_feedback>\n"
        "You cannot finish yet.\n"
        "The active plan still has unresolved items:\n"
        "- 2: step 2 (pending)\n"
        "- 3: step 3 (in_progress)\n"
        "Continue the task. Use runtime tools if more information is needed, or call update_plan "
        "to complete, block, skip, or revise these steps.\n"
        "</stop_gate_feedback>"
    )


# §14.24
def test_runtime_tool_after_complete_plan_is_refused():
    decision = evaluate_stop_gate(
        _plan(_step("1", "done")), runtime_tool_called_since_last_plan_update=True
    )
    assert not decision.allow
    assert decision.reason == "Runtime tool result is not recorded in active plan."
    assert decision.feedback == (
        "<stop_gate_feedback>\n"
        "You cannot finish yet.\n"
        "The active plan is resolved, but recent runtime tool results are not recorded yet.\n"
        "\n"
        "You used runtime tools after the last plan update. Call update_plan to record the result "
        "before final answer.\n"
        "Continue the task. Use runtime tools if more information is needed, or call update_plan "
        "to complete, block, skip, or revise these steps.\n"
        "</stop_gate_feedback>"
    )


def test_edge_15_only_a_successful_update_clears_the_runtime_flag():
    state = PlanRunState(active_plan=_plan(_step("1", "done")))
    state.on_runtime_tool()
    assert not state.gate().allow
    state.on_update_plan("{not json")
    assert state.gate().reason == "Runtime tool result is not recorded in active plan."
    state.on_update_plan(
        {
            "updates": [
                {
                    "action": "update_step",
                    "stepId": "1",
                    "status": "done",
                    "outputSummary": "recorded",
                }
            ]
        }
    )
    assert state.gate().allow and state.gate().reason == "Active plan is complete."


# §14.25, §6.3
def test_complete_plan_forces_final_answer():
    complete = _plan(_step("1", "done"))
    assert request_tool_choice(complete) == "none"
    assert request_tool_choice(complete, runtime_tool_called_since_last_plan_update=True) == "auto"
    assert request_tool_choice(_plan(_step("1"))) == "auto"
    # Without a plan the model is never forced, even though the gate would allow a stop.
    assert would_allow_stop(None) and request_tool_choice(None) == "auto"


# §14.26
def test_needs_replan_is_listed_even_when_done():
    decision = evaluate_stop_gate(_plan(_step("7", "done", needs_replan=True)))
    assert not decision.allow
    assert decision.missing == ["- 7: step 7 (done) needs replan."]


# §14.27
def test_blocked_without_blocker_set_directly_is_listed():
    state = PlanRunState()
    result = state.on_update_plan(
        {
            "updates": [
                {
                    "action": "set_plan",
                    "plan": {
                        "task": "T",
                        "description": "D",
                        "steps": [
                            {
                                "id": "1",
                                "title": "wait",
                                "description": "",
                                "acceptanceCriteria": [],
                                "status": "blocked",
                            }
                        ],
                    },
                }
            ]
        }
    )
    assert result.ok
    decision = state.gate()
    assert decision.missing == ["- 1: wait (blocked) is blocked without blocker."]


def test_missing_items_order_and_repeats():
    decision = evaluate_stop_gate(
        _plan(_step("a", "blocked"), _step("b", needs_replan=True), _step("c"))
    )
    assert decision.missing == [
        "- b: step b (pending) needs replan.",
        "- b: step b (pending)",
        "- c: step c (pending)",
        "- a: step a (blocked) is blocked without blocker.",
    ]


# §6.6 (a reason is a blocker), §6.8 (blocked and skipped are resolved)
def test_all_blocked_or_skipped_with_blockers_passes():
    plan = _plan(_step("1", "blocked", blocker="no key"), _step("2", "skipped"))
    assert evaluate_stop_gate(plan).allow
    state = PlanRunState(active_plan=_plan(_step("1")))
    state.on_update_plan(
        {
            "updates": [
                {
                    "action": "update_step",
                    "stepId": "1",
                    "status": "blocked",
                    "reason": "needs credentials",
                }
            ]
        }
    )
    assert state.gate().allow


# §14.16, §6.8: the third refusal ends "incomplete"
def test_third_refusal_ends_incomplete_instead_of_error():
    counter = StopGateCounter()
    verdicts = [counter.check(None, require_plan=True) for _ in range(3)]
    assert [v.action for v in verdicts] == ["retry", "retry", "incomplete"]
    assert [v.rejections for v in verdicts] == [1, 2, 3]
    last = verdicts[-1]
    assert last.error == "Active plan is not complete after 3 stop checks."
    assert last.incomplete_summary() == (
        "Active plan is not complete after 3 stop checks.\n"
        "Explicit plan requirement has no active plan."
    )
    assert verdicts[0].incomplete_summary() == ""


def test_incomplete_summary_lists_open_steps_and_custom_cap():
    counter = StopGateCounter(max_rejections=0)
    verdict = counter.check(_plan(_step("1", "done"), _step("2")))
    assert verdict.action == "incomplete"
    assert verdict.incomplete_summary() == (
        "Active plan is not complete after 1 stop checks.\nOpen items:\n- 2: step 2 (pending)"
    )


# §6.8: the count is per run; a resume starts a new counter at 0.
def test_allowed_stop_does_not_count_and_new_counter_starts_at_zero():
    counter = StopGateCounter()
    counter.check(_plan(_step("1")))
    verdict = counter.check(_plan(_step("1", "done")))
    assert verdict.action == "stop" and verdict.rejections == 1
    assert StopGateCounter().rejections == 0



def test_would_allow_stop_says_what_the_gate_decides():
    """The quick check asked before every request agrees with the full gate in every case."""
    steps = [_step("a", "done"), _step("b", "skipped"), _step("c", "blocked", blocker="x"),
             _step("d", "blocked"), _step("e"), _step("f", "in_progress"),
             _step("g", "done", needs_replan=True), _step("h", "skipped", needs_replan=True)]
    plans = [None, *(_plan(s) for s in steps), _plan(*steps[:3]), _plan(*steps)]
    seen = set()
    for plan in plans:
        for require in (False, True):
            for runtime in (False, True):
                kw = {"require_plan": require, "runtime_tool_called_since_last_plan_update": runtime}
                allow = evaluate_stop_gate(plan, **kw).allow
                assert would_allow_stop(plan, **kw) is allow, (plan, kw)
                seen.add(allow)
    assert seen == {True, False}
