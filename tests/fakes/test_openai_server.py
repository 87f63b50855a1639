"""The scripted OpenAI server, exercised through the real ``openai`` client."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest

from tests.fakes.openai_server import (
    NO_TURN_MESSAGE,
    ScriptedOpenAI,
    call,
    disconnect,
    empty,
    error,
    hang,
    text,
    tool_calls,
    turn_from_json,
)

pytestmark = pytest.mark.timeout(60)
MESSAGES = [{"role": "user", "content": "hi"}]


@pytest.fixture
def srv() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI() as server:
        yield server


@pytest.fixture
def client(srv: ScriptedOpenAI) -> Iterator[openai.OpenAI]:
    # A timeout turns a stream that never ends into a failure instead of a stuck test.
    with openai.OpenAI(base_url=srv.base_url, api_key="test-key", max_retries=0,
                       timeout=20) as c:
        yield c


def test_non_streaming_text(srv: ScriptedOpenAI, client: openai.OpenAI) -> None:
    srv.enqueue(text("Hello!"))
    reply = client.chat.completions.create(model="m", messages=MESSAGES)
    assert reply.choices[0].message.content == "Hello!"
    assert reply.choices[0].finish_reason == "stop"
    assert reply.usage is not None and reply.usage.total_tokens > 0
    assert srv.requests == [{"model": "m", "messages": MESSAGES}]
    assert srv.auth_present == [True]
    assert srv.request_headers[0]["authorization"] == "Bearer <redacted>"
    assert "test-key" not in json.dumps(srv.request_headers)


def test_streaming_text_with_reasoning(srv: ScriptedOpenAI, client: openai.OpenAI) -> None:
    srv.enqueue(text("The answer is 42.", reasoning="Let me think it over.", chunk_size=4))
    chunks = list(client.chat.completions.create(model="m", messages=MESSAGES, stream=True))
    deltas = [c.choices[0].delta for c in chunks if c.choices]
    reasoning = [getattr(d, "reasoning_content", None) for d in deltas]
    content = [d.content for d in deltas]
    assert "".join(r for r in reasoning if r) == "Let me think it over."
    assert "".join(c for c in content if c) == "The answer is 42."
    assert sum(1 for c in content if c) > 1  # really streamed in several pieces
    first_content = next(i for i, c in enumerate(content) if c)
    assert max(i for i, r in enumerate(reasoning) if r) < first_content  # reasoning comes first
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert all(c.usage is None for c in chunks)  # no include_usage, no usage chunk


def test_think_tags_inline(srv: ScriptedOpenAI, client: openai.OpenAI) -> None:
    srv.enqueue(text("yes", reasoning="hmm", think_tags=True))
    reply = client.chat.completions.create(model="m", messages=MESSAGES)
    assert reply.choices[0].message.content == "<think>hmm</think>yes"
    assert getattr(reply.choices[0].message, "reasoning_content", None) is None


def test_usage_chunk_only_with_include_usage(srv: ScriptedOpenAI, client: openai.OpenAI) -> None:
    usage = {"prompt_tokens": 11, "completion_tokens": 3}
    srv.enqueue(text("ok", usage=usage), text("ok", usage=False))
    chunks = list(client.chat.completions.create(
        model="m", messages=MESSAGES, stream=True, stream_options={"include_usage": True}))
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None
    assert (chunks[-1].usage.prompt_tokens, chunks[-1].usage.total_tokens) == (11, 14)
    chunks = list(client.chat.completions.create(
        model="m", messages=MESSAGES, stream=True, stream_options={"include_usage": True}))
    assert all(c.usage is None for c in chunks)


def test_tool_call_stream_reassembled_by_sdk(srv: ScriptedOpenAI, client: openai.OpenAI) -> None:
    srv.enqueue(tool_calls([call("add", {"a": 1, "b": 2}, id="call_a"),
                            call("echo", {"text": "a longer argument string"}, id="call_b")],
                           text="Calling tools."))
    with client.chat.completions.stream(model="m", messages=MESSAGES) as stream:
        final = stream.get_final_completion()
    message = final.choices[0].message
    assert final.choices[0].finish_reason == "tool_calls"
    assert message.content == "Calling tools."
    calls = [(t.id, t.function.name, json.loads(t.function.arguments))
             for t in message.tool_calls or []]
    assert calls == [("call_a", "add", {"a": 1, "b": 2}),
                     ("call_b", "echo", {"text": "a longer argument string"})]


def test_tool_call_wire_shape(srv: ScriptedOpenAI, client: openai.OpenAI) -> None:
    srv.enqueue(tool_calls([call("f", {"x": "0123456789"}, id=None)], chunk_size=5),
                tool_calls([call("f", {"x": 1}, id="c1")], repeat_id_and_name=True, chunk_size=3))
    parts = [c.choices[0].delta.tool_calls[0] for c in client.chat.completions.create(
        model="m", messages=MESSAGES, stream=True) if c.choices and c.choices[0].delta.tool_calls]
    assert parts[0].function.name == "f" and parts[0].function.arguments == ""
    assert all(p.id is None for p in parts)
    assert all(p.function.name is None for p in parts[1:])  # later chunks: index + arguments only
    assert "".join(p.function.arguments for p in parts) == '{"x": "0123456789"}'
    parts = [c.choices[0].delta.tool_calls[0] for c in client.chat.completions.create(
        model="m", messages=MESSAGES, stream=True) if c.choices and c.choices[0].delta.tool_calls]
    assert len(parts) > 2
    assert all(p.id == "c1" and p.function.name == "f" for p in parts)  # llama.cpp quirk


def test_auto_call_ids_are_unique(srv: ScriptedOpenAI, client: openai.OpenAI) -> None:
    srv.default = tool_calls([call("f"), call("f")])
    ids = [t.id for _ in range(2) for t in client.chat.completions.create(
        model="m", messages=MESSAGES).choices[0].message.tool_calls or []]
    with client.chat.completions.stream(model="m", messages=MESSAGES) as stream:
        ids += [t.id for t in stream.get_final_completion().choices[0].message.tool_calls or []]
    assert len(ids) == len(set(ids)) == 6
    assert all(isinstance(i, str) and i for i in ids)


def test_malformed_arguments_pass_through(srv: ScriptedOpenAI, client: openai.OpenAI) -> None:
    srv.enqueue(tool_calls([call("other", '{"raw": ', id=None)]))
    reply = client.chat.completions.create(model="m", messages=MESSAGES)
    tool_call = (reply.choices[0].message.tool_calls or [])[0]
    assert tool_call.function.arguments == '{"raw": '
    assert reply.choices[0].message.content is None


def test_error_429_raises_rate_limit(srv: ScriptedOpenAI, client: openai.OpenAI) -> None:
    srv.enqueue(error(429, "slow down", retry_after=2))
    with pytest.raises(openai.RateLimitError, match="slow down") as info:
        client.chat.completions.create(model="m", messages=MESSAGES)
    assert info.value.response.headers["retry-after"] == "2"


def test_disconnect_mid_stream_raises(srv: ScriptedOpenAI, client: openai.OpenAI) -> None:
    srv.enqueue(disconnect(after_chunks=2), disconnect())
    received: list[str] = []
    with pytest.raises(openai.APIConnectionError):
        for chunk in client.chat.completions.create(model="m", messages=MESSAGES, stream=True):
            received.append(chunk.choices[0].delta.content or "")
    assert len([r for r in received if r]) == 2
    with pytest.raises(openai.APIConnectionError):  # non-streamed: no reply at all
        client.chat.completions.create(model="m", messages=MESSAGES)


def test_empty_and_queue_exhausted(srv: ScriptedOpenAI, client: openai.OpenAI) -> None:
    srv.enqueue(empty())
    reply = client.chat.completions.create(model="m", messages=MESSAGES)
    assert reply.choices[0].message.content == ""
    assert not reply.choices[0].message.tool_calls
    with pytest.raises(openai.InternalServerError, match=NO_TURN_MESSAGE):
        client.chat.completions.create(model="m", messages=MESSAGES)
    srv.default = text("ok")
    reply = client.chat.completions.create(model="m", messages=MESSAGES)
    assert reply.choices[0].message.content == "ok"


def test_callable_turn_sees_request(srv: ScriptedOpenAI, client: openai.OpenAI) -> None:
    srv.enqueue(lambda body: text(f"you said {body['messages'][-1]['content']}"))
    reply = client.chat.completions.create(model="m", messages=MESSAGES)
    assert reply.choices[0].message.content == "you said hi"


def test_missing_key_is_401(srv: ScriptedOpenAI) -> None:
    srv.enqueue(text("never sent"))
    reply = httpx.post(f"{srv.base_url}/chat/completions", json={"model": "m", "messages": []})
    assert reply.status_code == 401
    assert srv.auth_present == [False]
    assert srv.pending == 1  # a refused request consumes no turn


def test_models_endpoint(srv: ScriptedOpenAI, client: openai.OpenAI) -> None:
    assert [m.id for m in client.models.list()] == ["scripted-model"]


def test_hang_is_woken_by_stop() -> None:
    srv = ScriptedOpenAI().start()
    srv.enqueue(hang(600))
    c = openai.OpenAI(base_url=srv.base_url, api_key="k", max_retries=0)
    errors: list[BaseException] = []

    def ask() -> None:
        try:
            c.chat.completions.create(model="m", messages=MESSAGES)
        except Exception as exc:  # noqa: BLE001 - the dropped reply is the expected outcome
            errors.append(exc)

    worker = threading.Thread(target=ask)
    worker.start()
    while not srv.requests:
        worker.join(0.01)
    srv.stop()
    worker.join(30)
    assert not worker.is_alive()
    assert isinstance(errors[0], openai.APIConnectionError)


def test_connection_reuse_streaming_and_not(srv: ScriptedOpenAI, client: openai.OpenAI) -> None:
    srv.default = text("some streamed text", chunk_size=3)
    for _ in range(2):
        response = client.post("/chat/completions", cast_to=httpx.Response, stream=True,
                               body={"model": "m", "messages": MESSAGES, "stream": True})
        body = response.read()
        response.close()
        assert body.rstrip().endswith(b"data: [DONE]")
    client.chat.completions.create(model="m", messages=MESSAGES)
    assert len(srv.requests) == 3
    assert srv.connections == 1


def test_reset_and_turn_json_round_trip(srv: ScriptedOpenAI) -> None:
    turn = hang(0.1, then=tool_calls([call("f", {"a": 1})], repeat_id_and_name=True))
    assert turn_from_json(json.loads(json.dumps(turn.model_dump()))) == turn
    srv.enqueue(text("x"))
    srv.default = text("y")
    srv.reset()
    assert (srv.pending, srv.default, srv.requests, srv.connections) == (0, None, [], 0)


def test_cli_subprocess(tmp_path: Path) -> None:
    record = tmp_path / "requests.jsonl"
    proc, base_url = ScriptedOpenAI.serve_subprocess(
        [text("from a child process")], default=text("default"), record_to=record)
    try:
        c = openai.OpenAI(base_url=base_url, api_key="k", max_retries=0)
        first = c.chat.completions.create(model="m", messages=MESSAGES)
        second = c.chat.completions.create(model="m", messages=MESSAGES, stream=True)
        assert first.choices[0].message.content == "from a child process"
        streamed = "".join(ch.choices[0].delta.content or "" for ch in second if ch.choices)
        assert streamed == "default"
    finally:
        proc.stdin.close()  # the child exits when its stdin closes
        assert proc.wait(30) == 0
    lines = record.read_text().splitlines()
    assert [json.loads(line)["messages"] for line in lines] == [MESSAGES, MESSAGES]


def test_release_hangs_answers_the_hanging_requests_now(srv: ScriptedOpenAI,
                                                       client: openai.OpenAI) -> None:
    srv.enqueue(hang(600, then=text("late")), hang(600, then=text("late")))
    answers: list[str] = []

    def ask() -> None:
        resp = client.chat.completions.create(model="m", messages=MESSAGES)
        answers.append(resp.choices[0].message.content or "")

    workers = [threading.Thread(target=ask) for _ in range(2)]
    for w in workers:
        w.start()
    deadline = time.monotonic() + 30
    while len(srv.requests) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    srv.release_hangs()
    for w in workers:
        w.join(30)
    assert answers == ["late", "late"]
    srv.enqueue(hang(0.05, then=text("on time")))  # a later hang waits again (no stale release)
    assert client.chat.completions.create(model="m", messages=MESSAGES
                                          ).choices[0].message.content == "on time"


def test_a_body_cut_short_by_a_killed_client_is_no_request(srv: ScriptedOpenAI) -> None:
    """A client killed between its headers and its body (SIGKILL mid-send) made no request:
    the server drops the connection and records nothing, as a real server would."""
    import socket
    from urllib.parse import urlsplit

    url = urlsplit(srv.base_url)
    with socket.create_connection((url.hostname, url.port), timeout=10) as sock:
        sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                     b"Content-Type: application/json\r\nContent-Length: 500\r\n"
                     b"Authorization: Bearer sk-x\r\n\r\n{\"model\": \"m\"")
        sock.shutdown(socket.SHUT_WR)
        assert sock.recv(100) == b""  # dropped without an answer
    assert srv.requests == []
