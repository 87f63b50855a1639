"""The loop kernel on the scripted server (docs/behaviour.md §2; scenarios §14.1–14.14)."""

from __future__ import annotations

import json
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from jupyter_agent.base.events import BaseEvent
from jupyter_agent.llm.client import OpenAIClient, RetryPolicy
from jupyter_agent.llm.types import Usage
from jupyter_agent.loop.hooks import (
    ContextFit,
    LoopHooks,
    RequestControl,
    StopDecision,
    ToolOutcome,
    UsageItem,
)
from jupyter_agent.loop.kernel import FINAL_ANSWER_PROMPT, LoopConfig, LoopResult, run_loop
from tests.fakes.openai_server import ScriptedOpenAI, call, empty, error, hang, text, tool_calls

pytestmark = pytest.mark.timeout(60)

USER = [{"role": "user", "content": "go"}]


def schema(*names: str) -> list[dict[str, Any]]:
    return [{"type": "function", "function": {"name": n, "description": n,
                                              "parameters": {"type": "object"}}}
            for n in names]


TOOLS = schema("noop", "a", "b", "rt1", "rt2", "rt3", "update_plan", "ask", "stop", "boom", "slow")
USAGE_1 = {"prompt_tokens": 100, "completion_tokens": 10}
USAGE_2 = {"prompt_tokens": 200, "completion_tokens": 20}


@pytest.fixture
def client(server: ScriptedOpenAI) -> OpenAIClient:
    return OpenAIClient("gpt-4.1-mini", api_key="sk-test", base_url=server.base_url,
                        retry=RetryPolicy(max_retries=2, base_delay=0.001, max_delay=0.002),
                        timeout=30)


class Events:
    """An ``emit`` that keeps every event (not a list: an empty list would be falsy)."""

    def __init__(self) -> None:
        self.items: list[BaseEvent] = []

    def __call__(self, event: BaseEvent) -> None:
        self.items.append(event)

    def types(self) -> list[str]:
        return [getattr(e, "type", "") for e in self.items]

    def of(self, kind: str) -> list[Any]:
        return [e for e in self.items if getattr(e, "type", "") == kind]


def ok_runner(call_: Any, snapshot: list[dict[str, Any]]) -> ToolOutcome:
    return ToolOutcome(output=f"{call_.name} ok")


def loop(client: OpenAIClient, *, hooks: LoopHooks | None = None, emit: Any = None,
         messages: list[dict[str, Any]] | None = None, **cfg: Any) -> LoopResult:
    cfg.setdefault("tools", TOOLS)
    hooks = hooks or LoopHooks(run_tool=ok_runner)
    return run_loop(client, messages or USER, LoopConfig(model="gpt-4.1-mini", **cfg), hooks,
                    emit)


def tool_choices(server: ScriptedOpenAI) -> list[Any]:
    return [r.get("tool_choice") for r in server.requests]


def assert_calls_answered(messages: list[dict[str, Any]]) -> None:
    """Every assistant tool-call message is followed by one tool message per call."""
    for i, m in enumerate(messages):
        if m.get("role") == "assistant" and m.get("tool_calls"):
            ids = [c["id"] for c in m["tool_calls"]]
            after = messages[i + 1:i + 1 + len(ids)]
            assert [t.get("role") for t in after] == ["tool"] * len(ids), messages
            assert [t["tool_call_id"] for t in after] == ids


# ---------------------------------------------------------------------------------- scenarios
def test_scenario_1_plain_answer(server: ScriptedOpenAI, client: OpenAIClient) -> None:
    server.enqueue(text("hi", finish_reason="end_turn", usage=USAGE_1))
    events = Events()
    result = loop(client, max_rounds=5, emit=events)
    assert len(server.requests) == 1
    assert result.status == "done"
    assert result.assistant_messages == [{"role": "assistant", "content": "hi"}]
    assert result.answer == "hi"
    assert result.finish_reason == "end_turn"  # the provider's, passed through
    assert [(u.module, u.usage.input_tokens) for u in result.usages] == [("agent_call", 100)]
    assert result.request_ids == ["chatcmpl-scripted-1"]
    assert events.types()[0] == "round_started"
    assert "".join(e.text for e in events.of("text_delta")) == "hi"
    assert len(events.of("usage")) == 1


