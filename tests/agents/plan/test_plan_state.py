"""The plan state machine: update_plan batches (docs/behaviour.md §6.5–6.7, §14.18–14.23)."""

from __future__ import annotations

import json
import re

from jupyter_agent.agents.plan import (
    Evidence,
    Plan,
    PlanRunState,
    PlanStep,
    apply_plan_update,
    fallback_plan,
    merge_stable_completed_steps,
    progress_line,
)


def test_simplest_set_plan_creates_a_plan():
    result = apply_plan_update(
        None,
        {
            "updates": [
                {
                    "action": "set_plan",
                    "plan": {
                        "task": "T",
                        "description": "D",
                        "steps": [{"title": "a", "description": "x"}],
                    },
                }
            ]
        },
    )
    assert result.ok
    assert result.plan is not None and result.plan.steps[0].status == "pending"


def _two_step_plan() -> Plan:
    return Plan(
        plan_id="keepme",
        task="T",
        description="D",
        steps=[
            PlanStep(id="1", title="first", description="x"),
            PlanStep(id="2", title="second", description="y"),
        ],
    )


def _update(*ops: dict) -> dict:
    return {"updates": list(ops)}


# §14.18
def test_set_plan_response_and_six_char_plan_id():
    args = json.dumps(
        _update(
            {
                "action": "set_plan",
                "plan": {
                    "task": "T",
                    "description": "D",
                    "steps": [
                        {
                            "id": "1",
                            "title": "a",
                            "description": "x",
                            "acceptanceCriteria": [],
                            "status": "pending",
                        }
                    ],
                },
            }
        )
    )
    result = apply_plan_update(None, args)
    assert result.ok
    assert result.message == (
        "Applied 1 plan update.\n"
        "Plan progress: 0 done, 0 in progress, 1 pending, 0 blocked, 0 skipped."
    )
    plan_json = result.plan.to_json()
    assert re.fullmatch(r"[A-Za-z][A-Za-z0-9]{5}", plan_json["planId"])
    assert plan_json["steps"][0] == {
        "id": "1",
        "title": "a",
        "description": "x",
        "acceptanceCriteria": [],
        "status": "pending",
        "evidence": [],
    }


def test_generated_step_ids_have_six_characters_and_differ():
    plan = Plan.model_validate(
        {
            "task": "T",
            "description": "D",
            "steps": [{"title": "a", "description": "x"}, {"title": "b", "description": "y"}],
        }
    )
    ids = [s.id for s in plan.steps]
    assert all(len(i) == 6 for i in ids) and ids[0] != ids[1]


def test_plural_message_for_several_operations():
    plan = _two_step_plan()
    result = apply_plan_update(
        plan,
        _update(
            {"action": "update_step", "stepId": "1", "status": "done", "outputSummary": "ok"},
            {"action": "update_step", "stepId": "2", "status": "in_progress"},
        ),
    )
    assert result.message == (
        "Applied 2 plan updates.\n"
        "Plan progress: 1 done, 1 in progress, 0 pending, 0 blocked, 0 skipped."
    )


# §14.19
def test_batch_failure_applies_nothing():
    plan = _two_step_plan()
    result = apply_plan_update(
        plan,
        _update(
            {"action": "update_step", "stepId": "1", "status": "done", "outputSummary": "ok"},
            {"action": "update_step", "stepId": "99", "status": "done"},
        ),
    )
    assert not result.ok
    assert result.message == (
        "Batch update failed at operation 2/2. No changes were applied.\nUnknown plan step: 99"
    )
    assert result.failed_operation == 2
    assert result.plan is plan
    assert plan.steps[0].status == "pending"


def test_failed_batch_keeps_warnings_gathered_before_the_failure():
    result = apply_plan_update(
        _two_step_plan(),
        _update(
            {"action": "update_step", "stepId": "1", "status": "done"},
            {"action": "update_step", "stepId": "nope", "status": "done"},
        ),
    )
    assert result.warnings == ["Done plan step should include evidence or outputSummary."]


