"""The HTTP transport under a hostile server: what comes back is an error, never a crash."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from jupyter_agent.llm.client import OpenAIClient, RetryPolicy
from jupyter_agent.llm.types import ChatRequest

pytestmark = pytest.mark.timeout(60)


class _ListAnswer(BaseHTTPRequestHandler):
    """Answers every chat request with HTTP 200 and a JSON array instead of an object."""

    posts = 0

    def do_POST(self) -> None:  # noqa: N802 - the http.server naming
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        type(self).posts += 1
        data = json.dumps([{"choices": []}]).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def list_server() -> Iterator[str]:
    _ListAnswer.posts = 0
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _ListAnswer)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_a_json_answer_that_is_not_an_object_is_retried_then_reported(list_server: str) -> None:
    client = OpenAIClient("gpt-4.1-mini", api_key="sk-test", base_url=list_server,
                          retry=RetryPolicy(1, 0.001, 0.002))
    resp = client.complete(ChatRequest(model="gpt-4.1-mini", stream=False,
                                       messages=[{"role": "user", "content": "hi"}]))
    assert resp.error == ("Model request failed after 2 attempts: invalid JSON response: "
                          "a list, not an object")
    assert resp.text == "" and resp.tool_calls == [] and _ListAnswer.posts == 2