def test_scenario_2_results_written_in_call_order(server: ScriptedOpenAI,
                                                  client: OpenAIClient) -> None:
    b_done = threading.Event()
    finished: list[str] = []

    def runner(c: Any, snapshot: list[dict[str, Any]]) -> ToolOutcome:
        if c.name == "a":
            assert b_done.wait(10), "A and B did not run at the same time"
        else:
            b_done.set()
        finished.append(c.name)
        return ToolOutcome(output=f"result {c.name}")

    server.enqueue(tool_calls([call("a", {}, id="call_A"), call("b", {}, id="call_B")]),
                   text("done"))
    result = loop(client, batch_size=2, hooks=LoopHooks(run_tool=runner))
    assert finished == ["b", "a"]  # B finished first...
    sent = server.requests[1]["messages"]
    assert sent[-3]["tool_calls"][0]["id"] == "call_A"
    assert sent[-2:] == [  # ...but the results are written in call order
        {"role": "tool", "tool_call_id": "call_A", "content": "result a"},
        {"role": "tool", "tool_call_id": "call_B", "content": "result b"}]
    assert result.status == "done" and result.answer == "done"


def test_scenario_3_unbatchable_calls_run_alone(server: ScriptedOpenAI,
                                                client: OpenAIClient) -> None:
    log: list[str] = []
    lock = threading.Lock()
    together = threading.Barrier(2, timeout=10)

    def runner(c: Any, snapshot: list[dict[str, Any]]) -> ToolOutcome:
        with lock:
            log.append(f"start {c.name}")
        if c.name in ("rt2", "rt3"):
            together.wait()  # raises BrokenBarrierError unless both run at once
        with lock:
            log.append(f"end {c.name}")
        return ToolOutcome(output="ok")

    server.enqueue(tool_calls([call(n, {}) for n in ("rt1", "update_plan", "rt2", "rt3")]),
                   text("done"))
    result = loop(client, batch_size=5, hooks=LoopHooks(
        run_tool=runner, can_batch=lambda c: c.name != "update_plan"))
    assert log[:4] == ["start rt1", "end rt1", "start update_plan", "end update_plan"]
    assert set(log[4:6]) == {"start rt2", "start rt3"}
    assert [t["content"] for t in result.messages if t["role"] == "tool"] == ["ok"] * 4


def test_scenario_4_raising_tool_is_reported_and_the_loop_goes_on(
        server: ScriptedOpenAI, client: OpenAIClient) -> None:
    def runner(c: Any, snapshot: list[dict[str, Any]]) -> ToolOutcome:
        raise RuntimeError("boom")

    server.enqueue(tool_calls([call("boom", {})], usage=USAGE_1), text("recovered", usage=USAGE_2))
    events = Events()
    result = loop(client, hooks=LoopHooks(run_tool=runner), emit=events)
    # One wording for a raising tool, whether the tool or the hook around it raised
    # (docs/behaviour.md §5.3 and §14.4): the exception type, then its message.
    assert server.requests[1]["messages"][-1]["content"] == "Tool error: RuntimeError: boom"
    assert result.status == "done" and result.answer == "recovered"
    assert events.of("tool_returned")[0].error == "Tool error: RuntimeError: boom"
    assert [u.module for u in result.usages] == ["agent_call", "agent_call"]  # none for the tool


def test_scenario_5_guard_forces_none_after_six_tool_turns(server: ScriptedOpenAI,
                                                           client: OpenAIClient) -> None:
    server.default = tool_calls([call("noop", {})])
    result = loop(client, max_rounds=8, final_answer_round=False)
    assert tool_choices(server) == ["auto"] * 6 + ["none"] * 2
    assert result.status == "max_rounds"


