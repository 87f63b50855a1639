"""A batch's threads: the worker threads, and nothing started per item or per request.

A thread start per model request (a deadline timer) or per tool call (the thread a tool runs in
so that it can be abandoned) cost each start a wait for the interpreter lock among 32 busy
workers: measurably slower than a plain thread pool (bench/bench_batch.py). Reused threads must
not change what the deadlines guarantee: a tool that hangs is still abandoned on time, and the
exception that ends it never lands in another item's call.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from jupyter_agent import batch, tool
from tests.fakes.openai_server import ScriptedOpenAI, call, match, rule, text, tool_calls

ITEMS = 24
CONCURRENCY = 4


def _echo_script() -> Any:
    """Round 1: call ``lookup`` with the item's number; round 2: answer with the tool result."""
    def answer(body: dict[str, Any]) -> Any:
        last = body["messages"][-1]
        if last["role"] == "tool":
            return text(f"result {last['content']}")
        n = last["content"].rsplit(" ", 1)[-1]
        return tool_calls([call("lookup", {"n": int(n)})])
    return answer


def test_no_thread_is_started_per_item_or_per_request(server: ScriptedOpenAI) -> None:
    runners: list[threading.Thread] = []  # kept: a dead thread's object is never reused
    timers: list[int] = []

    @tool
    def lookup(n: int) -> str:
        """The status of order n."""
        me = threading.current_thread()
        if all(me is not t for t in runners):
            runners.append(me)
        timers.append(sum(isinstance(t, threading.Timer) and t not in before
                          for t in threading.enumerate()))
        return f"order {n} paid"

    server.default = _echo_script()
    before = set(threading.enumerate())  # e.g. pytest-timeout's own timer
    res = batch("Look up order {item}", list(range(ITEMS)), tools=[lookup],
                concurrency=CONCURRENCY, rerun=True)
    answers = list(res.results["answer"])
    assert answers == [f"result order {n} paid" for n in range(ITEMS)]  # each item its own
    assert len(server.requests) == 2 * ITEMS
    # Tool calls ran on at most one reused thread per worker, not one new thread per item.
    assert 1 <= len(runners) <= CONCURRENCY, [t.name for t in runners]
    # The requests in flight meanwhile had no timer thread each: one shared alarm thread.
    assert max(timers) == 0
    watchdogs = [t for t in threading.enumerate() if t.name == "jupyter-agent-watchdog"]
    assert len(watchdogs) <= 1


def test_a_hung_tool_is_abandoned_and_the_other_items_keep_their_own_results(
        server: ScriptedOpenAI) -> None:
    release = threading.Event()

    @tool(timeout=0.5)
    def lookup(n: int) -> str:
        """The status of order n (order 0 hangs)."""
        if n == 0:
            release.wait(30)  # a blocking wait: the abandon lands when it returns
            return "late"
        return f"order {n} paid"

    server.default = _echo_script()
    try:
        res = batch("Look up order {item}", list(range(ITEMS)), tools=[lookup],
                    concurrency=CONCURRENCY, rerun=True)
        answers = list(res.results["answer"])
    finally:
        release.set()
    assert res.results["status"].tolist() == ["done"] * ITEMS
    assert "timed out after 0.5 s" in answers[0] and "late" not in answers[0]
    assert answers[1:] == [f"result order {n} paid" for n in range(1, ITEMS)]
    # The abandoned call's thread ends once the tool returns (the exception raised into it
    # ends that call only); it never took another item's call.
    end = time.monotonic() + 10
    while any(t.name == "jupyter-agent-tool-lookup" and t.is_alive() and _hung(t)
              for t in threading.enumerate()) and time.monotonic() < end:
        time.sleep(0.05)
    again = batch("Look up order {item}", list(range(1, 9)), tools=[lookup],
                  concurrency=CONCURRENCY, rerun=True)
    assert list(again.results["answer"]) == [f"result order {n} paid" for n in range(1, 9)]


def _hung(thread: threading.Thread) -> bool:
    import sys

    frame = sys._current_frames().get(thread.ident or -1)
    while frame is not None:
        if frame.f_code.co_name == "lookup":
            return True
        frame = frame.f_back
    return False


def test_many_cancelled_deadlines_do_not_pile_up(server: ScriptedOpenAI) -> None:
    from jupyter_agent.llm import _sse

    server.default = match(rule(text("ok"), contains="x"), otherwise=text("ok"))
    batch("Say x {item}", list(range(200)), kind="chat", concurrency=8, rerun=True)
    alarms = _sse._ALARMS
    # Every request's alarm was cancelled when its answer came: none is pending, and the heap
    # of cancelled ones was rebuilt instead of growing with every request.
    assert not alarms._live
    assert len(alarms._heap) <= 64 + 8
