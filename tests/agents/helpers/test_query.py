"""expand_query: rewrite a question into distinct search queries (docs/behaviour.md §7.4)."""

from __future__ import annotations

import json

import pytest

from jupyter_agent.agents.helpers import QueryExpansion, expand_query
from jupyter_agent.agents.helpers.query import select_queries
from jupyter_agent.llm.usage_context import usage_sink
from tests.fakes.openai_server import error, text

HISTORY = [{"role": "user", "content": "My router keeps dropping wifi."},
           {"role": "assistant", "content": "Try a factory reset."}]


def test_expand_query_returns_the_original_first(srv, client):
    srv.enqueue(text('["How to factory reset the router", "Router reset button steps"]'))
    q = expand_query("how do I reset it?", history=HISTORY, client=client)
    assert q.queries == ["how do I reset it?", "How to factory reset the router",
                         "Router reset button steps"]
    assert q.cost == pytest.approx(client.cost(q.usage)) and q.cost > 0
    assert len(srv.requests) == 1


def test_request_follows_the_reference_layout(srv, client):
    srv.enqueue(text('["a b"]'))
    expand_query("how do I reset it?", history=HISTORY + [{"role": "tool", "content": "x"}],
                 client=client, n=5, background="Home network support")
    body = srv.requests[0]
    assert body["stream"] is True
    system, user = (m["content"] for m in body["messages"])
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert "query rewriter" in system and "JSON array of strings" in system
    expected = [
        "Generate search queries from the input below.",
        "Expected count: 5",
        "Conversation background:",
        '"""\nHome network support\n"""',
        "History:",
        '"""\nuser: My router keeps dropping wifi.\nassistant: Try a factory reset.\n"""',
        "Original question:",
        '"""\nhow do I reset it?\n"""',
        "Output only a JSON array of strings.",
    ]
    assert user.split("\n") == "\n".join(expected).split("\n")


def test_no_history_and_no_background_are_null(srv, client):
    srv.enqueue(text('["Hello"]'))
    q = expand_query("Hello", client=client)
    user = srv.requests[0]["messages"][1]["content"]
    assert user.count('"""\nnull\n"""') == 2
    assert q.queries == ["Hello"]  # the model returned the question itself: no repeat


def test_scenario_48_cleaning_then_distinct(srv, client):
    srv.enqueue(text('["q1","q1 ","", "q2"]'), text("no idea"))
    q = expand_query("original question", client=client)
    assert q.candidates == ["q1", "q1", "q2"]
    assert q.queries == ["original question", "q1", "q2"]
    nothing = expand_query("original question", client=client)
    assert nothing.candidates == [] and nothing.queries == ["original question"]


def test_scenario_48_selection_alone_keeps_repeats():
    # The selection itself de-duplicates nothing (expand_query does, §7.4).
    assert sorted(select_queries("original question", ["q1", "q1", "q2"], k=3)) == [
        "q1", "q1", "q2"]


@pytest.mark.parametrize("answer", ['{"q": "x"}', "[]", '["", "  "]', "[1, 2", "null", ""])
def test_edge_30_parse_problems_give_just_the_original(srv, client, answer):
    srv.enqueue(text(answer))
    q = expand_query("reset router", client=client)
    assert q.queries == ["reset router"] and q.raw == answer


def test_edge_30_at_most_k_rewrites_none_repeating_the_original(srv, client):
    proposals = ["Reset router!"] + [f"router reset method {i}" for i in range(12)]
    srv.enqueue(text(json.dumps(proposals)), text(json.dumps(proposals)))
    q = expand_query("reset router", client=client)
    assert len(q.queries) == 4 and q.queries[0] == "reset router"
    assert "Reset router!" not in q.queries  # same letters and digits as the original
    assert len(q.candidates) == 10  # n caps what is considered
    assert len(set(q.queries)) == 4
    assert len(expand_query("reset router", client=client, k=1).queries) == 2


def test_tolerant_array_parsing(srv, client):
    srv.enqueue(text("Here you go:\n```json\n['router reset', /* c */ 'wifi drops',]\n```"))
    q = expand_query("reset router", client=client)
    assert q.candidates == ["router reset", "wifi drops"]


def test_selection_prefers_diverse_queries_with_embeddings():
    vectors = {"q": [1.0, 0.0], "A": [1.0, 0.0], "A2": [0.99, 0.14], "B": [0.6, 0.8]}

    def embed(texts: list[str]) -> list[list[float]]:
        return [vectors[t] for t in texts]

    # Most relevant first, then the one least like it: B beats the near-duplicate A2.
    assert select_queries("q", ["A", "A2", "B"], k=2, embed=embed) == ["A", "B"]
    with pytest.raises(ValueError, match="lengths differ"):
        select_queries("q", ["A"], k=1, embed=lambda t: [[1.0, 0.0], [1.0]])


def test_blank_query_makes_no_call(srv, client):
    q = expand_query("   ", client=client)
    assert isinstance(q, QueryExpansion) and q.queries == [] and srv.requests == []


def test_usage_reported_and_errors_raised(srv, client):
    from jupyter_agent.base.errors import ModelRequestError

    srv.enqueue(text('["x y"]'), error(401, "bad key"))
    seen: list[tuple] = []
    with usage_sink(lambda *a: seen.append(a)):
        q = expand_query("reset router", client=client)
        with pytest.raises(ModelRequestError, match="bad key"):
            expand_query("reset router", client=client)
    assert seen == [("query_extension", "scripted-model", q.usage, q.cost)]