def test_scenario_6_request_control_replaces_the_guard(server: ScriptedOpenAI,
                                                       client: OpenAIClient) -> None:
    server.default = tool_calls([call("noop", {})])
    seen: list[int] = []

    def control(round_: int, snapshot: list[dict[str, Any]]) -> RequestControl:
        seen.append(round_)
        return RequestControl(tool_choice="auto")

    loop(client, max_rounds=8, final_answer_round=False,
         hooks=LoopHooks(run_tool=ok_runner, request_control=control))
    assert tool_choices(server) == ["auto"] * 8
    assert seen == list(range(1, 9))


def test_scenario_7_text_with_tool_calls_resets_the_guard(server: ScriptedOpenAI,
                                                          client: OpenAIClient) -> None:
    server.enqueue(*[tool_calls([call("noop", {})]) for _ in range(6)],
                   tool_calls([call("noop", {})], text="Still working on it."),
                   tool_calls([call("noop", {})]), text("done"))
    result = loop(client)
    assert tool_choices(server) == ["auto"] * 6 + ["none", "auto", "auto"]
    assert result.status == "done"


def test_scenario_8_max_rounds_then_one_final_answer_request(server: ScriptedOpenAI,
                                                             client: OpenAIClient) -> None:
    server.enqueue(*[tool_calls([call("noop", {})]) for _ in range(3)],
                   text("Here is what I found."))
    result = loop(client, max_rounds=3)
    assert len(server.requests) == 4
    assert tool_choices(server) == ["auto", "auto", "auto", "none"]
    final = server.requests[3]["messages"]
    assert final[-1] == {"role": "user", "content": FINAL_ANSWER_PROMPT}
    assert final[-2]["role"] == "tool"
    assert result.status == "max_rounds"
    assert result.error is None
    assert result.answer == "Here is what I found."
    assert result.rounds == 4
    assert_calls_answered(result.messages)


def test_scenario_8_final_round_that_still_calls_tools(server: ScriptedOpenAI,
                                                       client: OpenAIClient) -> None:
    server.default = tool_calls([call("noop", {})])
    result = loop(client, max_rounds=2)
    assert len(server.requests) == 3
    assert result.status == "max_rounds" and result.error is None and result.answer == ""
    assert_calls_answered(result.messages)
    assert result.messages[-1] == {"role": "user", "content": FINAL_ANSWER_PROMPT}


def test_scenario_8_as_the_reference_without_final_round(server: ScriptedOpenAI,
                                                         client: OpenAIClient) -> None:
    server.default = tool_calls([call("noop", {})])
    result = loop(client, max_rounds=3, final_answer_round=False)
    assert len(server.requests) == 3
    assert result.status == "max_rounds" and result.error is None
    assert result.messages[-1]["role"] == "tool"


def test_scenario_9_provider_error_stops_the_loop(server: ScriptedOpenAI,
                                                  client: OpenAIClient) -> None:
    server.enqueue(tool_calls([call("noop", {})], usage=USAGE_1),
                   error(400, "context_length_exceeded"), text("never"))
    result = loop(client)
    assert len(server.requests) == 2
    assert result.status == "error"
    assert result.error is not None and "context_length_exceeded" in result.error
    assert (result.input_tokens, result.output_tokens) == (100, 10)  # only the first call
    assert result.answer == ""
    assert_calls_answered(result.messages)


def test_scenario_10_empty_response_is_an_error_that_still_counts(
        server: ScriptedOpenAI, client: OpenAIClient) -> None:
    server.enqueue(empty(usage=USAGE_1))
    result = loop(client)
    assert result.status == "error"
    assert result.error == "The model returned an empty response."
    assert result.input_tokens == 100
    assert [u.module for u in result.usages] == ["agent_call"]


