"""ask_agent validation and the three ways an ask ends (docs/behaviour.md §6.10, §14.28)."""

from __future__ import annotations

import json

import pytest

from jupyter_agent.agents.plan import (
    WAITING_FOR_USER_ANSWER,
    AskAnswer,
    format_answer_for_model,
    parse_ask_arguments,
)
from jupyter_agent.base.events import EVENT_ADAPTER, event_to_json

VALID = {
    "reason": "The data file is private.",
    "blockerType": "missing_required_input",
    "question": "Which dataset should I use?",
    "options": [" Sales 2023 ", "Sales 2024", "Both"],
}


def test_simplest_valid_ask():
    result = parse_ask_arguments(json.dumps(VALID))
    assert result.ok and result.error is None
    assert result.ask.options == ["Sales 2023", "Sales 2024", "Both"]
    assert WAITING_FOR_USER_ANSWER == "Waiting for user answer."


# §14.28
def test_two_options_give_the_validator_error():
    result = parse_ask_arguments(json.dumps({**VALID, "options": ["a", "b"]}))
    assert not result.ok
    assert (
        result.error
        == "Invalid ask_agent arguments: options: Must have 3 to 5 answer options, got 2."
    )


def test_blank_options_and_too_many():
    blank = parse_ask_arguments({**VALID, "options": ["a", "  ", "c"]})
    assert blank.error == "Invalid ask_agent arguments: options: Option 2 is empty after trimming."
    many = parse_ask_arguments({**VALID, "options": list("abcdef")})
    assert (
        many.error
        == "Invalid ask_agent arguments: options: Must have 3 to 5 answer options, got 6."
    )


def test_not_json_and_field_errors():
    assert parse_ask_arguments("{oops").error == "Ask tool arguments are not valid JSON."
    missing = parse_ask_arguments({"options": ["a", "b", "c"], "blockerType": "nope"})
    assert missing.error == (
        "Invalid ask_agent arguments: reason: Field required; blockerType: Input should be "
        "'missing_required_input', 'tool_unavailable' or 'ambiguous_goal'; question: Field required"
    )


def test_lenient_json_extra_keys_and_descriptions_fitted():
    text = (
        "{reason: 'r', blockerType: 'ambiguous_goal', question: ' Q? ', "
        "options: ['a','b','c'], descriptions: ['first', ' second '], extra: 1, allowOther: false,}"
    )
    ask = parse_ask_arguments(text).ask
    assert ask.question == "Q?" and ask.allow_other is False
    assert ask.descriptions == ["first", "second", ""]
    assert "extra" not in ask.model_dump(by_alias=True)


def test_pending_event_round_trips():
    ask = parse_ask_arguments(VALID).ask
    event = ask.pending_event("call_1")
    data = event_to_json(event)
    assert data["options"] == ["Sales 2023", "Sales 2024", "Both"] and data["allow_other"] is True
    assert EVENT_ADAPTER.validate_python(data) == event


def test_option_answer_tells_the_model_which_option():
    ask = parse_ask_arguments(VALID).ask
    answer = AskAnswer.choose(ask, 2)
    assert (answer.how, answer.answer, answer.option_index) == ("option", "Sales 2024", 2)
    assert format_answer_for_model(ask, answer) == "The user chose option 2 of 3: Sales 2024"


def test_other_and_dismissed_answers_are_distinct():
    ask = parse_ask_arguments(VALID).ask
    other = format_answer_for_model(ask, AskAnswer.other(" the 2022 file "))
    assert other == "The user chose none of the options and wrote instead: the 2022 file"
    empty = format_answer_for_model(ask, AskAnswer.other(""))
    assert empty == "The user chose none of the options and sent an empty answer."
    dismissed = format_answer_for_model(ask, AskAnswer.dismiss())
    assert dismissed.startswith("The user dismissed the question without answering.")
    assert len({other, empty, dismissed}) == 3


def test_bad_answers_are_refused():
    ask = parse_ask_arguments({**VALID, "allowOther": False}).ask
    with pytest.raises(ValueError, match="Option 4 does not exist: choose 1 to 3."):
        AskAnswer.choose(ask, 4)
