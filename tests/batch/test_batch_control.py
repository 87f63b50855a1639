"""Keeping a batch in hand: one shared back-off on 429/5xx, cost and item limits, and a stop
that lets running items finish or aborts them."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from jupyter_agent import batch
from jupyter_agent.session import default_store
from tests.batch.conftest import classifier, user_texts
from tests.fakes.openai_server import ScriptedOpenAI, call, error, hang, text, tool_calls

ITEMS = [f"ticket {n} about an invoice" for n in range(80)]


def _first_refused(srv: ScriptedOpenAI, turn: Any) -> dict[str, Any]:
    """The first request gets ``turn``; every other one is classified. Returns a box holding
    the refused request's arrival time and content."""
    classify = classifier()
    box: dict[str, Any] = {}
    lock = threading.Lock()

    def answer(body: dict[str, Any]) -> Any:
        with lock:
            if "t" not in box:
                box["t"] = time.monotonic()
                box["content"] = body["messages"][-1]["content"]
                return turn
        return classify.pick(body)

    srv.default = answer
    return box


def test_a_429_with_retry_after_pauses_every_worker(srv: ScriptedOpenAI) -> None:
    srv.latency = 0.05  # other requests are in flight when the 429 lands
    box = _first_refused(srv, error(429, "slow down", retry_after=1.0))
    res = batch("Classify: {item}", ITEMS[:40], kind="chat", concurrency=8)

    assert list(res.results["status"]) == ["done"] * 40  # the refused item was retried
    t0 = box["t"]
    # The 429 reached the client about 0.05 s after its request arrived: from then on for
    # one second, no worker may ask (those already on the wire were answered normally).
    # (The window starts late enough for a request already being sent to have arrived, even
    # on a loaded machine.)
    during = [t - t0 for t in srv.request_times if t0 + 0.35 < t < t0 + 0.95]
    assert during == []
    # Without the shared pause, 8 workers at 0.05 s a request would have sent ~100 here.
    retry = [t for t, u in zip(srv.request_times, user_texts(srv))
             if u == box["content"] and t > t0]
    assert len(retry) == 1 and retry[0] - t0 >= 1.0  # Retry-After honoured
    assert len(srv.requests) == 41


def test_a_503_backs_off_globally_too(srv: ScriptedOpenAI) -> None:
    srv.latency = 0.05
    box = _first_refused(srv, error(503, "overloaded"))  # no Retry-After: the client's backoff
    res = batch("Classify: {item}", ITEMS, kind="chat", concurrency=8)
    assert list(res.results["status"]) == ["done"] * 80
    t0 = box["t"]
    # The first backoff is 0.5 s with ±25% jitter: at least 0.375 s of silence once the 503
    # reached the client. On a loaded machine it may reach it late, so a worker can still send
    # the one request it was about to send: at most one a worker (8) in the window, where
    # 8 workers at 0.05 s a request would send about 40 without the shared backoff.
    assert len([t for t in srv.request_times if t0 + 0.15 < t < t0 + 0.4]) <= 8


def test_max_cost_stops_starting_items(srv: ScriptedOpenAI) -> None:
    # gpt-4.1-mini: 0.4 per million input tokens, so each answer costs 0.4.
    srv.default = text("billing", usage={"prompt_tokens": 1_000_000, "completion_tokens": 0})
    res = batch("Classify: {item}", ITEMS[:20], kind="chat", concurrency=1, max_cost=1.0,
                model="gpt-4.1-mini")
    out = res.results
    assert list(out["status"]) == ["done"] * 3 + ["skipped"] * 17
    assert len(srv.requests) == 3
    assert res.status == "stopped" and "cost" in res.stop_reason
    assert out["cost"].sum() == pytest.approx(1.2)
    assert out["run_id"][3:].isna().all()


def test_max_cost_with_concurrency_lets_running_items_finish(srv: ScriptedOpenAI) -> None:
    srv.default = hang(0.1, then=text("billing", usage={"prompt_tokens": 1_000_000,
                                                        "completion_tokens": 0}))
    res = batch("Classify: {item}", ITEMS[:40], kind="chat", concurrency=4, max_cost=1.0,
                model="gpt-4.1-mini")
    done = int((res.results["status"] == "done").sum())
    # Three answers reach the limit; at most the three others then running also finish.
    assert 3 <= done <= 6 and len(srv.requests) == done
    assert (res.results["status"] == "skipped").sum() == 40 - done


def test_max_items_and_a_rerun_continues_with_the_next(srv: ScriptedOpenAI) -> None:
    res = batch("Classify: {item}", ITEMS[:12], kind="chat", concurrency=3, max_items=5)
    assert list(res.results["status"]) == ["done"] * 5 + ["skipped"] * 7
    assert len(srv.requests) == 5 and "item limit" in res.stop_reason
    res = batch("Classify: {item}", ITEMS[:12], kind="chat", concurrency=3, max_items=5)
    assert list(res.results["status"]) == ["done"] * 10 + ["skipped"] * 2
    assert len(srv.requests) == 10 and res.view["reused"] == 5
    # The same ten prompts, each asked once.
    assert sorted(user_texts(srv)) == sorted(f"Classify: {t}" for t in ITEMS[:10])


