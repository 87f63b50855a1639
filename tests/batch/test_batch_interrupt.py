"""Kernel interrupts stop a blocking batch: the batch card's stop buttons, during a
``%%toolloop --over`` cell, reach the kernel only as interrupts (the widget message waits for
the cell to end), and the JupyterLab extension sends one for "finish", two for "abort". Here
SIGINT is sent to the main thread while ``batch(...)`` blocks it, as the kernel's interrupt
does."""

from __future__ import annotations

import signal
import threading
import time
from typing import Any

import pytest

from jupyter_agent import batch
from jupyter_agent.session import default_store
from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls

ITEMS = [f"ticket {n} about an invoice" for n in range(20)]


def _interrupt_when(srv: ScriptedOpenAI, in_flight: int, times: int,
                    released: threading.Event) -> threading.Thread:
    """Once ``in_flight`` requests arrived, SIGINT the main thread ``times`` times, 0.3 s
    apart (the extension's gap), then set ``released``: the model's answers wait for it, so
    on a slow machine no item can end before its stop arrives."""
    main = threading.main_thread().ident
    assert main is not None

    def fire() -> None:
        try:
            end = time.monotonic() + 10
            while len(srv.requests) < in_flight and time.monotonic() < end:
                time.sleep(0.01)
            time.sleep(0.1)  # the coordinator is back waiting on its pool
            for n in range(times):
                if n:
                    time.sleep(0.3)
                signal.pthread_kill(main, signal.SIGINT)
            time.sleep(0.3)  # the main thread handles the signal before any answer
        finally:
            released.set()

    t = threading.Thread(target=fire, daemon=True)
    t.start()
    return t


def _after(released: threading.Event, turn: Any) -> Any:
    """A model turn sent only once ``released`` is set (at most 10 s later)."""
    def held(_body: dict[str, Any]) -> Any:
        released.wait(10)
        return turn
    return held


def _blocking_batch(*args: Any, **kwargs: Any) -> Any:
    """``batch(...)`` on the main thread; an interrupt escaping it fails the test (and does not
    end the pytest session)."""
    try:
        return batch(*args, **kwargs)
    except KeyboardInterrupt:
        pytest.fail("the interrupt escaped the batch")


def test_one_interrupt_lets_running_items_finish_and_starts_no_more(
        srv: ScriptedOpenAI) -> None:
    released = threading.Event()
    srv.default = _after(released, text("billing"))
    fire = _interrupt_when(srv, 4, times=1, released=released)
    res = _blocking_batch("Classify: {item}", ITEMS, kind="chat", concurrency=4)
    fire.join(5)
    out = res.results
    assert list(out["status"]) == ["done"] * 4 + ["skipped"] * 16
    assert list(out["answer"][:4]) == ["billing"] * 4  # the running items got their answers
    assert len(srv.requests) == 4  # nothing new started after the interrupt
    assert res.status == "stopped" and "allowed to finish" in res.stop_reason
    assert all(default_store().get_run(r).status == "done" for r in out["run_id"][:4])
    assert out["run_id"][4:].isna().all()


def test_two_interrupts_abort_running_items(srv: ScriptedOpenAI) -> None:
    released = threading.Event()

    def answer(body: dict[str, Any]) -> Any:
        if body["messages"][-1]["role"] == "tool":
            return text("never asked")
        return _after(released, tool_calls([call("noop", {})]))

    def noop() -> str:
        """Nothing."""
        return "ok"

    srv.default = answer
    fire = _interrupt_when(srv, 4, times=2, released=released)
    res = _blocking_batch("Task {item}", list(range(10)), concurrency=4, tools=[noop])
    fire.join(5)
    out = res.results
    assert list(out["status"]) == ["aborted"] * 4 + ["skipped"] * 6
    assert len(srv.requests) == 4  # no second round for anyone, no new item
    assert res.status == "stopped" and "aborted" in res.stop_reason
    assert all(default_store().get_run(r).status == "aborted" for r in out["run_id"][:4])


def test_a_late_stop_message_for_an_ended_batch_changes_nothing(srv: ScriptedOpenAI) -> None:
    """The card sends its widget message as well as the interrupts; the kernel reads it when
    the cell has ended, after the batch stopped (or finished): it must change nothing."""
    from jupyter_agent.batch import Controller
    from jupyter_agent.ui.batch_widget import BatchWidget

    released = threading.Event()
    srv.default = _after(released, text("billing"))
    ctl = Controller()
    widget = BatchWidget({"status": "running"}, on_stop=ctl.stop)
    fire = _interrupt_when(srv, 2, times=1, released=released)
    res = _blocking_batch("Classify: {item}", ITEMS[:8], kind="chat", concurrency=2,
                          controller=ctl)
    fire.join(5)
    before = res.results.copy()
    reason = res.stop_reason
    for mode in ("finish", "abort"):  # what the two buttons sent, arriving late
        widget._handle_msg({"content": {"data": {"method": "custom",
                                                 "content": {"type": "stop", "mode": mode}}},
                            "buffers": []})
    time.sleep(0.2)
    assert res.results.equals(before) and res.stop_reason == reason
    assert list(before["status"]) == ["done"] * 2 + ["skipped"] * 6
    assert all(default_store().get_run(r).status == "done" for r in before["run_id"][:2])
    assert len(srv.requests) == 2
    # A new batch over the same items is not stopped by the old card's late message.
    res2 = _blocking_batch("Classify: {item}", ITEMS[:8], kind="chat", concurrency=2)
    assert list(res2.results["status"]) == ["done"] * 8 and res2.status == "done"
    widget.close()