def test_scenario_11_stop_candidate_feedback_withdraws_the_draft(
        server: ScriptedOpenAI, client: OpenAIClient) -> None:
    decisions = iter([StopDecision(allow=False, feedback="F: check again", reason="unchecked"),
                      StopDecision(allow=True)])
    seen: list[str] = []

    def gate(ctx: Any) -> StopDecision:
        seen.append(ctx.answer_text)
        return next(decisions)

    server.enqueue(text("draft"), text("final"))
    events = Events()
    result = loop(client, tools=None, emit=events,
                  hooks=LoopHooks(on_stop_candidate=gate))
    assert seen == ["draft", "final"]
    assert result.assistant_messages == [{"role": "assistant", "content": "final"}]
    assert server.requests[1]["messages"][-2:] == [
        {"role": "assistant", "content": "draft"}, {"role": "user", "content": "F: check again"}]
    assert result.rounds == 2
    assert result.answer == "final"
    gate_events = events.of("stop_gate_feedback")
    assert [(e.round, e.reason, e.feedback) for e in gate_events] == [
        (1, "unchecked", "F: check again")]


def test_stop_candidate_error_and_incomplete(server: ScriptedOpenAI, client: OpenAIClient) -> None:
    server.enqueue(text("draft 1"), text("draft 2"))
    failed = loop(client, hooks=LoopHooks(
        on_stop_candidate=lambda ctx: StopDecision(allow=False, error="not allowed")))
    assert (failed.status, failed.error) == ("error", "not allowed")
    given_up = loop(client, hooks=LoopHooks(
        on_stop_candidate=lambda ctx: StopDecision(allow=False, status="incomplete",
                                                   reason="2 steps open")))
    assert (given_up.status, given_up.answer, given_up.error) == ("incomplete", "draft 2",
                                                                  "2 steps open")


def test_scenario_12_stop_signal_ends_after_the_round(server: ScriptedOpenAI,
                                                      client: OpenAIClient) -> None:
    ran: list[str] = []

    def runner(c: Any, snapshot: list[dict[str, Any]]) -> ToolOutcome:
        ran.append(c.name)
        return ToolOutcome(output=f"{c.name} done", stop=c.name == "stop")

    server.enqueue(tool_calls([call("stop", {}, id="c1"), call("noop", {}, id="c2")]),
                   text("never"))
    result = loop(client, hooks=LoopHooks(run_tool=runner))
    assert len(server.requests) == 1
    assert ran == ["stop", "noop"]  # the call after the stop still runs
    assert [(m["tool_call_id"], m["content"]) for m in result.messages if m["role"] == "tool"] == [
        ("c1", "stop done"), ("c2", "noop done")]
    assert result.status == "done"


def test_scenarios_13_14_the_last_interactive_call_wins(server: ScriptedOpenAI,
                                                        client: OpenAIClient) -> None:
    ran: list[str] = []

    def runner(c: Any, snapshot: list[dict[str, Any]]) -> ToolOutcome:
        ran.append(c.id)
        if c.name == "ask":
            q = json.loads(c.arguments)["q"]
            return ToolOutcome(output="Waiting for user answer.", interactive={"question": q})
        return ToolOutcome(output="ok")

    server.enqueue(tool_calls([call("ask", {"q": "first?"}, id="ask1"), call("noop", {}, id="n"),
                               call("ask", {"q": "second?"}, id="ask2")]), text("never"))
    result = loop(client, hooks=LoopHooks(run_tool=runner))
    assert result.status == "ask"
    assert ran == ["ask1", "n", "ask2"]
    assert result.interactive == {"question": "second?"}
    assert result.interactive_call_id == "ask2"
    assert len(server.requests) == 1
    assert_calls_answered(result.messages)


