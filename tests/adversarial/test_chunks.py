"""A hostile or broken server's chunks become one clear line, never a traceback or a stuck run.

Every case goes through the real ``openai`` client over HTTP: the scripted server sends the
bytes verbatim (``raw``). What stays safe: the call returns an error (no exception), the error
is one line, nothing is retried when retrying cannot help, the run ends ``error`` in the
store, and the session history stays a valid conversation.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import pytest

from jupyter_agent import tool, toolloop
from jupyter_agent.agents.chat import chat
from jupyter_agent.llm._sse import MAX_LINE_BYTES
from jupyter_agent.llm.client import OpenAIClient as ModelClient
from jupyter_agent.llm.client import RetryPolicy
from jupyter_agent.llm.types import ChatRequest, ChatResponse
from jupyter_agent.session import Store
from tests.fakes.openai_server import ScriptedOpenAI, call, raw, text, tool_calls
from tests.stored import stored_messages

pytestmark = pytest.mark.timeout(120)

KEY = "sk-test-key-0123456789"
DEEP = '{"a":' + "[" * 10_000 + "]" * 10_000 + "}"
GOOD = json.dumps({"id": "c1", "choices": [{"index": 0, "delta": {"content": "Partial "},
                                            "finish_reason": None}]})

# (payload, start of the expected error) for streamed chunks.
BAD_CHUNKS = [
    (DEEP, "Model response chunk is nested too deeply to read"),
    ("this is not json", "Model response chunk is not valid JSON (Expecting value): 'this is"),
    ('{"choices":[{"delta":{"content":"cut off', "Model response chunk is not valid JSON"),
    ("[1, 2, 3]", "Model stream sent a malformed chunk: a chunk is a JSON list, not an object"),
    ('{"choices": "everything"}', "Model stream sent a malformed chunk: 'choices' is not a list"),
    ('{"choices": [{"delta": {"content": ["a", "b"]}}]}',
     "Model stream sent a malformed chunk: 'delta.content' is not a string"),
    ('{"choices": [{"delta": {"tool_calls": {"0": {}}}}]}',
     "Model stream sent a malformed chunk: 'tool_calls' is not a list"),
    ('{"choices": [{"delta": {"tool_calls": [{"index": "0", "function": {"name": "x"}}]}}]}',
     "Model stream sent a malformed chunk: a tool call 'index' is not a whole number"),
    ('{"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": {}}}]}}]}',
     "Model stream sent a malformed chunk: a tool call's name or arguments is not a string"),
    ('{"usage": {"prompt_tokens": "lots"}, "choices": []}',
     "Model stream sent a malformed chunk: 'usage' is not an object of token counts"),
    ('{"id": {"nested": "id"}}', "Model stream sent a malformed chunk: 'id' is not a string"),
]


@pytest.fixture
def client(server: ScriptedOpenAI) -> Iterator[ModelClient]:
    yield ModelClient("gpt-4.1-mini", api_key=KEY, base_url=server.base_url,
                      retry=RetryPolicy(max_retries=2, base_delay=0.001, max_delay=0.002))


def ask(client: ModelClient, stream: bool = True) -> tuple[ChatResponse, list[tuple[str, Any]]]:
    seen: list[tuple[str, Any]] = []
    resp = client.complete(ChatRequest(model="m", messages=[{"role": "user", "content": "hi"}],
                                       stream=stream), lambda k, d: seen.append((k, d)))
    return resp, seen


@pytest.mark.parametrize(("payload", "expected"), BAD_CHUNKS,
                         ids=[e.split(":")[-1][:30].strip() for _, e in BAD_CHUNKS])
def test_a_bad_chunk_after_good_ones_is_one_line_and_not_retried(
        server: ScriptedOpenAI, client: ModelClient, payload: str, expected: str) -> None:
    server.enqueue(raw(GOOD, payload, GOOD), text("a retry would get this"))
    resp, seen = ask(client)
    assert resp.error is not None and resp.error.startswith(expected), resp.error
    assert "\n" not in resp.error and len(resp.error) < 300
    assert "Traceback" not in resp.error and "RecursionError" not in resp.error
    assert len(server.requests) == 1 and server.pending == 1  # not retried
    assert ("retry" not in [k for k, _ in seen])
    assert resp.text == "" and resp.tool_calls == []  # nothing half-read is kept


def test_empty_data_lines_are_heartbeats_not_errors(
        server: ScriptedOpenAI, client: ModelClient) -> None:
    last = json.dumps({"choices": [{"delta": {"content": "done."}, "finish_reason": "stop"}]})
    server.enqueue(raw(GOOD, "", "   ", last))
    resp, _ = ask(client)
    assert resp.error is None and resp.text == "Partial done."


def test_a_50_mb_chunk_is_refused_without_reading_it_whole(server: ScriptedOpenAI,
                                                         client: ModelClient) -> None:
    huge = json.dumps({"choices": [{"delta": {"content": "x" * (50 * 1024 * 1024)}}]})
    server.enqueue(raw(GOOD, huge))
    resp, _ = ask(client)
    assert resp.error == (f"Model stream sent a chunk over {MAX_LINE_BYTES >> 20} MiB; "
                          "the response was dropped")
    assert len(server.requests) == 1


def test_a_chunk_just_under_the_limit_is_read(server: ScriptedOpenAI,
                                              client: ModelClient) -> None:
    body = "y" * (2 * 1024 * 1024)
    server.enqueue(raw(json.dumps({"choices": [{"delta": {"content": body},
                                                "finish_reason": "stop"}]})))
    resp, _ = ask(client)
    assert resp.error is None and resp.text == body


def test_non_streamed_bodies(server: ScriptedOpenAI, client: ModelClient) -> None:
    server.enqueue(raw(DEEP))
    resp, _ = ask(client, stream=False)
    assert resp.error == "Model response body is nested too deeply to read"
    assert len(server.requests) == 1
    # Not JSON at all (a proxy's error page?): retried, then one line naming the cause.
    server.default = raw("<html>Bad gateway</html>")
    resp, _ = ask(client, stream=False)
    assert resp.error is not None and "\n" not in resp.error
    assert resp.error.startswith("Model request failed after 3 attempts: invalid JSON response")
    server.default = None
    for body, expected in (("[1]", "Model response is a JSON list, not an object"),
                           ('{"choices": [{"message": "hello"}]}',
                            "Model response is malformed: 'choices' holds no message object"),
                           ('{"choices": [{"message": {"content": 5}}]}',
                            "Model response is malformed: 'delta.content' is not a string")):
        server.enqueue(raw(body))
        resp, _ = ask(client, stream=False)
        assert resp.error == expected


def test_a_deep_chunk_in_a_tool_loop_ends_the_run_error_and_keeps_history_valid(
        server: ScriptedOpenAI) -> None:
    @tool
    def lookup() -> str:
        """Look something up."""
        return "found it"

    server.enqueue(tool_calls([call("lookup", {}, id="l1")]), raw(GOOD, DEEP))
    run = toolloop("Find it", session="deep")
    assert run.status == "error"
    assert run.error == "Model response chunk is nested too deeply to read"
    with Store() as store:
        (row,) = store.list_runs("deep")
        assert row.status == "error" and row.error == run.error
        assert [t.status for t in store.list_turns("deep")] == ["error"]
        roles = [m["role"] for m in stored_messages(store, "deep")]
        assert roles == ["user", "assistant", "tool"]  # the finished round, nothing half-read
    server.enqueue(text("Recovered."))
    again = chat("Still there?", session="deep")
    assert again.status == "done"
    sent = server.requests[-1]["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "user"]
    assert sent[1]["tool_calls"][0]["id"] == sent[2]["tool_call_id"] == "l1"


@pytest.mark.notebook
def test_in_a_kernel_the_user_sees_one_line_and_no_traceback(server: ScriptedOpenAI) -> None:
    from jupyter_client.manager import start_new_kernel

    server.enqueue(raw(GOOD, DEEP))
    km, kc = start_new_kernel(kernel_name="python3", startup_timeout=120, env=dict(os.environ))
    outputs: list[dict[str, Any]] = []
    try:
        reply = kc.execute_interactive("%load_ext jupyter_agent", timeout=120)
        assert reply["content"]["status"] == "ok"
        reply = kc.execute_interactive("%%chat --session nb\nHello", timeout=120,
                                       output_hook=lambda msg: outputs.append(msg))
        # A failed run is reported like a usage error: the message, no traceback.
        assert reply["content"]["status"] == "error"
        assert reply["content"]["ename"] == "UsageError"
        assert reply["content"]["evalue"] == "Model response chunk is nested too deeply to read"
        reply = kc.execute_interactive(
            "from jupyter_agent.session import default_store\n"
            "print([(r.status, r.error) for r in default_store().list_runs('nb')])",
            timeout=60, output_hook=lambda msg: outputs.append(msg))
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    shown = json.dumps([m["content"] for m in outputs])
    assert "RecursionError" not in shown and "Traceback" not in shown
    stderr = "".join(m["content"]["text"] for m in outputs
                     if m["msg_type"] == "stream" and m["content"]["name"] == "stderr")
    assert stderr == "UsageError: Model response chunk is nested too deeply to read\n"
    assert "nested too deeply to read" in shown
    assert "[('error', 'Model response chunk is nested too deeply to read')]" in shown
