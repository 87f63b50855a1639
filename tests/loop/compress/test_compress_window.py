"""Context-window filter (docs/behaviour.md §3.5, §14.40)."""

from __future__ import annotations

from jupyter_agent.loop.compress import (
    filter_messages_by_max_context,
    fit_messages_to_window,
    is_checkpoint_message,
)


def count_chars(messages: list[dict]) -> int:
    """Exact test counter: one token per character of content."""
    return sum(len(m.get("content") or "") for m in messages)


def test_simplest_use_keeps_everything_that_fits() -> None:
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    assert filter_messages_by_max_context(messages, 100_000) == messages


SYSTEM = {"role": "system", "content": "S" * 10}
CHECKPOINT = {
    "role": "user",
    "content": "<context_checkpoint>\nfacts\n</context_checkpoint>",
    "hideInUI": True,
}
U1 = {"role": "user", "content": "u1" * 10}
A1 = {"role": "assistant", "content": "a1" * 10}
U2 = {"role": "user", "content": "u2" * 10}
A2 = {"role": "assistant", "content": "a2" * 10}


def test_scenario_40_checkpoint_is_kept_and_only_the_last_round_fits() -> None:
    messages = [SYSTEM, CHECKPOINT, U1, A1, U2, A2]
    budget = count_chars([SYSTEM, CHECKPOINT, U2, A2]) + 39  # one token short of round 1
    assert filter_messages_by_max_context(messages, budget, count_messages=count_chars) == [
        SYSTEM,
        CHECKPOINT,
        U2,
        A2,
    ]
    assert filter_messages_by_max_context(messages, budget + 1, count_messages=count_chars) == (
        messages
    )


def test_edge_24_checkpoint_with_active_plan_in_front_is_recognised() -> None:
    with_plan = {
        "role": "user",
        "content": '<active_plan>\n{"task": "T"}\n</active_plan>\n'
        "<context_checkpoint>\nfacts\n</context_checkpoint>",
        "hideInUI": True,
    }
    assert is_checkpoint_message(with_plan)
    messages = [SYSTEM, with_plan, U1, A1, U2, A2]
    budget = count_chars([SYSTEM, with_plan, U2, A2])
    # Not an ordinary old round: it is kept (§3.5).
    assert filter_messages_by_max_context(messages, budget, count_messages=count_chars) == [
        SYSTEM,
        with_plan,
        U2,
        A2,
    ]


def test_checkpoint_recognition_needs_hidden_user_string_with_both_tags() -> None:
    assert not is_checkpoint_message({**CHECKPOINT, "hideInUI": False})
    assert not is_checkpoint_message({**CHECKPOINT, "role": "assistant"})
    assert not is_checkpoint_message({**CHECKPOINT, "content": "<context_checkpoint>\nfacts"})
    assert not is_checkpoint_message({**CHECKPOINT, "content": [{"type": "text", "text": "x"}]})
    assert is_checkpoint_message({**CHECKPOINT, "content": "  " + CHECKPOINT["content"] + "\n"})


def test_edge_25_messages_before_the_first_user_are_dropped() -> None:
    orphan = {"role": "assistant", "content": "orphan"}
    assert filter_messages_by_max_context([SYSTEM, orphan, U1, A1], 1_000_000) == [SYSTEM, U1, A1]


def test_edge_25_newest_round_is_kept_even_when_alone_over_budget() -> None:
    big = {"role": "user", "content": "x" * 500}
    result = filter_messages_by_max_context(
        [SYSTEM, U1, A1, big, A2], 50, count_messages=count_chars
    )
    assert result == [SYSTEM, big, A2]


def test_odd_inputs() -> None:
    assert filter_messages_by_max_context("not a list", 10) == []
    systems = [SYSTEM, {"role": "developer", "content": "d"}]
    assert filter_messages_by_max_context(systems, 1) is systems
    assert filter_messages_by_max_context([SYSTEM, CHECKPOINT], 1) == [SYSTEM, CHECKPOINT]


def test_fit_to_window_cuts_above_85_percent_minus_tools() -> None:
    messages = [SYSTEM, U1, A1, U2, A2]  # 10 + 4 * 20 = 90 tokens
    assert fit_messages_to_window(messages, 200, count_messages=count_chars) is messages
    # 85% of 100 = 85 < 90: round 1 goes.
    assert fit_messages_to_window(messages, 100, count_messages=count_chars) == [SYSTEM, U2, A2]
    # Tool schemas come off the budget: 85% of 120 = 102, minus 20 = 82 < 90.
    assert fit_messages_to_window(messages, 120, 20, count_messages=count_chars) == [SYSTEM, U2, A2]
    assert fit_messages_to_window(messages, 120, 10, count_messages=count_chars) is messages