# ------------------------------------------------------------------- §2.10, §5.3 extras
def test_unknown_tool_without_a_runner(server: ScriptedOpenAI, client: OpenAIClient) -> None:
    server.enqueue(tool_calls([call("ghost", {})]), text("ok"))
    result = run_loop(client, USER, LoopConfig(model="m", tools=TOOLS))
    assert server.requests[1]["messages"][-1]["content"] == (
        'Unknown tool "ghost". Available tools: none')
    assert result.status == "done"


def test_snapshot_excludes_this_rounds_assistant_message(server: ScriptedOpenAI,
                                                         client: OpenAIClient) -> None:
    snapshots: list[list[dict[str, Any]]] = []

    def runner(c: Any, snapshot: list[dict[str, Any]]) -> ToolOutcome:
        snapshots.append(list(snapshot))
        return ToolOutcome(output="ok")

    server.enqueue(tool_calls([call("a", {}), call("b", {})]), text("done"))
    loop(client, hooks=LoopHooks(run_tool=runner))
    assert snapshots[0] == USER and snapshots[1] == USER


def test_startup_keeps_only_id_type_function_on_calls(server: ScriptedOpenAI,
                                                      client: OpenAIClient) -> None:
    history = [{"role": "user", "content": "q"},
               {"role": "assistant", "content": "", "tool_calls": [
                   {"id": "c0", "type": "function", "index": 0, "extra": "x",
                    "function": {"name": "noop", "arguments": "{}"}}]},
               {"role": "tool", "tool_call_id": "c0", "content": "ok"},
               {"role": "user", "content": "again"}]
    server.enqueue(text("fine"))
    loop(client, messages=history)
    assert server.requests[0]["messages"][1]["tool_calls"] == [
        {"id": "c0", "type": "function", "function": {"name": "noop", "arguments": "{}"}}]
    assert "extra" in history[1]["tool_calls"][0]  # the caller's list is not modified


def test_tool_output_processing_and_its_usage(server: ScriptedOpenAI, client: OpenAIClient) -> None:
    def shrink(out: str) -> tuple[str, list[UsageItem]]:
        return out[:5], [UsageItem("tool_response_compress", "m", Usage(input_tokens=7), 0.5)]

    def runner(c: Any, snapshot: list[dict[str, Any]]) -> ToolOutcome:
        return ToolOutcome(output="0123456789", skip_compress=c.name == "b")

    server.enqueue(tool_calls([call("a", {}), call("b", {})], usage=USAGE_1), text("ok"))
    result = loop(client, hooks=LoopHooks(run_tool=runner, process_tool_output=shrink))
    assert [m["content"] for m in result.messages if m["role"] == "tool"] == ["01234",
                                                                             "0123456789"]
    assert [u.module for u in result.usages] == ["agent_call", "tool_response_compress",
                                                 "agent_call"]
    assert result.cost == pytest.approx(sum(u.cost for u in result.usages))


def test_fit_context_replaces_the_messages(server: ScriptedOpenAI, client: OpenAIClient) -> None:
    def fit(round_: int, messages: list[dict[str, Any]], tokens: int) -> ContextFit | None:
        if round_ == 1:
            return ContextFit(messages=messages[-1:], tokens=5)
        return None

    server.enqueue(text("ok"))
    events = Events()
    history = [{"role": "user", "content": "old"}, {"role": "assistant", "content": "old a"}] + USER
    loop(client, messages=history, emit=events, hooks=LoopHooks(fit_context=fit))
    assert server.requests[0]["messages"] == USER
    (compressed,) = events.of("context_compressed")
    assert (compressed.method, compressed.tokens_after) == ("truncate", 5)
    assert compressed.tokens_before > 5


def test_provider_ids_reach_events_and_history(server: ScriptedOpenAI,
                                               client: OpenAIClient) -> None:
    server.enqueue(tool_calls([call("a", {"x": 1}, id="call_prov_1")]), text("ok"))
    events = Events()
    result = loop(client, emit=events)
    assert [e.call_id for e in events.of("tool_called")] == ["call_prov_1"]
    assert [e.call_id for e in events.of("tool_returned")] == ["call_prov_1"]
    assert result.messages[-2]["tool_call_id"] == "call_prov_1"
    assert result.tool_records[0]["arguments"] == '{"x": 1}'


