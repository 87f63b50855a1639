"""Prompt-mode tool calling and the schema-constrained protocol (docs/behaviour.md §9.4)."""

from __future__ import annotations

import json

import pytest

from jupyter_agent.base.errors import ToolError
from jupyter_agent.llm.constrained import (
    ConstrainedStreamGate,
    parse_constrained_output,
    tool_call_grammar,
)
from jupyter_agent.llm.prompt_tools import PromptStreamGate, parse_prompt_output
from jupyter_agent.llm.tool_prompt import rewrite_history, tool_system_prompt, with_tool_prompt

WEATHER = {
    "type": "function",
    "function": {
        "name": "weather",
        "description": "Weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
ADD = {
    "type": "function",
    "function": {
        "name": "add",
        "description": "Add two numbers.",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"],
        },
    },
}


def test_simplest_use_a_call_reply_becomes_one_tool_call() -> None:
    answer, call = parse_prompt_output('1: {"name": "weather", "arguments": {"city": "Oslo"}}')
    assert answer == ""
    assert call is not None
    assert call.name == "weather"
    assert json.loads(call.arguments) == {"city": "Oslo"}


# --------------------------------------------------------------------------- system prompt


def test_system_prompt_lists_tools_sorted_by_name() -> None:
    prompt = tool_system_prompt([WEATHER, ADD])
    assert prompt.index('"name": "add"') < prompt.index('"name": "weather"')
    assert prompt == tool_system_prompt([ADD, WEATHER])
    assert "Weather for a city." in prompt and '"required": ["city"]' in prompt


def test_tool_prompt_is_appended_to_an_existing_system_message() -> None:
    msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]
    out = with_tool_prompt(msgs, [ADD])
    assert len(out) == 2
    assert out[0]["content"].startswith("Be brief.\n\n")
    assert '"name": "add"' in out[0]["content"]
    assert msgs[0]["content"] == "Be brief.", "the input list must not be changed"


def test_tool_prompt_creates_a_system_message_when_there_is_none() -> None:
    out = with_tool_prompt([{"role": "user", "content": "hi"}], [ADD], style="json")
    assert [m["role"] for m in out] == ["system", "user"]
    assert '"answer" key' in out[0]["content"] and '"name": "add"' in out[0]["content"]


# ------------------------------------------------------------------------ history rewrite