def test_failed_update_does_not_reset_runtime_tool_flag():
    state = PlanRunState(active_plan=_two_step_plan())
    state.on_runtime_tool()
    result = state.on_update_plan(
        _update({"action": "update_step", "stepId": "99", "status": "done"})
    )
    assert not result.ok
    assert state.runtime_tool_called_since_last_plan_update is True
    ok = state.on_update_plan(
        _update({"action": "update_step", "stepId": "1", "status": "in_progress"})
    )
    assert ok.ok and state.runtime_tool_called_since_last_plan_update is False
    assert state.active_plan.steps[0].status == "in_progress"


# §14.20
def test_blocked_without_blocker_or_reason_fails():
    plan = _two_step_plan()
    result = apply_plan_update(
        plan, _update({"action": "update_step", "stepId": "1", "status": "blocked"})
    )
    assert not result.ok
    assert result.message.endswith("Blocked plan step must include blocker or reason.")
    assert result.plan is plan and plan.steps[0].status == "pending"


# §14.21
def test_done_without_evidence_warns_but_succeeds():
    result = apply_plan_update(
        _two_step_plan(), _update({"action": "update_step", "stepId": "1", "status": "done"})
    )
    assert result.ok
    assert result.message == (
        "Applied 1 plan update.\n"
        "Plan progress: 1 done, 0 in progress, 1 pending, 0 blocked, 0 skipped.\n"
        "Done plan step should include evidence or outputSummary."
    )


def test_existing_evidence_does_not_silence_done_warning_but_existing_summary_does():
    plan = _two_step_plan()
    plan.steps[0].evidence = [Evidence(kind="manual", summary="old")]
    plan.steps[1].output_summary = "already summarised"
    first = apply_plan_update(
        plan, _update({"action": "update_step", "stepId": "1", "status": "done"})
    )
    second = apply_plan_update(
        plan, _update({"action": "update_step", "stepId": "2", "status": "done"})
    )
    assert first.warnings == ["Done plan step should include evidence or outputSummary."]
    assert second.warnings == []


# §14.22
def test_update_step_without_plan():
    result = apply_plan_update(
        None, _update({"action": "update_step", "stepId": "1", "status": "done"})
    )
    assert not result.ok and result.plan is None
    assert (
        "Cannot update a plan step because no active plan exists. Use set_plan first."
        in result.message
    )
    assert result.display_plan.task == "Batch update failed"


# §14.23
def test_replace_plan_keeps_completed_steps_and_plan_id():
    e1 = {"kind": "tool_result", "ref": "call_1", "summary": "E1"}
    e2 = {"kind": "model_output", "summary": "E2"}
    plan = Plan.model_validate(
        {
            "planId": "abc123",
            "task": "T",
            "description": "D",
            "steps": [
                {"id": "1", "title": "one", "description": "", "status": "done", "evidence": [e1]},
                {"id": "2", "title": "two", "description": "", "status": "pending"},
            ],
        }
    )
    result = apply_plan_update(
        plan,
        _update(
            {
                "action": "replace_plan",
                "plan": {
                    "task": "T2",
                    "description": "D2",
                    "steps": [
                        {
                            "id": "2",
                            "title": "two",
                            "description": "",
                            "acceptanceCriteria": [],
                            "status": "done",
                            "evidence": [e2],
                        },
                        {
                            "id": "3",
                            "title": "three",
                            "description": "",
                            "acceptanceCriteria": [],
                            "status": "done",
                            "outputSummary": "made up",
                        },
                    ],
                },
            }
        ),
    )
    assert result.ok
    new = result.plan
    assert new.plan_id == "abc123" and new.task == "T2"
    assert [(s.id, s.status) for s in new.steps] == [("2", "done"), ("3", "pending"), ("1", "done")]
    assert [e.to_json() for e in new.steps[0].evidence] == [e2]
    assert new.steps[1].evidence == [] and new.steps[1].output_summary is None
    assert [e.to_json() for e in new.steps[2].evidence] == [e1]
    assert 'Reviser dropped completed step "1", merged it back.' in result.message
    assert result.message.splitlines()[1] == (
        "Plan progress: 2 done, 0 in progress, 1 pending, 0 blocked, 0 skipped."
    )