# ------------------------------------------------------------------------------ aborts
@contextmanager
def interrupt_main_after(seconds: float, once: threading.Event | None = None) -> Iterator[None]:
    """Deliver SIGINT to the main thread ``seconds`` after the block starts (or after ``once``
    is set), as a kernel interrupt does.

    (A thread with ``pthread_kill``: ``setitimer`` would clobber pytest-timeout's alarm.)
    Waiting for ``once`` keeps a loaded machine from sending the interrupt before the moment
    the test is about; an interrupt that lands inside a finalizer is swallowed by Python.
    """
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    main = threading.main_thread().ident
    assert main is not None
    cancelled = threading.Event()

    def fire() -> None:
        while once is not None and not once.wait(0.05):  # never set by us: tests assert on it
            if cancelled.is_set():
                return
        if not cancelled.wait(seconds):
            signal.pthread_kill(main, signal.SIGINT)

    timer = threading.Thread(target=fire, daemon=True)
    timer.start()
    try:
        yield
    finally:
        cancelled.set()
        timer.join()
        signal.signal(signal.SIGINT, previous)


def _next_run_works(server: ScriptedOpenAI, client: OpenAIClient, result: LoopResult) -> None:
    server.reset()
    server.enqueue(text("back to normal"))
    again = loop(client, messages=result.messages + [{"role": "user", "content": "next"}])
    assert again.status == "done" and again.answer == "back to normal"
    assert_calls_answered(server.requests[0]["messages"])


def test_abort_in_a_tool(server: ScriptedOpenAI, client: OpenAIClient) -> None:
    def runner(c: Any, snapshot: list[dict[str, Any]]) -> ToolOutcome:
        if c.name == "slow":
            raise KeyboardInterrupt
        return ToolOutcome(output="ok")

    server.enqueue(tool_calls([call("a", {}, id="c1"), call("slow", {}, id="c2"),
                               call("b", {}, id="c3")]), text("never"))
    result = loop(client, hooks=LoopHooks(run_tool=runner))
    assert result.status == "aborted"
    assert len(server.requests) == 1
    assert_calls_answered(result.messages)
    assert [m["content"] for m in result.messages if m["role"] == "tool"] == [
        "ok", "Tool error: interrupted by the user before it finished.",
        "Tool error: interrupted by the user before it finished."]
    _next_run_works(server, client, result)


def test_abort_in_a_parallel_batch(server: ScriptedOpenAI, client: OpenAIClient) -> None:
    def runner(c: Any, snapshot: list[dict[str, Any]]) -> ToolOutcome:
        if c.name == "b":
            raise KeyboardInterrupt
        return ToolOutcome(output="ok")

    server.enqueue(tool_calls([call("a", {}), call("b", {})]), text("never"))
    result = loop(client, batch_size=5, hooks=LoopHooks(run_tool=runner))
    assert result.status == "aborted"
    assert_calls_answered(result.messages)
    _next_run_works(server, client, result)


def test_real_interrupt_in_a_tool(server: ScriptedOpenAI, client: OpenAIClient) -> None:
    started = threading.Event()

    def runner(c: Any, snapshot: list[dict[str, Any]]) -> ToolOutcome:
        started.set()
        threading.Event().wait(20)  # blocks until the interrupt arrives
        return ToolOutcome(output="finished")

    server.enqueue(tool_calls([call("slow", {})]), text("never"))
    with interrupt_main_after(0.1, once=started):
        result = loop(client, hooks=LoopHooks(run_tool=runner))
    assert started.is_set()
    assert result.status == "aborted"
    assert_calls_answered(result.messages)
    _next_run_works(server, client, result)


