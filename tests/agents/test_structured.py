"""Typed answers: ``output=`` on ``chat()``, ``toolloop()`` and ``plan()`` (docs/behaviour.md §10.14).

The simplest use first: a pydantic model in, a validated instance out (``run.output``), the
text still in ``run.answer``. Then the hostile cases: invalid JSON, duplicated and huge
answers, a schema the server refuses, a profile without structured outputs, every supported
type.
"""

from __future__ import annotations

import datetime as dt
import enum
import json
from collections.abc import Iterator
from typing import Any, Literal

import pytest
from pydantic import BaseModel

from jupyter_agent import chat
from jupyter_agent.agents.toolloop import toolloop
from jupyter_agent.base.errors import ParameterError
from jupyter_agent.llm.profiles import BUILTIN_PROFILES, ModelProfile, register_profile
from jupyter_agent.llm.structured import FINAL_ANSWER_TOOL, MAX_ANSWER_CHARS
from jupyter_agent.view.bundle import build_bundle
from tests.fakes.openai_server import ScriptedOpenAI, call, error, text, tool_calls

pytestmark = pytest.mark.timeout(60)


class Ticket(BaseModel):
    label: Literal["billing", "technical", "other"]
    urgency: int
    summary: str


GOOD = '{"label": "billing", "urgency": 2, "summary": "Invoice charged twice."}'


def test_a_typed_chat_gives_a_validated_instance(server: ScriptedOpenAI) -> None:
    server.enqueue(text(GOOD))
    run = chat("My invoice was charged twice.", output=Ticket)
    assert run.status == "done"
    assert isinstance(run.output, Ticket)
    assert run.output.label == "billing" and run.output.urgency == 2
    assert run.answer == GOOD  # the text stays
    (body,) = server.requests
    rf = body["response_format"]
    assert rf["type"] == "json_schema" and rf["json_schema"]["name"] == "Ticket"
    assert rf["json_schema"]["schema"]["properties"]["urgency"]["type"] == "integer"
    checked = [e for e in run.events_json() if e["type"] == "output_checked"]
    assert checked == [{**checked[0], "valid": True, "attempts": 1, "errors": [],
                        "data": json.loads(GOOD)}]
    # The card shows the fields as a table; the saved bundle keeps the instance as JSON.
    bundle = build_bundle(run.view)
    assert "| urgency | 2 |" in bundle["text/markdown"]
    assert bundle["application/vnd.jupyter-agent.run+json"]["view"]["output"]["data"] == \
        json.loads(GOOD)
    assert "Invoice charged twice." in bundle["text/html"]


def test_a_json_schema_dict_gives_a_dict(server: ScriptedOpenAI) -> None:
    schema = {"title": "Sentiment", "type": "object", "required": ["label"],
              "properties": {"label": {"enum": ["pos", "neg"]}, "why": {"type": "string"}}}
    server.enqueue(text('{"label": "pos", "why": "likes it"}'))
    run = chat("I love it.", output=schema)
    assert run.output == {"label": "pos", "why": "likes it"}
    assert server.requests[0]["response_format"]["json_schema"]["name"] == "Sentiment"


def test_invalid_json_is_sent_back_with_its_errors_and_retried(server: ScriptedOpenAI) -> None:
    server.enqueue(text("Sure! Here it is: label billing"),
                   text('{"label": "money", "urgency": "high", "summary": "x"}'), text(GOOD))
    run = chat("Invoice twice.", output=Ticket)
    assert run.status == "done" and isinstance(run.output, Ticket)
    assert len(server.requests) == 3
    first_retry = server.requests[1]["messages"]
    assert first_retry[-2] == {"role": "assistant", "content": "Sure! Here it is: label billing"}
    assert "not a JSON object" in first_retry[-1]["content"]
    second = server.requests[2]["messages"][-1]["content"]
    assert "label:" in second and "urgency:" in second  # field by field
    assert all(r["response_format"]["type"] == "json_schema" for r in server.requests)
    assert run.rounds == 3 and run.view["output"]["attempts"] == 3


def test_after_the_retries_the_run_ends_invalid_without_raising(server: ScriptedOpenAI) -> None:
    server.default = text('{"label": "nope"}')
    run = chat("Invoice twice.", output=Ticket)
    assert run.status == "invalid" and run.output is None
    assert len(server.requests) == 3  # the answer and 2 retries (the default)
    assert "does not match Ticket after 3 attempts" in (run.error or "")
    out = run.view["output"]
    assert out["valid"] is False and any("urgency" in e for e in out["errors"])
    assert "invalid" in build_bundle(run.view)["text/markdown"]
    server.reset()
    server.default = text('{"label": "nope"}')
    assert chat("Again.", output=Ticket, schema_retries=0).status == "invalid"
    assert len(server.requests) == 1


def test_a_duplicated_answer_still_gives_the_first_object(server: ScriptedOpenAI) -> None:
    server.enqueue(text(GOOD + "\n" + GOOD))
    run = chat("Invoice twice.", output=Ticket)
    assert run.status == "done" and run.output.urgency == 2  # type: ignore[union-attr]


