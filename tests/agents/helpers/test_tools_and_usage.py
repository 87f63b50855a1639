"""The helpers as tools of another run, and usage counted into the run that calls them."""

from __future__ import annotations

import json

from jupyter_agent.agents.helpers.tools import helper_tools
from jupyter_agent.llm.client import OpenAIClient
from jupyter_agent.llm.profiles import ModelProfile
from jupyter_agent.llm.types import Usage
from jupyter_agent.llm.usage_context import current_usage_sink, report_usage, usage_sink
from tests.fakes.openai_server import text


def test_helpers_as_tools_count_usage_into_the_caller(srv, client):
    classify_text, extract_fields, expand_search_query = helper_tools(client=client)
    srv.enqueue(text("tech"), text('{"name": "Ann"}'), text('["router reset steps"]'))
    seen: list[tuple] = []
    with usage_sink(lambda *a: seen.append(a)):
        r1 = classify_text.invoke(json.dumps({"text": "app crashes",
                                              "categories": {"billing": "money", "tech": "bugs"}}))
        r2 = extract_fields.invoke(json.dumps({
            "text": "Ann", "json_schema": {"type": "object",
                                           "properties": {"name": {"type": "string"}}}}))
        r3 = expand_search_query.invoke('{"query": "reset router"}')
    assert json.loads(r1.output) == {"category": "tech", "label": "bugs", "fallback": False}
    assert json.loads(r2.output) == {"name": "Ann"}
    assert json.loads(r3.output) == ["reset router", "router reset steps"]
    assert [s[0] for s in seen] == ["classify", "extract", "query_extension"]
    assert all(s[2].input_tokens > 0 and s[3] > 0 for s in seen)


def test_tool_schemas_take_only_json_arguments():
    tools = {t.name: t.schema()["function"]["parameters"] for t in helper_tools()}
    assert tools["classify_text"]["required"] == ["text", "categories"]
    assert tools["extract_fields"]["required"] == ["text", "json_schema"]
    assert tools["expand_search_query"]["required"] == ["query"]


def test_usage_sink_nests_and_is_off_outside_a_block():
    outer: list[tuple] = []
    inner: list[tuple] = []
    u = Usage(input_tokens=1, output_tokens=2)
    assert report_usage("classify", "m", u, 0.5) is False and current_usage_sink() is None
    with usage_sink(lambda *a: outer.append(a)):
        with usage_sink(lambda *a: inner.append(a)):
            assert report_usage("extract", "m", u, 0.1) is True
        with usage_sink(None):
            assert report_usage("extract", "m", u, 0.2) is False
        report_usage("classify", "m", u, 0.3)
    assert inner == [("extract", "m", u, 0.1)]
    assert outer == [("classify", "m", u, 0.3)]
    assert current_usage_sink() is None


def test_expand_query_history_fits_the_window(srv):
    small = OpenAIClient(ModelProfile(name="small", model="scripted-model", max_context=1040),
                         api_key="test-key", base_url=srv.base_url)
    history = [{"role": "user", "content": f"message number {i}"} for i in range(50)]
    srv.enqueue(text('["x"]'))
    from jupyter_agent.agents.helpers import expand_query

    expand_query("and then?", history=history, client=small)
    user = srv.requests[0]["messages"][1]["content"]
    block = user.split("History:\n")[1].split("\nOriginal question:")[0]
    lines = block.strip('"\n').splitlines()
    assert lines[-1] == "user: message number 49"
    assert 1 < len(lines) < 20  # 40 tokens of the 1040-token window; the oldest are left out


def test_model_next_to_a_client_sets_the_model_id(srv, client):
    from jupyter_agent.agents.helpers import classify

    srv.enqueue(text("a"))
    r = classify("x", ["a", "b"], client=client, model="other-model")
    assert srv.requests[0]["model"] == "other-model" and r.model == "other-model"