def test_real_interrupt_while_waiting_for_the_model(server: ScriptedOpenAI,
                                                    client: OpenAIClient) -> None:
    server.enqueue(hang(20))
    with interrupt_main_after(0.3):
        result = loop(client)
    assert result.status == "aborted"
    assert result.messages == USER
    assert result.assistant_messages == []
    _next_run_works(server, client, result)


def test_real_interrupt_while_streaming(server: ScriptedOpenAI, client: OpenAIClient) -> None:
    server.enqueue(text("word " * 400, chunk_size=5, delay=0.05))
    events = Events()
    sent: list[bool] = []

    def emit(e: BaseEvent) -> None:
        events(e)
        if e.type == "text_delta" and not sent:  # type: ignore[attr-defined]
            sent.append(True)
            main = threading.main_thread().ident
            threading.Timer(0.2, signal.pthread_kill, (main, signal.SIGINT)).start()

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        result = loop(client, emit=emit)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert result.status == "aborted"
    assert result.finish_reason == "close"
    partial = "".join(e.text for e in events.of("text_delta"))
    assert partial and partial.startswith("word") and len(partial) < 2000
    assert result.messages[-1] == {"role": "assistant", "content": partial}
    assert len(events.of("usage")) == 1  # the cut call is still counted (estimated)
    _next_run_works(server, client, result)


def test_interrupt_while_streaming_tool_calls_keeps_no_half_call(
        server: ScriptedOpenAI, client: OpenAIClient) -> None:
    server.enqueue(tool_calls([call("a", {"x": "y" * 200})], chunk_size=2))

    def emit(e: BaseEvent) -> None:
        if e.type == "tool_args_delta":  # type: ignore[attr-defined]
            raise KeyboardInterrupt

    result = loop(client, emit=emit)
    assert result.status == "aborted"
    assert result.messages == USER
    _next_run_works(server, client, result)


def test_second_interrupt_while_writing_results_back(server: ScriptedOpenAI,
                                                     client: OpenAIClient) -> None:
    def runner(c: Any, snapshot: list[dict[str, Any]]) -> ToolOutcome:
        return ToolOutcome(output="ok", usages=[UsageItem("helper", "m", Usage(), 0.0)])

    def emit(e: BaseEvent) -> None:
        if e.type == "usage" and e.module == "helper":  # type: ignore[attr-defined]
            raise KeyboardInterrupt

    server.enqueue(tool_calls([call("a", {}), call("b", {})]), text("never"))
    result = loop(client, emit=emit, hooks=LoopHooks(run_tool=runner))
    assert result.status == "aborted"
    assert_calls_answered(result.messages)
    _next_run_works(server, client, result)


def test_an_ask_wins_over_an_abort(server: ScriptedOpenAI, client: OpenAIClient) -> None:
    def runner(c: Any, snapshot: list[dict[str, Any]]) -> ToolOutcome:
        if c.name == "ask":
            return ToolOutcome(output="Waiting for user answer.", interactive={"q": "?"})
        raise KeyboardInterrupt

    server.enqueue(tool_calls([call("ask", {}, id="ask1"), call("slow", {})]))
    result = loop(client, hooks=LoopHooks(run_tool=runner))
    assert result.status == "ask"
    assert result.interactive_call_id == "ask1"
    assert_calls_answered(result.messages)


def test_is_aborted_is_polled_between_rounds(server: ScriptedOpenAI, client: OpenAIClient) -> None:
    flag: list[bool] = []

    def runner(c: Any, snapshot: list[dict[str, Any]]) -> ToolOutcome:
        flag.append(True)  # the user pressed stop while the tool ran
        return ToolOutcome(output="ok")

    server.enqueue(tool_calls([call("a", {})]), text("never"))
    result = loop(client, hooks=LoopHooks(run_tool=runner, is_aborted=lambda: bool(flag)))
    assert result.status == "aborted"
    assert len(server.requests) == 1
    assert_calls_answered(result.messages)