def test_stop_finish_lets_running_items_end_and_starts_no_more(srv: ScriptedOpenAI) -> None:
    srv.default = hang(0.6, then=text("billing"))
    run = batch("Classify: {item}", ITEMS[:20], kind="chat", concurrency=4, wait=False)
    _wait_for(lambda: len(srv.requests) == 4)
    run.stop("finish")
    run.stop("finish")  # a second click changes nothing
    res = run.wait(30)
    out = res.results
    assert list(out["status"]) == ["done"] * 4 + ["skipped"] * 16
    assert list(out["answer"][:4]) == ["billing"] * 4
    assert len(srv.requests) == 4 and res.status == "stopped"


def test_stop_abort_ends_running_items_at_their_next_round(srv: ScriptedOpenAI) -> None:
    def answer(body: dict[str, Any]) -> Any:
        if body["messages"][-1]["role"] == "tool":
            return text("never asked")
        return hang(0.6, then=tool_calls([call("noop", {})]))

    def noop() -> str:
        """Nothing."""
        return "ok"

    srv.default = answer
    run = batch("Task {item}", list(range(10)), concurrency=4, tools=[noop], wait=False)
    _wait_for(lambda: len(srv.requests) == 4)
    run.stop("abort")
    res = run.wait(30)
    out = res.results
    assert list(out["status"]) == ["aborted"] * 4 + ["skipped"] * 6
    assert len(srv.requests) == 4  # no second round for anyone
    assert all(default_store().get_run(r).status == "aborted" for r in out["run_id"][:4])
    assert res.view["counts"]["failed"] == 4


def test_stop_now_closes_requests_in_flight_and_ends_at_once(srv: ScriptedOpenAI) -> None:
    """Issue 37: "Stop now" waited for the model calls in flight (3.95 s in the browser) and
    said they were "allowed to finish". A request the server holds 30 s is now closed: the
    batch ends within 2 s (generous: the cut itself takes milliseconds), the server sees the
    connection closed, the card says what was cut, and each item's history is whole."""
    srv.default = hang(30, then=text("too late"))
    run = batch("Classify: {item}", ITEMS[:6], kind="chat", concurrency=3, wait=False)
    _wait_for(lambda: len(srv.requests) == 3)
    t0 = time.monotonic()
    run.stop("abort")
    res = run.wait(10)
    took = time.monotonic() - t0
    assert took < 2.0, took
    _wait_for(lambda: len(srv.hung_up) == 3)  # every held request's connection was closed
    assert max(srv.hung_up) - t0 < 2.0
    out = res.results
    assert list(out["status"]) == ["aborted"] * 3 + ["skipped"] * 3
    assert res.status == "stopped"
    reason = res.view["stop_reason"]
    assert reason.startswith("Stopped now") and "3 model requests in flight closed" in reason
    assert "allowed to finish" not in reason
    for run_id in out["run_id"][:3]:  # no dangling call: nothing was called, nothing is open
        stored = default_store().get_run(run_id)
        assert stored.status == "aborted"
    # The client is usable again: the same batch re-runs and answers.
    srv.default = text("billing")
    again = batch("Classify: {item}", ITEMS[:6], kind="chat", concurrency=3, rerun=True)
    assert list(again.results["status"]) == ["done"] * 6


def test_stop_after_this_step_still_waits_and_says_so(srv: ScriptedOpenAI) -> None:
    srv.default = hang(0.5, then=text("billing"))
    run = batch("Classify: {item}", ITEMS[:4], kind="chat", concurrency=2, wait=False)
    _wait_for(lambda: len(srv.requests) == 2)
    run.stop("finish")
    res = run.wait(30)
    assert list(res.results["status"]) == ["done"] * 2 + ["skipped"] * 2
    assert res.view["stop_reason"].startswith("Stopped after this step")
    assert not srv.hung_up


def test_the_cards_stop_button_reaches_the_batch(srv: ScriptedOpenAI) -> None:
    """The widget's message, as the front end sends it, stops the batch (abort wins over a
    finish; an unknown mode is ignored)."""
    from jupyter_agent.batch import Controller
    from jupyter_agent.ui.batch_widget import BatchWidget

    srv.default = hang(0.5, then=text("billing"))
    ctl = Controller()
    widget = BatchWidget({"status": "running"}, on_stop=ctl.stop)

    def click(content: dict[str, Any]) -> None:
        widget._handle_msg({"content": {"data": {"method": "custom", "content": content}},
                           "buffers": []})

    run = batch("Classify: {item}", ITEMS[:12], kind="chat", concurrency=2, wait=False,
                controller=ctl)
    _wait_for(lambda: len(srv.requests) == 2)
    click({"type": "stop", "mode": "explode"})
    click({"type": "answer", "mode": "abort"})
    assert not ctl.stopping.is_set()
    click({"type": "stop", "mode": "finish"})
    click({"type": "stop", "mode": "finish"})
    res = run.wait(30)
    assert (res.results["status"] == "done").sum() == 2 and len(srv.requests) == 2
    widget.close()


def _wait_for(predicate: Any, timeout: float = 10.0) -> None:
    end = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.01)