def test_merge_keeps_done_status_and_dedupes_evidence_by_json():
    ev = Evidence(kind="manual", summary="same")
    current = Plan(
        task="T",
        description="",
        steps=[
            PlanStep(
                id="1",
                title="a",
                description="",
                status="done",
                evidence=[ev],
                output_summary="old summary",
                blocker="x",
                needs_replan=True,
            ),
        ],
    )
    revised = Plan(
        task="T",
        description="",
        steps=[
            PlanStep(
                id="1",
                title="a2",
                description="",
                status="pending",
                evidence=[ev, Evidence(kind="manual", summary="new")],
                blocker="y",
                needs_replan=True,
            ),
        ],
    )
    steps, warnings = merge_stable_completed_steps(current, revised)
    step = steps[0]
    assert warnings == []
    assert (step.title, step.status, step.output_summary) == ("a2", "done", "old summary")
    assert [e.summary for e in step.evidence] == ["same", "new"]
    assert step.blocker is None and step.needs_replan is None


def test_replace_plan_without_current_plan_is_set_plan():
    result = apply_plan_update(
        None,
        _update(
            {
                "action": "replace_plan",
                "plan": {
                    "planId": "given1",
                    "task": "T",
                    "description": "D",
                    "steps": [{"id": "1", "title": "a", "description": "", "status": "done"}],
                },
            }
        ),
    )
    assert result.ok and result.plan.plan_id == "given1" and result.plan.steps[0].status == "done"


# §6.5, §6.7: lenient decoding, then validation
def test_invalid_json_is_parsed_leniently_then_validated():
    plan = _two_step_plan()
    lenient = "{updates: [{action: 'update_step', stepId: '1', status: 'in_progress',},],}"
    assert apply_plan_update(plan, lenient).ok
    broken = apply_plan_update(plan, "{updates: [")
    assert not broken.ok and broken.plan is plan
    assert broken.message.startswith("Invalid update_plan arguments: ")
    empty = apply_plan_update(plan, _update())
    assert empty.message.startswith("Invalid update_plan arguments: updates: ")
    missing = apply_plan_update(None, "")
    assert missing.message == "Invalid update_plan arguments: updates: Field required"
    assert missing.display_plan.task == "Invalid plan"


def test_validation_message_names_each_field():
    result = apply_plan_update(
        None, _update({"action": "set_plan", "plan": {"task": "T", "steps": []}})
    )
    assert result.message == (
        "Invalid update_plan arguments: updates.0.set_plan.plan.description: Field required; "
        "updates.0.set_plan.plan.steps: List should have at least 1 item after validation, not 0"
    )


def test_arguments_encoded_twice_and_numeric_ids_are_accepted():
    inner = json.dumps(
        [
            {
                "action": "set_plan",
                "plan": {
                    "task": "T",
                    "description": "D",
                    "steps": [{"id": 1, "title": "a", "description": "x"}],
                },
            }
        ]
    )
    result = apply_plan_update(None, json.dumps({"updates": inner}))
    assert result.ok and result.plan.steps[0].id == "1"


def test_unknown_keys_are_dropped_and_duplicate_ids_allowed():
    result = apply_plan_update(
        None,
        _update(
            {
                "action": "set_plan",
                "surprise": 1,
                "plan": {
                    "task": "T",
                    "description": "D",
                    "color": "red",
                    "steps": [
                        {"id": "1", "title": "a", "description": "", "x": 1},
                        {"id": "1", "title": "b", "description": ""},
                    ],
                },
            }
        ),
    )
    assert result.ok
    assert "color" not in result.plan.to_json()
    edited = apply_plan_update(
        result.plan, _update({"action": "update_step", "stepId": "1", "status": "skipped"})
    )
    assert [s.status for s in edited.plan.steps] == ["skipped", "pending"]


