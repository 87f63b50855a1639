"""classify: one model call routes a text to a category (docs/behaviour.md §7.2)."""

from __future__ import annotations

import json

import pytest

from jupyter_agent.agents.helpers import ClassifyResult, EmptyInputError, classify
from jupyter_agent.base.errors import ModelRequestError
from jupyter_agent.llm.types import Usage
from jupyter_agent.llm.usage_context import usage_sink
from tests.fakes.openai_server import error, text

ROUTES = {"billing": "payments, refunds", "tech": "bugs"}


def test_classify_routes_a_question(srv, client):
    srv.enqueue(text("billing"))
    route = classify("My card was charged twice", ROUTES, client=client)
    assert route.category == "billing"
    assert route.label == "payments, refunds"
    assert route.fallback is False
    assert str(route) == "billing"
    assert route.raw == "billing"
    assert route.usage.input_tokens > 0 and route.usage.output_tokens > 0
    assert route.cost == pytest.approx(client.cost(route.usage)) and route.cost > 0
    assert len(srv.requests) == 1


def test_request_has_system_prompt_history_then_input(srv, client):
    srv.enqueue(text("tech"))
    history = [
        {"role": "system", "content": "chat system prompt"},
        {"role": "user", "content": "The app crashes on start"},
        {"role": "assistant", "content": "Which version?"},
    ]
    classify("It still happens", ROUTES, client=client, history=history)
    body = srv.requests[0]
    assert body["stream"] is True
    msgs = body["messages"]
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user"]
    system = msgs[0]["content"]
    for heading in ("## Role", "## Class list", "## Requirements", "## Output format"):
        assert heading in system
    classes = json.loads(system.split("## Class list\n\n")[1].split("\n\n## Requirements")[0])
    assert classes == [{"id": "billing", "description": "payments, refunds"},
                       {"id": "tech", "description": "bugs"}]
    assert "## Background knowledge" not in system
    assert "## Last classification result" not in system
    assert "\n\n\n" not in system
    assert msgs[-1] == {"role": "user", "content": "It still happens"}
    assert "chat system prompt" not in json.dumps(msgs)


def test_background_and_previous_result_enter_the_prompt(srv, client):
    srv.enqueue(text("tech"), text("tech"))
    first = classify("The app crashes", ROUTES, client=client, system="We sell a mobile app.")
    classify("and now?", ROUTES, client=client, previous=first)
    assert "## Background knowledge\n\nWe sell a mobile app." in srv.requests[0]["messages"][0][
        "content"]
    second_system = srv.requests[1]["messages"][0]["content"]
    last = second_system.split("## Last classification result\n\n")[1].split("\n\n##")[0]
    assert json.loads(last) == {"id": "tech", "description": "bugs"}


def test_history_keeps_the_last_six_rounds_of_text(srv, client):
    srv.enqueue(text("tech"))
    history = []
    for i in range(10):
        history += [{"role": "user", "content": f"q{i}"},
                    {"role": "assistant", "content": f"a{i}", "tool_calls": []}]
    history.insert(5, {"role": "tool", "tool_call_id": "x", "content": "tool output"})
    classify("next", ROUTES, client=client, history=history)
    sent = srv.requests[0]["messages"][1:-1]
    assert len(sent) == 12
    assert sent[0] == {"role": "user", "content": "q4"}
    assert sent[-1] == {"role": "assistant", "content": "a9"}


def test_scenario_45_answer_b_and_unknown_answer_falls_back_to_last(srv, client):
    agents = [("a", "Billing"), ("b", "Tech")]
    srv.enqueue(text("b"), text("unknown"))
    first = classify("My screen is black", agents, client=client)
    assert (first.category, first.label, first.fallback) == ("b", "Tech", False)
    second = classify("Hmm", agents, client=client)
    assert (second.category, second.label, second.fallback) == ("b", "Tech", True)
    assert second.raw == "unknown"


def test_edge_28_exact_id_first_then_first_substring_in_list_order(srv, client):
    cats = {"bill": "invoices", "billing": "payments"}
    srv.enqueue(text("billing"), text("The class is billing."), text("BILLING"))
    assert classify("x", cats, client=client).category == "billing"  # exact id wins
    # A sentence: substring matching, and "bill" is listed first and contained in "billing".
    assert classify("x", cats, client=client).category == "bill"
    assert classify("x", cats, client=client).category == "billing"  # exact, case-insensitive


def test_wrapped_id_and_description_matches(srv, client):
    srv.enqueue(text("`tech`"), text('"billing".'), text("It is about payments, refunds"))
    assert classify("x", ROUTES, client=client).category == "tech"
    assert classify("x", ROUTES, client=client).category == "billing"
    by_description = classify("x", ROUTES, client=client)
    assert (by_description.category, by_description.fallback) == ("billing", False)


def test_category_forms(srv, client):
    srv.enqueue(text("refund"), text("other"))
    plain = classify("Give my money back", ["refund", "question", "other"], client=client)
    assert (plain.category, plain.label, plain.index) == ("refund", "refund", 0)
    pairs = classify("Hi", [("greet", "greetings"), ("other", "anything else")], client=client)
    assert (pairs.category, pairs.label, pairs.index) == ("other", "anything else", 1)


def test_bad_categories_and_empty_input_make_no_request(srv, client):
    with pytest.raises(EmptyInputError, match="Input is empty"):
        classify("   ", ROUTES, client=client)
    with pytest.raises(ValueError, match="at least one category"):
        classify("x", {}, client=client)
    with pytest.raises(ValueError, match="unique"):
        classify("x", ["a", "a"], client=client)
    assert srv.requests == []


def test_reasoning_is_split_off_before_matching(srv, client):
    srv.enqueue(text("tech", reasoning="The user mentions billing but means a bug.",
                     think_tags=True))
    route = classify("x", ROUTES, client=client)
    assert route.category == "tech" and route.raw == "tech"


def test_provider_error_raises_and_counts_no_usage(srv, client):
    srv.enqueue(error(400, "bad request"))
    seen: list[tuple] = []
    with usage_sink(lambda *a: seen.append(a)), pytest.raises(ModelRequestError, match="bad request"):
        classify("x", ROUTES, client=client)
    assert seen == []


def test_usage_goes_to_the_running_sink(srv, client):
    srv.enqueue(text("tech", usage={"prompt_tokens": 100, "completion_tokens": 3}))
    seen: list[tuple] = []
    with usage_sink(lambda *a: seen.append(a)):
        route = classify("x", ROUTES, client=client)
    assert seen == [("classify", "scripted-model", route.usage, route.cost)]
    assert route.usage == Usage(input_tokens=100, output_tokens=3)
    assert route.cost == pytest.approx(100 / 1e6 + 2 * 3 / 1e6)


def test_default_client_from_the_environment(srv, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "env-key")
    monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
    monkeypatch.setenv("JUPYTER_AGENT_MODEL", "env-model")
    srv.enqueue(text("tech"))
    route = classify("The app crashes", ROUTES)
    assert isinstance(route, ClassifyResult) and route.category == "tech"
    assert srv.requests[0]["model"] == "env-model"
    assert srv.auth_present == [True]
