"""Streamed tool arguments are relayed at most every ``ARGS_EVERY`` seconds per call
(loop/kernel.py): fewer events, the same arguments, in the stream's order."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from jupyter_agent.base.events import BaseEvent
from jupyter_agent.llm.client import OpenAIClient, RetryPolicy
from jupyter_agent.loop.hooks import LoopHooks, ToolOutcome
from jupyter_agent.loop.kernel import ARGS_EVERY, LoopConfig, LoopResult, run_loop
from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls

pytestmark = pytest.mark.timeout(60)

TOOLS = [{"type": "function", "function": {"name": n, "description": n,
                                           "parameters": {"type": "object"}}} for n in "ab"]


@pytest.fixture
def client(server: ScriptedOpenAI) -> OpenAIClient:
    return OpenAIClient("gpt-4.1-mini", api_key="sk-test", base_url=server.base_url,
                        retry=RetryPolicy(max_retries=0), timeout=30)


class Timed:
    """An ``emit`` that keeps each event with the time it came."""

    def __init__(self, on_event: Any = None) -> None:
        self.items: list[tuple[float, BaseEvent]] = []
        self.on_event = on_event

    def __call__(self, event: BaseEvent) -> None:
        self.items.append((time.monotonic(), event))
        if self.on_event is not None:
            self.on_event(event)

    def of(self, kind: str, call_id: str | None = None) -> list[tuple[float, Any]]:
        return [(t, e) for t, e in self.items if e.type == kind  # type: ignore[attr-defined]
                and (call_id is None or e.call_id == call_id)]  # type: ignore[attr-defined]


def run(client: OpenAIClient, emit: Timed, **hooks: Any) -> LoopResult:
    return run_loop(client, [{"role": "user", "content": "go"}],
                    LoopConfig(model="gpt-4.1-mini", tools=TOOLS, max_rounds=3),
                    LoopHooks(run_tool=lambda c, s: ToolOutcome(output="ok"), **hooks), emit)


def test_a_fast_stream_of_pieces_is_relayed_in_a_few_that_add_up(
        server: ScriptedOpenAI, client: OpenAIClient) -> None:
    args = {"x": "y" * 3000}  # about 1,500 pieces of 2 characters
    server.enqueue(tool_calls([call("a", args)], chunk_size=2), text("done"))
    events = Timed()
    result = run(client, events)
    assert result.status == "done"
    cid = result.tool_records[0]["call_id"] if result.tool_records else events.of(
        "tool_called")[0][1].call_id
    deltas = events.of("tool_args_delta", cid)
    assert "".join(e.delta for _, e in deltas) == json.dumps(args)
    assert deltas[0][1].delta == json.dumps(args)[:2]  # the first piece is shown at once
    assert len(deltas) < 1500 // 10
    # The promise, whatever the machine's load: pieces of one call are relayed ARGS_EVERY
    # apart, except the last (the rest, relayed when the response ended).
    gaps = [b - a for (a, _), (b, _) in zip(deltas[:-2], deltas[1:-1], strict=True)]
    assert all(g >= ARGS_EVERY * 0.99 for g in gaps), gaps


def test_a_slow_stream_is_relayed_piece_by_piece(server: ScriptedOpenAI,
                                                  client: OpenAIClient) -> None:
    server.enqueue(tool_calls([call("a", {"k": 1})], chunk_size=3, delay=0.2), text("done"))
    events = Timed()
    run(client, events)
    deltas = [e.delta for _, e in events.of("tool_args_delta")]
    assert deltas == ['{"k', '": ', '1}']  # each piece came long after the last: shown at once


def test_held_pieces_come_before_whatever_follows_them(server: ScriptedOpenAI,
                                                        client: OpenAIClient) -> None:
    """Two calls in one response, streamed fast: the first call's held pieces are relayed
    before the second call is announced, and each call's pieces before its tool runs."""
    a, b = {"x": "1" * 400}, {"y": "2" * 400}
    server.enqueue(tool_calls([call("a", a), call("b", b)], chunk_size=2), text("done"))
    events = Timed()
    run(client, events)
    order = [(e.type, getattr(e, "call_id", None)) for _, e in events.items  # type: ignore[attr-defined]
             if e.type in ("tool_called", "tool_args_delta", "tool_started")]  # type: ignore[attr-defined]
    first, second = (e.call_id for _, e in events.of("tool_called"))
    assert order.index(("tool_called", second)) > max(
        i for i, o in enumerate(order) if o == ("tool_args_delta", first))
    started = order.index(("tool_started", first))
    assert all(i < started for i, o in enumerate(order) if o[0] == "tool_args_delta")
    for cid, args in ((first, a), (second, b)):
        assert "".join(e.delta for _, e in events.of("tool_args_delta", cid)) == json.dumps(args)


def test_a_stop_mid_arguments_still_shows_every_piece_that_arrived(
        server: ScriptedOpenAI, client: OpenAIClient) -> None:
    """The user stops the run while a call's arguments stream: the run ends ``aborted``
    without the half call, and the pieces held back when it stopped are relayed, not lost."""
    args = json.dumps({"x": "z" * 2000})
    server.enqueue(tool_calls([call("a", args)], chunk_size=2), text("never"))
    seen: list[str] = []
    checks = 0

    def aborted() -> bool:  # asked once per streamed piece: Stop lands 40 pieces after the first
        nonlocal checks
        checks += 1 if seen else 0
        return checks > 40

    events = Timed(lambda e: seen.append(e.delta) if e.type == "tool_args_delta" else None)
    result = run(client, events, is_aborted=aborted)
    assert result.status == "aborted"
    assert not any(m.get("tool_calls") for m in result.messages)
    assert "".join(seen) == args[:2 * 41]  # the first piece, then the 40 that came before Stop


def test_a_stop_as_the_response_ends_still_counts_the_response(
        server: ScriptedOpenAI, client: OpenAIClient) -> None:
    """Stop lands while the held arguments are relayed after the response ended: the run
    stops (its call does not run) and the request is still counted: its id and usage."""
    server.enqueue(tool_calls([call("a", {"x": "y" * 400})], chunk_size=2), text("never"))
    inside = [False]
    complete = client.complete

    def watched(req: Any, on_delta: Any = None) -> Any:
        inside[0] = True
        try:
            return complete(req, on_delta)
        finally:
            inside[0] = False

    client.complete = watched  # type: ignore[method-assign]
    ran: list[str] = []

    def on_event(e: BaseEvent) -> None:
        if e.type == "tool_args_delta" and not inside[0]:  # type: ignore[attr-defined]
            raise KeyboardInterrupt  # the release after the response: Stop lands there

    events = Timed(on_event)
    result = run_loop(client, [{"role": "user", "content": "go"}],
                      LoopConfig(model="gpt-4.1-mini", tools=TOOLS, max_rounds=3),
                      LoopHooks(run_tool=lambda c, s: ran.append(c.name) or ToolOutcome(output="ok")),
                      events)
    assert result.status == "aborted" and not ran
    assert len(result.request_ids) == 1 and len(events.of("usage")) == 1
    assert len(server.requests) == 1