def test_a_huge_answer_is_refused_in_one_line(server: ScriptedOpenAI) -> None:
    server.default = text('{"summary": "' + "x" * MAX_ANSWER_CHARS + '"}')
    run = chat("Invoice twice.", output=Ticket, schema_retries=0, stream=False)
    assert run.status == "invalid"
    assert "too long" in (run.error or "") and len(run.error or "") < 300


def test_bad_output_is_a_parameter_error_before_any_request(server: ScriptedOpenAI) -> None:
    with pytest.raises(ParameterError, match="output"):
        chat("Hi.", output=42)
    with pytest.raises(ParameterError, match="schema_retries"):
        chat("Hi.", output=Ticket, schema_retries=-1)
    assert server.requests == []


def test_a_server_refusing_the_schema_falls_back_to_a_tool_and_says_so(
        server: ScriptedOpenAI) -> None:
    server.enqueue(error(400, "response_format json_schema is not supported"),
                   tool_calls([call(FINAL_ANSWER_TOOL, json.loads(GOOD))]))
    run = chat("Invoice twice.", output=Ticket)
    assert run.status == "done" and isinstance(run.output, Ticket)
    refused, fallback = server.requests
    assert "response_format" in refused and "response_format" not in fallback
    assert [t["function"]["name"] for t in fallback["tools"]] == [FINAL_ANSWER_TOOL]
    assert fallback["tool_choice"] == {"type": "function",
                                       "function": {"name": FINAL_ANSWER_TOOL}}
    assert fallback["tools"][0]["function"]["parameters"]["properties"]["urgency"]
    assert any("refused the JSON schema" in e.get("message", "") for e in run.events_json()
               if e["type"] == "warning")
    assert run.answer == json.dumps(json.loads(GOOD), separators=(",", ":")) or \
        json.loads(run.answer) == json.loads(GOOD)
    # The client keeps no mode: the next typed call asks with the schema again (the refusal
    # was this request's), and takes the tool only when refused again.
    server.enqueue(text(GOOD))
    run2 = chat("Again.", output=Ticket)
    assert run2.status == "done" and isinstance(run2.output, Ticket)
    assert "response_format" in server.requests[-1]


@pytest.mark.parametrize("message", [
    "This model's maximum context length is 8192 tokens. However, your messages resulted in "
    "9000 tokens.",
    "Invalid value for 'temperature': must be between 0 and 2."])
def test_a_400_not_about_the_schema_is_shown_as_itself_and_keeps_the_mode(
        server: ScriptedOpenAI, message: str) -> None:
    """On main any 400 to a typed request switched the shared client to the tool for good
    and blamed the schema."""
    server.enqueue(error(400, message))
    run = chat("Invoice twice.", output=Ticket)
    assert run.status == "error" and message.split(".")[0] in (run.error or "")
    assert len(server.requests) == 1  # not asked again in another mode
    warnings = [e["message"] for e in run.events_json() if e["type"] == "warning"]
    assert not any("schema" in w for w in warnings), warnings
    # The same (cached, shared) client: the next typed request still carries the schema.
    server.enqueue(text(GOOD))
    run2 = chat("Again.", output=Ticket)
    assert run2.status == "done" and isinstance(run2.output, Ticket)
    assert server.requests[-1]["response_format"]["type"] == "json_schema"


@pytest.fixture
def profiles() -> Iterator[None]:
    saved = dict(BUILTIN_PROFILES)
    yield
    BUILTIN_PROFILES.clear()
    BUILTIN_PROFILES.update(saved)


def test_a_profile_without_structured_outputs_uses_the_tool(server: ScriptedOpenAI,
                                                            profiles: None) -> None:
    register_profile(ModelProfile(name="plainjson", model="plain-model",
                                  capabilities={"structured_output": False}))
    server.enqueue(tool_calls([call(FINAL_ANSWER_TOOL, json.loads(GOOD))]))
    run = chat("Invoice twice.", output=Ticket, model="plainjson")
    assert run.status == "done" and run.output.label == "billing"  # type: ignore[union-attr]
    (body,) = server.requests
    assert "response_format" not in body and body["tools"][0]["function"]["name"] == \
        FINAL_ANSWER_TOOL


def test_a_typed_toolloop_calls_tools_then_answers_typed(server: ScriptedOpenAI) -> None:
    from jupyter_agent import tool

    @tool
    def lookup(order: str) -> str:
        """Find an order."""
        return "order 7: charged twice"

    server.enqueue(tool_calls([call("lookup", {"order": "7"})]), text(GOOD))
    run = toolloop("What happened to order 7?", tools=["lookup"], output=Ticket)
    assert run.status == "done" and run.output.summary == "Invoice charged twice."  # type: ignore[union-attr]
    assert all(r["response_format"]["type"] == "json_schema" for r in server.requests)
    assert server.requests[0]["tools"][0]["function"]["name"] == "lookup"