# §6.6: set_plan
def test_set_plan_over_existing_plan_discards_progress_and_plan_id():
    plan = _two_step_plan()
    plan.steps[0].status = "done"
    result = apply_plan_update(
        plan,
        _update(
            {
                "action": "set_plan",
                "plan": {
                    "task": "new",
                    "description": "",
                    "steps": [{"id": "1", "title": "a", "description": ""}],
                },
            }
        ),
    )
    assert result.plan.plan_id != "keepme"
    assert [s.status for s in result.plan.steps] == ["pending"]


# §6.6: update_step
def test_update_step_clears_blocker_and_needs_replan_unless_sent_again():
    plan = _two_step_plan()
    plan.steps[0].status = "blocked"
    plan.steps[0].blocker = "no access"
    plan.steps[0].needs_replan = True
    result = apply_plan_update(
        plan, _update({"action": "update_step", "stepId": "1", "status": "in_progress"})
    )
    step = result.plan.steps[0]
    assert step.blocker is None and step.needs_replan is None
    again = apply_plan_update(
        plan,
        _update(
            {
                "action": "update_step",
                "stepId": "1",
                "status": "blocked",
                "blocker": "still",
                "needsReplan": True,
            }
        ),
    )
    assert again.plan.steps[0].blocker == "still" and again.plan.steps[0].needs_replan is True
    # The input plan is never modified.
    assert plan.steps[0].blocker == "no access"


# §6.6: a reason is a blocker
def test_blocked_with_reason_only_uses_reason_as_blocker():
    result = apply_plan_update(
        _two_step_plan(),
        _update(
            {"action": "update_step", "stepId": "2", "status": "blocked", "reason": "needs a key"}
        ),
    )
    assert result.ok and result.plan.steps[1].blocker == "needs a key"


def test_update_step_appends_evidence_and_keeps_summary_unless_given():
    plan = _two_step_plan()
    first = apply_plan_update(
        plan,
        _update(
            {
                "action": "update_step",
                "stepId": "1",
                "status": "in_progress",
                "evidence": [{"kind": "manual", "summary": "a"}],
                "outputSummary": "s1",
            }
        ),
    )
    second = apply_plan_update(
        first.plan,
        _update(
            {
                "action": "update_step",
                "stepId": "1",
                "status": "done",
                "evidence": [{"kind": "manual", "summary": "a"}],
            }
        ),
    )
    step = second.plan.steps[0]
    assert [e.summary for e in step.evidence] == ["a", "a"]  # no de-duplication here
    assert step.output_summary == "s1"


def test_progress_line_and_fallback_plan():
    plan = Plan(
        task="T",
        description="",
        steps=[
            PlanStep(title=t, description="", status=s)
            for t, s in [("a", "done"), ("b", "blocked"), ("c", "skipped"), ("d", "in_progress")]
        ],
    )
    assert (
        progress_line(plan)
        == "Plan progress: 1 done, 1 in progress, 0 pending, 1 blocked, 1 skipped."
    )
    fb = fallback_plan("Invalid plan").to_json()
    assert fb["steps"][0]["id"] == "invalid_update"
    assert fb["steps"][0]["blocker"] == "Invalid update_plan arguments."
    assert fb["steps"][0]["acceptanceCriteria"] == [
        "Call update_plan with a valid set_plan or update_step payload."
    ]


def test_result_plan_shares_nothing_with_the_input_plan():
    plan = _two_step_plan()
    plan.steps[0].evidence = [Evidence(kind="manual", summary="kept")]
    result = apply_plan_update(
        plan, _update({"action": "update_step", "stepId": "2", "status": "in_progress"})
    )
    result.plan.steps[0].evidence[0].summary = "changed"
    result.plan.steps[1].title = "changed"
    assert plan.steps[0].evidence[0].summary == "kept"
    assert plan.steps[1].title == "second" and plan.steps[1].status == "pending"
