"""Per-run planning state, initial messages, the final answer (docs/behaviour.md §6.2, §6.12)."""

from __future__ import annotations

from jupyter_agent.agents.plan import (
    PlanRunState,
    build_initial_messages,
    final_answer_text,
)


def test_simplest_run_state_from_messages():
    state = PlanRunState.start([{"role": "user", "content": "plan mode: tidy the data"}])
    assert state.require_plan and state.active_plan is None
    assert state.tool_choice() == "auto"


# §14.33
def test_answer_text_skips_text_that_came_with_tool_calls():
    messages = [
        {
            "role": "assistant",
            "content": "A",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "x", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "result"},
        {"role": "assistant", "content": "B"},
    ]
    assert final_answer_text(messages) == "B"
    assert (
        final_answer_text(
            [{"role": "assistant", "content": "x"}, {"role": "assistant", "content": "y"}]
        )
        == "xy"
    )


def test_initial_messages_drop_system_messages_and_put_the_prompt_first():
    messages = build_initial_messages(
        [{"role": "system", "content": "old"}, {"role": "user", "content": "hi"}],
        system_prompt="Be terse.",
        has_runtime_tools=False,
    )
    assert [m["role"] for m in messages] == ["system", "user"]
    assert messages[0]["content"].startswith("<!-- Main Agent -->")
    assert "Be terse." in messages[0]["content"] and "old" not in messages[0]["content"]


def test_state_round_trips_through_json_for_a_suspended_run():
    state = PlanRunState.start([{"role": "user", "content": "hello there"}])
    state.on_update_plan(
        {
            "updates": [
                {
                    "action": "set_plan",
                    "plan": {
                        "task": "T",
                        "description": "D",
                        "steps": [{"id": "1", "title": "a", "description": ""}],
                    },
                }
            ]
        }
    )
    state.on_runtime_tool()
    saved = state.to_json()
    assert set(saved) == {"activePlan", "requirePlan", "runtimeToolCalledSinceLastPlanUpdate"}
    assert saved["activePlan"]["steps"][0]["id"] == "1"
    restored = PlanRunState.model_validate(saved)
    assert restored == state
    assert restored.gate().reason == "Active plan is not complete."