def test_a_typed_toolloop_in_tool_mode_offers_the_answer_tool_beside_the_others(
        server: ScriptedOpenAI, profiles: None) -> None:
    from jupyter_agent import tool

    @tool
    def lookup(order: str) -> str:
        """Find an order."""
        return "order 7: charged twice"

    register_profile(ModelProfile(name="plainjson", model="plain-model",
                                  capabilities={"structured_output": False}))
    server.enqueue(tool_calls([call("lookup", {"order": "7"})]),
                   tool_calls([call(FINAL_ANSWER_TOOL, json.loads(GOOD))]))
    run = toolloop("Order 7?", tools=["lookup"], output=Ticket, model="plainjson")
    assert run.status == "done" and isinstance(run.output, Ticket)
    names = [t["function"]["name"] for t in server.requests[0]["tools"]]
    assert names == ["lookup", FINAL_ANSWER_TOOL]
    assert server.requests[0]["tool_choice"] == "required"


class Color(enum.Enum):
    red = "red"
    blue = "blue"


class Part(BaseModel):
    name: str
    qty: int


class Everything(BaseModel):
    n: int
    x: float
    ok: bool
    s: str
    when: dt.datetime
    color: Color
    kind: Literal["a", "b"]
    tags: list[str]
    part: Part
    parts: list[Part]
    maybe: int | None = None


EVERYTHING = {"n": 3, "x": 2.5, "ok": True, "s": "hi", "when": "2024-05-01T10:00:00",
              "color": "red", "kind": "b", "tags": ["t1", "t2"], "part": {"name": "p", "qty": 1},
              "parts": [{"name": "q", "qty": 2}], "maybe": None}


def test_a_schema_with_every_supported_type(server: ScriptedOpenAI) -> None:
    server.enqueue(text(json.dumps(EVERYTHING)))
    run = chat("All of it.", output=Everything)
    out = run.output
    assert isinstance(out, Everything)
    assert out.when == dt.datetime(2024, 5, 1, 10) and out.color is Color.red
    assert out.part.qty == 1 and out.parts[0].name == "q" and out.maybe is None
    schema = server.requests[0]["response_format"]["json_schema"]["schema"]
    assert set(schema["properties"]) == set(EVERYTHING)
    # And as wrong values: each type's error goes back field by field.
    server.reset()
    bad = {**EVERYTHING, "n": "three", "when": "yesterday", "color": "green",
           "part": {"name": "p"}}
    server.default = text(json.dumps(bad))
    run = chat("All of it.", output=Everything, schema_retries=1)
    assert run.status == "invalid"
    back = server.requests[1]["messages"][-1]["content"]
    for field in ("n:", "when:", "color:", "part.qty:"):
        assert field in back, field


def test_the_card_escapes_a_hostile_field(server: ScriptedOpenAI) -> None:
    server.enqueue(text(json.dumps({"label": "other", "urgency": 1,
                                    "summary": "<img src=x onerror=alert(1)>|pipe"})))
    run = chat("x", output=Ticket)
    bundle = build_bundle(run.view)
    assert "<img" not in bundle["text/html"]
    assert "&#124;pipe" in bundle["text/markdown"]


def test_answers_in_events_never_hold_the_key(server: ScriptedOpenAI) -> None:
    server.enqueue(text(json.dumps({"label": "other", "urgency": 1,
                                    "summary": "key sk-test-key-0123456789"})))
    run = chat("x", output=Ticket)
    dumped: Any = json.dumps(run.events_json())
    assert "sk-test-key-0123456789" not in dumped


def test_a_model_without_native_tools_gets_a_bounded_grammar(server: ScriptedOpenAI,
                                                              profiles: None) -> None:
    from jupyter_agent.llm.structured import GRAMMAR_MAX_STRING

    register_profile(ModelProfile(name="tiny", model="tiny-model",
                                  capabilities={"tools": False}))
    server.enqueue(text(GOOD))
    run = chat("Invoice twice.", output=Ticket, model="tiny")
    assert run.status == "done" and isinstance(run.output, Ticket)
    rf = server.requests[0]["response_format"]
    assert rf["type"] == "json_object"  # llama.cpp compiles this schema into a grammar
    props = rf["schema"]["properties"]
    assert props["summary"]["maxLength"] == GRAMMAR_MAX_STRING
    assert "maxLength" not in props["label"]  # an enum is bounded already


def test_two_final_answer_calls_the_first_wins(server: ScriptedOpenAI, profiles: None) -> None:
    register_profile(ModelProfile(name="plainjson", model="plain-model",
                                  capabilities={"structured_output": False}))
    other = {**json.loads(GOOD), "urgency": 9}
    server.enqueue(tool_calls([call(FINAL_ANSWER_TOOL, json.loads(GOOD)),
                               call(FINAL_ANSWER_TOOL, other)]))
    run = chat("Invoice twice.", output=Ticket, model="plainjson")
    assert run.status == "done" and run.output.urgency == 2  # type: ignore[union-attr]
    assert len(server.requests) == 1 and run.tool_calls == []