def _history() -> list[dict]:
    return [
        {"role": "user", "content": "weather in Oslo and 1+2?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "c1", "type": "function",
                 "function": {"name": "weather", "arguments": '{"city": "Oslo"}'}},
                {"id": "c2", "type": "function",
                 "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        {"role": "tool", "tool_call_id": "c2", "content": "3"},
        {"role": "assistant", "content": "Sunny, and 3."},
    ]


def test_history_rewrite_text_style() -> None:
    out = rewrite_history(_history())
    assert out[0] == {"role": "user", "content": "weather in Oslo and 1+2?"}
    assert out[1]["role"] == "assistant"
    assert out[1]["content"].startswith("1: ")
    assert json.loads(out[1]["content"][3:]) == {"name": "weather", "arguments": {"city": "Oslo"}}
    assert out[2] == {"role": "user", "content": "<ToolResponse>\nsunny\n</ToolResponse>"}
    assert out[3] == {"role": "assistant", "content": "0: Sunny, and 3."}
    assert "tool_calls" not in out[1]


def test_multi_call_turn_is_cut_to_its_first_call_edge_case_31() -> None:
    out = rewrite_history(_history())
    assert len(out) == 4, "the second call and its response are dropped"
    assert all("add" not in m["content"] for m in out[1:3])
    assert all(m["role"] in ("user", "assistant") for m in out)


def test_history_rewrite_json_style_matches_the_constrained_output() -> None:
    out = rewrite_history(_history(), style="json")
    assert json.loads(out[1]["content"]) == {"tool": "weather", "arguments": {"city": "Oslo"}}
    assert json.loads(out[3]["content"]) == {"answer": "Sunny, and 3."}
    answer, call = parse_constrained_output(out[1]["content"])
    assert answer is None and call is not None and call.name == "weather"


# ------------------------------------------------------------------- parsing (text style)


def test_full_width_colon_and_json5_arguments() -> None:
    answer, call = parse_prompt_output("1：{name: 'add', arguments: {a: 1, b: 2,},}")
    assert answer == "" and call is not None and call.name == "add"
    assert call.arguments == '{"a": 1, "b": 2}', "re-serialised as strict JSON"


def test_each_call_gets_a_fresh_id() -> None:
    text = '1: {"name": "add", "arguments": {"a": 1, "b": 2}}'
    first, second = parse_prompt_output(text)[1], parse_prompt_output(text)[1]
    assert first and second and first.id and first.id != second.id


def test_arguments_given_as_a_json_string_are_decoded() -> None:
    _, call = parse_prompt_output('1: {"name": "add", "arguments": "{\\"a\\": 1, \\"b\\": 2}"}')
    assert call is not None and json.loads(call.arguments) == {"a": 1, "b": 2}


def test_only_the_first_json_object_is_used() -> None:
    text = '1: {"name": "add", "arguments": {"a": 1, "b": 2}} {"name": "weather"}'
    _, call = parse_prompt_output(text)
    assert call is not None and call.name == "add"


def test_unparseable_call_becomes_a_tool_call_error_answer() -> None:
    raw = '1: {"name": "add", "arguments": {"a": 1'
    assert parse_prompt_output(raw) == (f"Tool call error: {raw}", None)


def test_answer_marker_is_stripped_within_the_first_six_chars() -> None:
    assert parse_prompt_output("0: Hello") == ("Hello", None)
    assert parse_prompt_output("  0：Hello") == ("Hello", None)
    assert parse_prompt_output("Result 0: x") == ("Result 0: x", None), "beyond the window"
    assert parse_prompt_output("Plain answer") == ("Plain answer", None)


def test_a_numbered_list_is_not_a_failed_tool_call() -> None:
    text = "Steps:\n1: open the file\n2: read it"
    assert parse_prompt_output(text) == (text, None)


def test_a_call_after_some_preamble_is_still_found() -> None:
    _, call = parse_prompt_output('Let me check.\n1: {"name": "weather", "arguments": {"city": "Rome"}}')
    assert call is not None and json.loads(call.arguments) == {"city": "Rome"}


def test_an_answer_marker_wins_over_json_inside_the_answer() -> None:
    text = '0: Use 1: {"name": "x", "arguments": {}} as the format.'
    answer, call = parse_prompt_output(text)
    assert call is None and answer.startswith("Use 1:")


# --------------------------------------------------------------------- stream gate (text)


def _run_gate(gate: PromptStreamGate | ConstrainedStreamGate, deltas: list[str]) -> list[str]:
    shown = [gate.feed(d) for d in deltas]
    shown.append(gate.finish())
    return shown


def test_gate_holds_three_non_space_chars_then_streams_after_the_answer_marker() -> None:
    gate = PromptStreamGate()
    shown = _run_gate(gate, [" ", "0", ":", " He", "llo", " world"])
    assert shown[:3] == ["", "", ""], "nothing before the decision"
    assert "".join(shown) == "Hello world"
    assert gate.mode == "answer"


def test_gate_suppresses_a_tool_call() -> None:
    gate = PromptStreamGate()
    shown = _run_gate(gate, ["1", ": ", '{"name"', ': "add"}'])
    assert "".join(shown) == ""
    assert gate.mode == "tool"


def test_gate_streams_unmarked_text_in_full() -> None:
    gate = PromptStreamGate()
    assert "".join(_run_gate(gate, ["Hi", " there"])) == "Hi there"


def test_gate_flushes_a_very_short_answer_at_the_end() -> None:
    gate = PromptStreamGate()
    assert gate.feed("ok") == ""
    assert gate.finish() == "ok"


# ----------------------------------------------------------------- constrained protocol


def test_grammar_allows_an_answer_or_any_tool_by_default() -> None:
    schema = tool_call_grammar([WEATHER, ADD])
    options = schema["anyOf"]
    assert options[0]["properties"] == {"answer": {"type": "string"}}
    assert [o["properties"]["tool"]["enum"] for o in options[1:]] == [["add"], ["weather"]]
    assert options[2]["properties"]["arguments"] == WEATHER["function"]["parameters"]
    assert all(o["additionalProperties"] is False for o in options)


def test_grammar_with_tool_choice_none_allows_only_an_answer() -> None:
    schema = tool_call_grammar([WEATHER], tool_choice="none")
    assert schema["required"] == ["answer"] and "anyOf" not in schema
    assert tool_call_grammar(None) == schema


def test_grammar_with_a_forced_tool_allows_only_that_tool() -> None:
    for choice in ("add", {"type": "function", "function": {"name": "add"}}):
        schema = tool_call_grammar([WEATHER, ADD], tool_choice=choice)
        assert schema["properties"]["tool"] == {"type": "string", "enum": ["add"]}
        assert schema["required"] == ["tool", "arguments"]
    required = tool_call_grammar([WEATHER, ADD], tool_choice="required")
    assert [o["properties"]["tool"]["enum"][0] for o in required["anyOf"]] == ["add", "weather"]


def test_grammar_rejects_a_forced_unknown_tool() -> None:
    with pytest.raises(ToolError, match="nope"):
        tool_call_grammar([ADD], tool_choice="nope")


def test_grammar_inlines_pydantic_style_refs() -> None:
    params = {
        "type": "object",
        "properties": {"point": {"$ref": "#/$defs/Point"}},
        "$defs": {"Point": {"type": "object", "properties": {"x": {"type": "integer"}}}},
    }
    tool = {"name": "move", "description": "", "parameters": params}
    schema = tool_call_grammar([tool], tool_choice="move")
    args = schema["properties"]["arguments"]
    assert args["properties"]["point"]["properties"] == {"x": {"type": "integer"}}
    assert "$defs" not in json.dumps(schema) and "$ref" not in json.dumps(schema)
    assert "$defs" in params, "the tool's own schema is left unchanged"


def test_parse_constrained_output() -> None:
    assert parse_constrained_output('{"answer": "Hi \\"you\\""}') == ('Hi "you"', None)
    answer, call = parse_constrained_output('{ "tool": "add", "arguments": {"a": 1, "b": 2} }')
    assert answer is None and call is not None
    assert call.name == "add" and json.loads(call.arguments) == {"a": 1, "b": 2}


def test_parse_constrained_output_keeps_a_cut_off_answer() -> None:
    assert parse_constrained_output('{"answer": "Half a sent') == ("Half a sent", None)


def test_parse_constrained_output_without_json_is_a_tool_call_error() -> None:
    assert parse_constrained_output("plain text") == ("Tool call error: plain text", None)


def test_constrained_gate_streams_decoded_answer_text() -> None:
    gate = ConstrainedStreamGate()
    deltas = ['{', '"ans', 'wer": "', "Line\\", "n2 \\u00e9", "\\ud83d", "\\ude00", '!"}']
    shown = _run_gate(gate, deltas)
    assert "".join(shown) == "Line\n2 é😀!"
    assert gate.mode == "answer"


def test_constrained_gate_shows_nothing_for_a_tool_call() -> None:
    gate = ConstrainedStreamGate()
    assert "".join(_run_gate(gate, ['{"', 'tool": "add", ', '"arguments": {}}'])) == ""
    assert gate.mode == "tool"


def test_parse_constrained_output_accepts_a_raw_newline_in_the_answer() -> None:
    assert parse_constrained_output('{"answer": "two\nlines"}') == ("two\nlines", None)
