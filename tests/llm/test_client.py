"""The model client against the scripted server, through the real ``openai`` SDK."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from jupyter_agent.base.errors import MissingKeyError
from jupyter_agent.clients.factory import make_client
from jupyter_agent.llm.client import OpenAIClient, RetryPolicy, wire_messages
from jupyter_agent.llm.types import ChatRequest, ChatResponse
from tests.fakes.openai_server import (
    ScriptedOpenAI,
    call,
    disconnect,
    error,
    text,
    tool_calls,
)

pytestmark = pytest.mark.timeout(60)

KEY = "sk-test-key-0123456789"  # what the ``server`` fixture puts in OPENAI_API_KEY
HI = [{"role": "user", "content": "hi"}]


class Deltas:
    """Collects ``on_delta`` callbacks."""

    def __init__(self) -> None:
        self.items: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, kind: str, data: dict[str, Any]) -> None:
        self.items.append((kind, data))

    def kinds(self) -> list[str]:
        return [k for k, _ in self.items]

    def joined(self, kind: str) -> str:
        return "".join(d["text"] for k, d in self.items if k == kind)


@pytest.fixture
def client(server: ScriptedOpenAI) -> Iterator[OpenAIClient]:
    yield OpenAIClient("gpt-4.1-mini", api_key=KEY, base_url=server.base_url,
                       retry=RetryPolicy(max_retries=3, base_delay=0.001, max_delay=0.002),
                       timeout=20)


def ask(client: OpenAIClient, *, stream: bool = True, on_delta: Any = None,
        messages: list[dict[str, Any]] | None = None) -> ChatResponse:
    return client.complete(ChatRequest(model="m", messages=messages or HI, stream=stream),
                           on_delta)


def test_streamed_text_answer(server: ScriptedOpenAI, client: OpenAIClient) -> None:
    server.enqueue(text("Hello there!"))
    resp = ask(client)
    assert resp.text == "Hello there!"
    assert resp.error is None
    assert resp.finish_reason == "stop"
    assert server.requests[0]["stream"] is True
    assert server.requests[0]["messages"] == HI


def test_reasoning_content_streams_before_text(server: ScriptedOpenAI, client: OpenAIClient) -> None:
    server.enqueue(text("The answer is 42.", reasoning="Let me think it over.", chunk_size=4))
    deltas = Deltas()
    resp = ask(client, on_delta=deltas)
    assert resp.reasoning == "Let me think it over."
    assert resp.text == "The answer is 42."
    assert deltas.joined("reasoning") == resp.reasoning
    assert deltas.joined("text") == resp.text
    kinds = deltas.kinds()
    assert kinds.count("text") > 1  # really streamed in pieces
    assert max(i for i, k in enumerate(kinds) if k == "reasoning") < kinds.index("text")


@pytest.mark.parametrize("chunk_size", [1, 2, 3, 8, 100])
def test_think_tags_split_whatever_the_chunk_boundaries(
        server: ScriptedOpenAI, client: OpenAIClient, chunk_size: int) -> None:
    server.enqueue(text("Paris.", reasoning="The capital of France", think_tags=True,
                        chunk_size=chunk_size))
    deltas = Deltas()
    resp = ask(client, on_delta=deltas)
    assert resp.reasoning == "The capital of France"
    assert resp.text == "Paris."
    assert deltas.joined("reasoning") == resp.reasoning
    assert deltas.joined("text") == resp.text
    assert "<think" not in deltas.joined("text") and "</think" not in deltas.joined("reasoning")


@pytest.mark.parametrize("chunk_size", [1, 2, 3, 100])
def test_newlines_after_think_block_dropped_at_any_chunk_size(
        server: ScriptedOpenAI, client: OpenAIClient, chunk_size: int) -> None:
    server.enqueue(text("\n\nParis.", reasoning="hmm", think_tags=True, chunk_size=chunk_size))
    resp = ask(client)
    assert (resp.reasoning, resp.text) == ("hmm", "Paris.")


@pytest.mark.parametrize("chunk_size", [1, 3])
def test_text_that_only_looks_like_a_tag_stays_text(
        server: ScriptedOpenAI, client: OpenAIClient, chunk_size: int) -> None:
    server.enqueue(text("<thin", chunk_size=chunk_size), text("<b>bold</b>", chunk_size=chunk_size))
    assert ask(client).text == "<thin"
    second = ask(client)
    assert (second.text, second.reasoning) == ("<b>bold</b>", "")


def test_tool_calls_keep_the_provider_ids(server: ScriptedOpenAI, client: OpenAIClient) -> None:
    server.enqueue(tool_calls([call("add", {"a": 1, "b": 2}, id="call_provider_A"),
                               call("mul", {"x": 3}, id="call_provider_B")], chunk_size=3))
    deltas = Deltas()
    resp = ask(client, on_delta=deltas)
    assert [(c.id, c.name, json.loads(c.arguments)) for c in resp.tool_calls] == [
        ("call_provider_A", "add", {"a": 1, "b": 2}), ("call_provider_B", "mul", {"x": 3})]
    assert resp.finish_reason == "tool_calls"
    announced = [d for k, d in deltas.items if k == "tool_call"]
    assert [(d["id"], d["name"]) for d in announced] == [("call_provider_A", "add"),
                                                          ("call_provider_B", "mul")]
    args = "".join(d["delta"] for k, d in deltas.items if k == "tool_args" and d["index"] == 0)
    assert json.loads(args) == {"a": 1, "b": 2}


def test_a_call_without_id_gets_one(server: ScriptedOpenAI, client: OpenAIClient) -> None:
    server.enqueue(tool_calls([call("add", {"a": 1}, id=None), call("add", {"a": 2}, id=None)]))
    deltas = Deltas()
    resp = ask(client, on_delta=deltas)
    ids = [c.id for c in resp.tool_calls]
    assert all(i.startswith("call_") and len(i) > 10 for i in ids)
    assert len(set(ids)) == 2
    # The id announced while streaming is the one the response (and the history) keeps.
    assert [d["id"] for k, d in deltas.items if k == "tool_call"] == ids


def test_non_streamed_call_without_id_gets_one(server: ScriptedOpenAI, client: OpenAIClient) -> None:
    server.enqueue(tool_calls([call("add", {"a": 1}, id=None)]))
    resp = ask(client, stream=False)
    assert resp.tool_calls[0].id.startswith("call_")


def test_llama_repeated_id_and_name_assembled_once(server: ScriptedOpenAI,
                                                   client: OpenAIClient) -> None:
    server.enqueue(tool_calls([call("search_files", {"pattern": "*.py", "path": "src"},
                                    id="abc123")], repeat_id_and_name=True, chunk_size=2))
    deltas = Deltas()
    resp = ask(client, on_delta=deltas)
    assert len(resp.tool_calls) == 1
    c = resp.tool_calls[0]
    assert (c.id, c.name) == ("abc123", "search_files")
    assert json.loads(c.arguments) == {"pattern": "*.py", "path": "src"}
    assert deltas.kinds().count("tool_call") == 1


def test_usage_from_the_provider(server: ScriptedOpenAI, client: OpenAIClient) -> None:
    server.enqueue(text("ok", usage={"prompt_tokens": 123, "completion_tokens": 45}))
    resp = ask(client)
    assert (resp.usage.input_tokens, resp.usage.output_tokens) == (123, 45)
    assert resp.usage.estimated is False
    assert server.requests[0]["stream_options"] == {"include_usage": True}


@pytest.mark.parametrize("stream", [True, False])
def test_usage_estimated_when_the_provider_sends_none(server: ScriptedOpenAI, client: OpenAIClient,
                                                      stream: bool) -> None:
    server.enqueue(text("A fairly long answer of several words.", usage=False))
    resp = ask(client, stream=stream,
               messages=[{"role": "user", "content": "Please say something long " * 5}])
    assert resp.usage.estimated is True
    assert resp.usage.input_tokens > 10
    assert resp.usage.output_tokens > 3


def test_429_and_500_are_retried_then_succeed(server: ScriptedOpenAI, client: OpenAIClient) -> None:
    server.enqueue(error(429, "slow down"), error(500, "oops"), text("finally"))
    deltas = Deltas()
    resp = ask(client, on_delta=deltas)
    assert resp.error is None
    assert resp.text == "finally"
    assert len(server.requests) == 3
    retries = [d for k, d in deltas.items if k == "retry"]
    assert [r["attempt"] for r in retries] == [1, 2]
    assert "429" in retries[0]["reason"] and "slow down" in retries[0]["reason"]


def test_retry_after_header_is_honoured_within_bounds() -> None:
    policy = RetryPolicy(max_retries=3, base_delay=1.0, max_delay=4.0)
    assert policy.delay(0, retry_after=2.5) == 2.5
    assert policy.delay(0, retry_after=100) == 4.0
    assert all(0.75 <= policy.delay(0) <= 1.25 for _ in range(50))
    assert all(policy.delay(10) <= 4.0 for _ in range(50))


def test_retries_exhausted_end_with_an_error_never_an_answer(server: ScriptedOpenAI,
                                                             client: OpenAIClient) -> None:
    server.default = error(503, "overloaded")
    resp = ask(client)
    assert len(server.requests) == 4  # the first try and 3 retries
    assert resp.error is not None and "503" in resp.error and "overloaded" in resp.error
    assert "after 4 attempts" in resp.error
    assert resp.status_code == 503
    assert resp.text == "" and resp.tool_calls == []
    assert resp.assistant_message() is None


def test_400_is_not_retried(server: ScriptedOpenAI, client: OpenAIClient) -> None:
    server.enqueue(error(400, "bad request: messages must not be empty"), text("never"))
    resp = ask(client)
    assert len(server.requests) == 1
    assert resp.status_code == 400
    assert resp.error is not None and "messages must not be empty" in resp.error
    assert resp.text == ""


def test_disconnect_mid_stream_is_retried_with_a_reset(server: ScriptedOpenAI,
                                                       client: OpenAIClient) -> None:
    server.enqueue(disconnect(after_chunks=2, content="Half an answer that is cut"),
                   text("The whole answer."))
    deltas = Deltas()
    resp = ask(client, on_delta=deltas)
    assert resp.error is None
    assert resp.text == "The whole answer."
    kinds = deltas.kinds()
    assert kinds.count("reset") == 1
    before = "".join(d["text"] for k, d in deltas.items[:kinds.index("reset")] if k == "text")
    assert before == "Half an answer t"  # two chunks of 8 reached the caller, then were withdrawn
    after = "".join(d["text"] for k, d in deltas.items[kinds.index("reset"):] if k == "text")
    assert after == "The whole answer."
    assert len(server.requests) == 2


def test_disconnect_before_any_byte_is_retried_without_reset(server: ScriptedOpenAI,
                                                             client: OpenAIClient) -> None:
    server.enqueue(disconnect(after_chunks=0), text("ok"))
    deltas = Deltas()
    resp = ask(client, on_delta=deltas)
    assert resp.text == "ok"
    assert "reset" not in deltas.kinds()


def test_non_streamed_request(server: ScriptedOpenAI, client: OpenAIClient) -> None:
    server.enqueue(text("Paris.", reasoning="France's capital"),
                   text("Rome.", reasoning="Italy", think_tags=True),
                   tool_calls([call("add", {"a": 1}, id="call_x")]))
    deltas = Deltas()
    first = ask(client, stream=False, on_delta=deltas)
    assert (first.text, first.reasoning, first.finish_reason) == ("Paris.", "France's capital",
                                                                 "stop")
    assert "stream" not in server.requests[0]
    assert deltas.joined("text") == "Paris."  # the caller still sees the text as one delta
    second = ask(client, stream=False)
    assert (second.text, second.reasoning) == ("Rome.", "Italy")
    third = ask(client, stream=False)
    assert [(c.id, c.name) for c in third.tool_calls] == [("call_x", "add")]
    assert third.assistant_message() == {
        "role": "assistant", "content": "",
        "tool_calls": [{"id": "call_x", "type": "function",
                        "function": {"name": "add", "arguments": '{"a": 1}'}}]}


def test_the_key_never_leaves_the_authorization_header(server: ScriptedOpenAI,
                                                       client: OpenAIClient) -> None:
    server.enqueue(text("ok", reasoning="r"), tool_calls([call("add", {"a": 1})]),
                   error(400, "bad"))
    deltas = Deltas()
    responses = [ask(client, on_delta=deltas) for _ in range(3)]
    assert server.auth_present == [True, True, True]
    assert KEY not in json.dumps(server.requests)
    assert KEY not in json.dumps(server.request_headers)
    assert KEY not in repr(client) and KEY not in str(client)
    assert KEY not in json.dumps([d for _, d in deltas.items], default=str)
    assert all(KEY not in r.model_dump_json() for r in responses)
    assert KEY not in client.profile.model_dump_json()


def test_a_missing_key_names_the_variable(server: ScriptedOpenAI,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(MissingKeyError, match="OPENAI_API_KEY"):
        make_client("gpt-4.1-mini")


def test_make_client_reads_the_environment(server: ScriptedOpenAI) -> None:
    server.enqueue(text("from env"))
    client = make_client("gpt-4.1-mini")
    assert client is make_client("gpt-4.1-mini")  # cached: one connection pool
    resp = client.complete(ChatRequest(model=client.profile.model, messages=HI))
    assert resp.text == "from env"
    assert server.requests[0]["model"] == "gpt-4.1-mini"


def test_wire_messages_cleans_without_copying() -> None:
    plain = {"role": "user", "content": "hi"}
    calls = {"role": "assistant", "content": None,
             "tool_calls": [{"id": "c1", "type": "function",
                             "function": {"name": "f", "arguments": "{}"}}]}
    hidden = {"role": "user", "content": "checkpoint", "hideInUI": True}
    tool_msg = {"role": "tool", "tool_call_id": "c1", "content": "1"}
    out = wire_messages([plain, calls, hidden, tool_msg])
    assert out[0] is plain and out[3] is tool_msg  # unchanged messages are not copied
    assert out[1]["content"] == "" and out[1]["tool_calls"] == calls["tool_calls"]
    assert calls["content"] is None  # the caller's history is left alone
    assert out[2] == {"role": "user", "content": "checkpoint"}
    assert "hideInUI" in hidden


def test_wire_messages_reach_the_server_cleaned(server: ScriptedOpenAI,
                                                client: OpenAIClient) -> None:
    server.enqueue(text("ok"))
    ask(client, messages=[{"role": "user", "content": "x", "hideInUI": True},
                          {"role": "assistant", "content": None,
                           "tool_calls": [{"id": "c1", "type": "function",
                                           "function": {"name": "f", "arguments": "{}"}}]},
                          {"role": "tool", "tool_call_id": "c1", "content": "1"}])
    sent = server.requests[0]["messages"]
    assert sent[0] == {"role": "user", "content": "x"}
    assert sent[1]["content"] == ""


@pytest.mark.parametrize("stream", [True, False])
def test_one_connection_serves_many_requests(server: ScriptedOpenAI, client: OpenAIClient,
                                             stream: bool) -> None:
    for i in range(6):
        server.enqueue(text(f"answer {i}", reasoning="r") if i % 2 else
                       tool_calls([call("add", {"a": i})]))
    for _ in range(6):
        assert ask(client, stream=stream).error is None
    assert server.connections == 1


def test_request_body_follows_profile_and_request(server: ScriptedOpenAI) -> None:
    from jupyter_agent.llm.profiles import resolve_profile

    server.enqueue(text("ok"), text("ok"))
    plain = OpenAIClient("gpt-4.1-mini", api_key=KEY, base_url=server.base_url)
    plain.complete(ChatRequest(model="", messages=HI, max_tokens=10, temperature=0.3,
                               tools=[{"type": "function", "function": {"name": "f"}}],
                               tool_choice="none", parallel_tool_calls=False))
    body = server.requests[0]
    assert body["model"] == "gpt-4.1-mini"  # an empty request model falls back to the profile
    assert (body["max_tokens"], body["temperature"], body["tool_choice"],
            body["parallel_tool_calls"]) == (10, 0.3, "none", False)
    reasoning = OpenAIClient(resolve_profile("o4-mini"), api_key=KEY, base_url=server.base_url)
    reasoning.complete(ChatRequest(model="o4-mini", messages=HI, max_tokens=10))
    assert server.requests[1]["max_completion_tokens"] == 10
    assert "max_tokens" not in server.requests[1]
