"""Every model call has a total deadline that no server behaviour can stretch.

The per-read timeout in these tests is 60 s and the deadline 2 s: a call that returns long
before 60 s was cut by the deadline, not by the read timeout. Bounds on elapsed time are kept
generous (the machine is shared); what they prove is "not the read timeout".
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from jupyter_agent.agents.chat import chat
from jupyter_agent.base import config
from jupyter_agent.clients import factory
from jupyter_agent.llm.client import OpenAIClient as ModelClient
from jupyter_agent.llm.client import RetryPolicy
from jupyter_agent.llm.types import ChatRequest, ChatResponse
from jupyter_agent.session import Store
from tests.fakes.openai_server import ScriptedOpenAI, drip, error, hang, text

pytestmark = pytest.mark.timeout(120)

KEY = "sk-test-key-0123456789"
READ_TIMEOUT = 60.0
DEADLINE = 2.0
WELL_UNDER_READ_TIMEOUT = 25.0  # far from 60 s, far above 2 s
MESSAGE = ("Model request timed out after 2 s (the request deadline; raise it with "
           "%config AgentMagics.request_deadline)")


@pytest.fixture
def client(server: ScriptedOpenAI) -> Iterator[ModelClient]:
    yield ModelClient("gpt-4.1-mini", api_key=KEY, base_url=server.base_url,
                      retry=RetryPolicy(max_retries=3, base_delay=0.01, max_delay=8.0),
                      timeout=READ_TIMEOUT, deadline=DEADLINE)


def ask(client: ModelClient, *, stream: bool = True) -> tuple[ChatResponse, float, list[str]]:
    kinds: list[str] = []
    t0 = time.monotonic()
    resp = client.complete(ChatRequest(model="m", messages=[{"role": "user", "content": "hi"}],
                                       stream=stream), lambda kind, data: kinds.append(kind))
    return resp, time.monotonic() - t0, kinds


def test_keep_alive_comments_every_200ms_do_not_reset_the_deadline(
        server: ScriptedOpenAI, client: ModelClient) -> None:
    server.enqueue(drip(40, interval=0.2))
    resp, elapsed, kinds = ask(client)
    assert resp.error == MESSAGE
    assert "\n" not in resp.error
    assert DEADLINE <= elapsed < WELL_UNDER_READ_TIMEOUT
    assert len(server.requests) == 1  # a passed deadline is never retried
    assert "retry" not in kinds
    assert resp.text == "" and resp.tool_calls == []


def test_a_server_silent_mid_stream_is_cut_by_the_watchdog(server: ScriptedOpenAI,
                                                          client: ModelClient) -> None:
    # Some text, then nothing at all: the blocked read ends at the deadline, not at 60 s.
    server.enqueue(drip(40, interval=None, before="The answer is"))
    resp, elapsed, kinds = ask(client)
    assert resp.error == MESSAGE
    assert elapsed < WELL_UNDER_READ_TIMEOUT
    assert kinds.count("text") >= 1  # the partial text did stream before the cut
    assert len(server.requests) == 1


def test_silence_after_late_keep_alives_ends_at_the_deadline(server: ScriptedOpenAI) -> None:
    # Keep-alives for 9.5 s, then silence. Each read may wait min(read timeout, deadline) =
    # 10 s, so without the watchdog the silent read would end near 19.5 s; with it, at 10 s.
    client = ModelClient("gpt-4.1-mini", api_key=KEY, base_url=server.base_url,
                         timeout=READ_TIMEOUT, deadline=10)
    server.enqueue(drip(9.5, interval=0.25, stall=40))
    resp, elapsed, _ = ask(client)
    assert resp.error == ("Model request timed out after 10 s (the request "
                          "deadline; raise it with %config AgentMagics.request_deadline)")
    assert 10 <= elapsed < 16


def test_a_server_that_never_sends_headers_is_cut_too(server: ScriptedOpenAI,
                                                     client: ModelClient) -> None:
    server.enqueue(hang(40))
    resp, elapsed, _ = ask(client)
    assert resp.error == MESSAGE
    assert elapsed < WELL_UNDER_READ_TIMEOUT
    assert len(server.requests) == 1


def test_a_non_streamed_body_dripping_spaces_is_cut(server: ScriptedOpenAI,
                                                   client: ModelClient) -> None:
    server.enqueue(drip(40, interval=0.2))
    resp, elapsed, _ = ask(client, stream=False)
    assert resp.error == MESSAGE
    assert elapsed < WELL_UNDER_READ_TIMEOUT
    assert len(server.requests) == 1


def test_keep_alives_before_a_real_answer_are_harmless(server: ScriptedOpenAI) -> None:
    slow = ModelClient("gpt-4.1-mini", api_key=KEY, base_url=server.base_url, deadline=30)
    server.enqueue(drip(0.6, interval=0.1, then=text("Hello after the wait.")),
                   drip(0.6, interval=0.1, then=text("Also not streamed.")))
    resp, _, _ = ask(slow)
    assert resp.error is None and resp.text == "Hello after the wait."
    resp, _, _ = ask(slow, stream=False)
    assert resp.error is None and resp.text == "Also not streamed."


def test_backoff_that_would_pass_the_deadline_is_not_slept(server: ScriptedOpenAI,
                                                          client: ModelClient) -> None:
    # Retry-After asks for 6 s; only 2 s are left: the call ends now, with both reasons.
    server.enqueue(error(503, "busy", retry_after=6), text("never reached"))
    resp, elapsed, kinds = ask(client)
    assert resp.error is not None
    assert resp.error.startswith(MESSAGE + " (after 1 attempts; last: HTTP 503: busy)")
    assert elapsed < 5.0  # it did not sleep the 6 s
    assert len(server.requests) == 1 and server.pending == 1
    assert "retry" not in kinds


def test_retries_still_happen_inside_the_deadline(server: ScriptedOpenAI,
                                                 client: ModelClient) -> None:
    server.enqueue(error(503), error(502), text("third time lucky"))
    resp, _, kinds = ask(client)
    assert resp.error is None and resp.text == "third time lucky"
    assert kinds.count("retry") == 2 and len(server.requests) == 3


def test_deadline_must_be_positive(server: ScriptedOpenAI) -> None:
    for bad in (0, -1.0):
        with pytest.raises(ValueError, match="deadline must be a positive number"):
            ModelClient("gpt-4.1-mini", api_key=KEY, base_url=server.base_url, deadline=bad)


def test_the_setting_reaches_a_real_run_and_the_row_is_not_left_running(
        server: ScriptedOpenAI) -> None:
    config.settings.request_deadline = DEADLINE
    factory.clear_client_cache()
    server.enqueue(drip(40, interval=0.2))
    t0 = time.monotonic()
    run = chat("Say something", session="slow")
    assert time.monotonic() - t0 < WELL_UNDER_READ_TIMEOUT
    assert run.status == "error"
    assert run.error == MESSAGE
    with Store() as store:
        (row,) = store.list_runs("slow")
        assert row.status == "error" and row.error == MESSAGE
        (turn,) = store.list_turns("slow")
        assert turn.status == "error"
    # The session goes on: the next call gets a fresh deadline and a normal answer.
    server.enqueue(text("Fine now."))
    again = chat("Again?", session="slow")
    assert again.status == "done" and again.answer == "Fine now."


def test_magics_setting_is_validated(server: ScriptedOpenAI) -> None:
    from IPython.testing.globalipapp import get_ipython
    from traitlets import TraitError

    from jupyter_agent.edge.magics import AgentMagics

    magics = AgentMagics(shell=get_ipython())
    magics.request_deadline = 5.0
    assert config.settings.request_deadline == 5.0
    assert factory.make_client("gpt-4.1-mini").deadline == 5.0
    with pytest.raises(TraitError):
        magics.request_deadline = 0.0
    assert config.settings.request_deadline == 5.0  # the bad value changed nothing


def test_a_stall_cut_at_the_deadline_is_not_a_short_answer(server: ScriptedOpenAI,
                                                           client: ModelClient) -> None:
    """A server that ends its stream by closing the connection (no chunked framing): the
    watchdog's cut looks like the end of the body. Some text, then a stall: the call timed out,
    it did not answer "The answer is"."""
    server.enqueue(drip(40, interval=None, before="The answer is", close_delimited=True))
    resp, elapsed, kinds = ask(client)
    assert resp.error == MESSAGE
    assert elapsed < WELL_UNDER_READ_TIMEOUT
    assert kinds.count("text") >= 1


def test_a_run_cut_by_the_deadline_is_never_done(server: ScriptedOpenAI) -> None:
    """The run of such a stream ends ``error`` with the timeout and the setting to raise, not
    ``done`` with the partial answer; with nothing streamed it is not an "empty response"."""
    config.settings.request_deadline = DEADLINE
    factory.clear_client_cache()
    try:
        server.enqueue(drip(40, interval=None, before="The answer is", close_delimited=True),
                       drip(40, interval=None, close_delimited=True))
        for _ in range(2):
            run = chat("hi", history=0)
            assert run.status == "error", (run.status, run.answer)
            assert run.error == MESSAGE
            assert "empty response" not in run.error
    finally:
        config.settings.request_deadline = 900.0
        factory.clear_client_cache()


@pytest.mark.parametrize(("turn", "where"), [
    (hang(20), "waiting for the server"),
    (drip(20, interval=None, before="Half"), "mid-stream")], ids=["no-headers", "mid-stream"])
def test_a_read_timeout_names_itself_and_the_setting(server: ScriptedOpenAI, turn: Any,
                                                     where: str) -> None:
    """A server silent past the read timeout: the call is retried, then ends saying it timed
    out and which setting to raise (not "connection error: Request timed out.")."""
    quick = ModelClient("gpt-4.1-mini", api_key=KEY, base_url=server.base_url,
                        retry=RetryPolicy(max_retries=0), timeout=1.0, deadline=30)
    server.enqueue(turn)
    resp, _, _ = ask(quick)
    assert resp.error == (f"Model request failed after 1 attempts: timed out after 1 s {where} "
                          "(the read timeout; raise it with %config AgentMagics.read_timeout)")


def test_the_read_timeout_setting_reaches_the_client(server: ScriptedOpenAI) -> None:
    from IPython import get_ipython
    from IPython.testing.globalipapp import start_ipython

    shell = start_ipython() or get_ipython()
    assert shell.run_cell("%load_ext jupyter_agent").success
    assert shell.run_cell("%config AgentMagics.read_timeout = 7.5").success
    try:
        assert config.settings.timeout == 7.5
    finally:
        shell.run_cell("%config AgentMagics.read_timeout = 600.0")
