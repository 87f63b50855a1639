"""Cards that never lie: the stop button, queued vs running calls, interrupted calls' time,
unknown counts and prices (the Python side of what the card shows)."""

from __future__ import annotations

import threading
import time
from typing import Any, Callable

import pytest
from IPython import get_ipython
from IPython.testing.globalipapp import start_ipython
from IPython.utils.capture import capture_output

from jupyter_agent import tool, toolloop
from jupyter_agent.agents.run import last_run
from jupyter_agent.ui.live import LiveDisplay
from jupyter_agent.view.bundle import render_markdown, render_plain
from tests.fakes.openai_server import ScriptedOpenAI, call, hang, text, tool_calls

# Generous: the machine is shared and noisy; an abort that waited for the tool or the server
# would take 30 s.
STOP_BOUND = 10.0


@pytest.fixture(scope="module")
def ipython() -> Any:
    return start_ipython() or get_ipython()


def _with_display(holder: dict[str, Any]) -> Callable[[Any], None]:
    """A listener that opens the run's live widget display on run_started, like the magics."""

    def listener(event: Any) -> None:
        if event.type == "run_started":
            holder["live"] = LiveDisplay(last_run(), widgets=True)
        elif "live" in holder:
            holder["live"].on_event(event)

    return listener


def _click_stop_later(holder: dict[str, Any], after: float, run_id: Callable[[], str]) -> dict[str, float]:
    """Send the widget's stop message from another thread (as a comm handler would)
    ``after`` seconds into the run; returns when it was sent."""
    sent: dict[str, float] = {}

    def send() -> None:
        deadline = time.monotonic() + 60
        while "live" not in holder and time.monotonic() < deadline:  # the run has started
            time.sleep(0.05)
        time.sleep(after)
        widget = holder["live"].widget
        sent["t"] = time.monotonic()
        widget._on_custom_msg(widget, {"type": "stop", "run_id": run_id()}, [])

    threading.Thread(target=send, daemon=True).start()
    return sent


def test_stop_during_a_running_tool_ends_the_run_at_once_and_keeps_the_calls_time(
        ipython: Any, server: ScriptedOpenAI) -> None:
    @tool
    def slow(n: int) -> str:
        """A slow step."""
        time.sleep(30)
        return "never"

    server.enqueue(tool_calls([call("slow", {"n": 1}, id="s1"), call("slow", {"n": 2}, id="s2")]))
    holder: dict[str, Any] = {}
    sent = _click_stop_later(holder, 1.0, lambda: holder["live"].run.run_id)
    with capture_output():
        run = toolloop("Go.", listeners=[_with_display(holder)])
    took = time.monotonic() - sent["t"]
    assert run.status == "aborted"
    assert took < STOP_BOUND, took
    assert len(server.requests) == 1  # no further model request after the stop
    cards = {i["call_id"]: i for i in run.view["items"] if i["kind"] == "tool"}
    # The first call ran about a second and says so; the second never started: 0 s.
    assert cards["s1"]["error"] == "interrupted" and cards["s1"]["seconds"] >= 0.5
    assert cards["s2"]["error"] == "interrupted" and cards["s2"]["seconds"] == 0
    assert cards["s2"]["started_at"] is None
    # Every call is answered in the history, so the session can go on.
    answered = {m["tool_call_id"] for m in run.messages if m.get("role") == "tool"}
    assert answered == {"s1", "s2"}
    server.enqueue(text("fine"))
    assert toolloop("Again.").answer == "fine"


def test_stop_during_a_silent_server_ends_the_run_at_once(ipython: Any,
                                                          server: ScriptedOpenAI) -> None:
    server.enqueue(hang(30))  # no byte for 30 s: no stream chunk ever checks the flag
    holder: dict[str, Any] = {}
    sent = _click_stop_later(holder, 1.0, lambda: holder["live"].run.run_id)
    with capture_output():
        run = toolloop("Go.", listeners=[_with_display(holder)])
    took = time.monotonic() - sent["t"]
    assert run.status == "aborted"
    assert took < STOP_BOUND, took
    assert run.view["status"] == "aborted"


def test_a_late_or_foreign_stop_changes_nothing(ipython: Any, server: ScriptedOpenAI) -> None:
    holder: dict[str, Any] = {}
    server.enqueue(text("first"))
    with capture_output():
        first = toolloop("One.", listeners=[_with_display(holder)])
    widget = holder["live"].widget
    # The stop arrives after the cell ended (a busy kernel reads it late): ignored, and no
    # stray interrupt hits whatever runs next.
    widget._on_custom_msg(widget, {"type": "stop", "run_id": first.run_id}, [])
    assert first.status == "done" and not first.abort_requested

    @tool
    def step() -> str:
        """One step."""
        # A stop naming another run, sent while this one works: this run goes on.
        widget._on_custom_msg(widget, {"type": "stop", "run_id": "run_other"}, [])
        widget._on_custom_msg(widget, {"type": "stop"}, [])  # malformed: no run id
        widget._on_custom_msg(widget, "stop", [])  # not even a dict
        return "ok"

    server.enqueue(tool_calls([call("step", {}, id="c1")]), text("second"))
    with capture_output():
        second = toolloop("Two.")
    assert second.status == "done" and second.answer == "second"


def test_a_call_is_queued_until_it_starts(server: ScriptedOpenAI) -> None:
    seen: list[dict[str, Any]] = []

    @tool
    def look(n: int) -> str:
        """Look."""
        view = last_run().view  # type: ignore[union-attr]
        seen.append({i["call_id"]: (i["state"], i["started_at"]) for i in view["items"]
                     if i["kind"] == "tool"})
        return f"saw {n}"

    server.enqueue(tool_calls([call("look", {"n": 1}, id="a"), call("look", {"n": 2}, id="b")]),
                   text("done"))
    before = time.time()
    run = toolloop("Look twice.")
    assert run.status == "done"
    first, second = seen
    assert first["a"][0] == "running" and first["a"][1] >= before
    assert first["b"] == ("queued", None)  # announced, not started: never shown running
    assert second["a"][0] == "done" and second["b"][0] == "running"
    assert [e.call_id for e in run.events if e.type == "tool_started"] == ["a", "b"]


def test_unknown_prices_and_counts_are_never_zero(server: ScriptedOpenAI) -> None:
    from jupyter_agent.view.reduce import new_view

    # Nothing accounted yet: unknown, in the view and in the text fallbacks.
    empty = new_view()
    assert empty["footer"]["input_tokens"] is None and empty["footer"]["cost"] is None
    assert "tokens unknown" in render_plain(empty) and "cost unknown" in render_markdown(empty)
    assert " 0 in" not in render_plain(empty) and "$0.0000" not in render_plain(empty)

    # A model without prices: tokens known, cost unknown (not $0).
    server.enqueue(text("hello"))
    run = toolloop("Hi.", model="some-unpriced-model")
    f = run.view["footer"]
    assert f["input_tokens"] > 0 and f["cost"] is None and f["unpriced"] is True
    assert "cost unknown" in render_plain(run.view) and "$0.0000" not in render_plain(run.view)
    # A priced model still shows its cost.
    server.enqueue(text("hello"))
    priced = toolloop("Hi.", model="gpt-4.1-mini")
    assert priced.view["footer"]["cost"] > 0 and "cost unknown" not in render_plain(priced.view)


def test_a_resume_cell_after_a_click_says_so_and_does_not_fail(ipython: Any,
                                                               server: ScriptedOpenAI) -> None:
    from jupyter_agent.edge.magics import _on_click
    from tests.agents.plan.plan_scripts import ask

    ipython.run_cell("%load_ext jupyter_agent")
    server.enqueue(tool_calls([call("ask_agent", ask(), id="a1")]), text("Chose it."))
    with capture_output() as cap:
        res = ipython.run_cell("%%plan\ngo")
    assert res.error_in_exec is None, (res.error_in_exec, cap.stdout, cap.stderr)
    run = ipython.user_ns["_agent_run"]
    assert run.status == "ask"
    # While it waits, the run's own output says how to answer from a new cell.
    assert f"%agent resume {run.run_id}" in run.view["hint"]
    assert f"%agent resume {run.run_id}" in render_plain(run.view)
    # The user clicks option 1 on the card before the tutorial's resume cell runs.
    with capture_output() as clicked:
        _on_click(run, {"type": "answer", "call_id": "a1", "how": "option", "option_index": 1,
                        "answer": "x"})
    assert run.status != "ask"
    assert "hint" not in run.view and "%agent resume" not in render_markdown(run.view)
    # No output, first or updated, is ever empty (a saved notebook would keep it).
    for out in [*cap.outputs, *clicked.outputs]:
        assert any(v for v in out.data.values()), out.data
    asked = len(server.requests)
    with capture_output() as cap:
        result = ipython.run_cell("%agent resume --option 2")
    assert result.error_in_exec is None
    assert "already answered" in cap.stdout
    assert len(server.requests) == asked  # nothing was answered twice
    # With nothing answered and nothing waiting, the cell still fails with one line.
    ipython.user_ns.pop("_agent_run")
    with capture_output():
        result = ipython.run_cell("%agent resume --option 2")
    assert result.error_in_exec is not None


@pytest.mark.parametrize("magic", ["plan", "toolloop"])
def test_out_takes_the_answer_of_a_run_finished_by_a_click(ipython: Any,
                                                           server: ScriptedOpenAI,
                                                           magic: str) -> None:
    """``-o VAR`` of a run that waited (an ask, an approval card) holds the answer once the
    card's click finished the run, not the ``""`` the cell left."""
    from jupyter_agent.ui.live import displays
    from tests.agents.plan.plan_scripts import ask

    ipython.run_cell("%load_ext jupyter_agent")
    if magic == "plan":
        server.enqueue(tool_calls([call("ask_agent", ask(), id="k1")]), text("Chose it."))
        line = "%%plan -o clicked_answer\ngo"
    else:
        assert ipython.run_cell(
            "from jupyter_agent import tool\n"
            "@tool(requires_approval=True)\n"
            "def guarded() -> str:\n"
            "    '''Guarded.'''\n"
            "    return 'g'\n").success
        server.enqueue(tool_calls([call("guarded", {}, id="k1")]), text("Chose it."))
        line = "%%toolloop --tools guarded -o clicked_answer\ngo"
    with capture_output():
        res = ipython.run_cell(line)
    assert res.error_in_exec is None, res.error_in_exec
    run = ipython.user_ns["_agent_run"]
    assert run.status == "ask" and ipython.user_ns["clicked_answer"] == ""
    widget = displays[run.run_id].widget
    assert widget is not None
    with capture_output():  # the message a click on the card sends, through the widget
        widget._on_custom_msg(widget, {"type": "answer", "call_id": "k1", "how": "option",
                                       "option_index": 1, "answer": ""}, [])
    assert run.status == "done", run.error
    assert ipython.user_ns["clicked_answer"] == "Chose it."
    ipython.user_ns.pop("clicked_answer", None)


def test_a_click_made_while_another_cell_runs_waits_for_that_cell(
        ipython: Any, server: ScriptedOpenAI) -> None:
    """ipykernel 7 may hand a widget message over while a cell still executes: the click on an
    earlier cell's question is held until the running cell ends, so two runs never overlap."""
    from jupyter_agent.ui.live import displays
    from tests.agents.plan.plan_scripts import ask

    ipython.run_cell("%load_ext jupyter_agent")
    server.enqueue(tool_calls([call("ask_agent", ask(), id="k2")]), text("Chose it."))
    with capture_output():
        assert ipython.run_cell("%%plan\ngo").error_in_exec is None
    run = ipython.user_ns["_agent_run"]
    assert run.status == "ask"
    ipython.user_ns["_gate_probe"] = (displays[run.run_id].widget, run, server)
    # The click arrives in the middle of another cell, which looks at the run before it ends.
    with capture_output():
        res = ipython.run_cell(
            "_w, _r, _srv = _gate_probe\n"
            "_w._on_custom_msg(_w, {'type': 'answer', 'call_id': 'k2', 'how': 'option',"
            " 'option_index': 1, 'answer': ''}, [])\n"
            "_seen_during = (_r.status, len(_srv.requests))\n")
    assert res.error_in_exec is None, res.error_in_exec
    # Nothing ran inside the other cell: the run still waited, no model call was made.
    assert ipython.user_ns["_seen_during"] == ("ask", 1)
    assert run.status == "done" and run.answer == "Chose it."  # applied once that cell ended
    for name in ("_gate_probe", "_w", "_r", "_srv", "_seen_during"):
        ipython.user_ns.pop(name, None)


def test_a_card_that_offered_no_text_refuses_text(ipython: Any, server: ScriptedOpenAI) -> None:
    """A question asked with ``allowOther: false`` offers its options only: typed text, from
    ``%agent resume --answer`` or a forged click message, is refused in one line and the card
    keeps waiting; an option then answers it."""
    from jupyter_agent.session import default_store
    from jupyter_agent.ui.live import displays
    from tests.agents.plan.plan_scripts import ask

    ipython.run_cell("%load_ext jupyter_agent")
    server.enqueue(tool_calls([call("ask_agent", {**ask(), "allowOther": False}, id="t1")]),
                   text("Chose it."))
    with capture_output():
        assert ipython.run_cell("%%plan\ngo").error_in_exec is None
    run = ipython.user_ns["_agent_run"]
    assert run.status == "ask"
    with capture_output() as cap:
        ipython.run_cell(f"%agent resume {run.run_id} --answer 'ignore your options'")
    assert cap.stderr.strip().splitlines() == [
        "UsageError: This card takes an option (1 to 3) or a dismissal, not text; "
        "nothing changed."]
    widget = displays[run.run_id].widget
    widget._on_custom_msg(widget, {"type": "answer", "call_id": "t1", "how": "other",
                                   "answer": "ignore your options"}, [])
    assert run.status == "ask" and len(server.requests) == 1
    assert default_store().get_run(run.run_id).status == "ask"
    widget._on_custom_msg(widget, {"type": "answer", "call_id": "t1", "how": "option",
                                   "option_index": 2, "answer": ""}, [])
    assert run.status == "done" and run.answer == "Chose it."
    results = [m for m in server.requests[-1]["messages"] if m["role"] == "tool"]
    assert results[-1]["content"].startswith("The user chose option 2 of 3")
    assert "ignore your options" not in str(server.requests[-1])


def test_an_approval_card_refuses_text(server: ScriptedOpenAI) -> None:
    """Text never answers an approval card (it offers Allow once, Allow for this session,
    Deny): refused, the call neither runs nor is denied, and a click still decides."""
    from jupyter_agent.agents.resume import Answer, resume
    from jupyter_agent.base.errors import ResumeError

    server.enqueue(tool_calls([call("run_python", {"code": "print(6 * 7)"}, id="p1")]),
                   text("Denied, fine."))
    run = toolloop("go", tools=["run_python"])
    assert run.status == "ask"
    with pytest.raises(ResumeError, match="takes an option .* not text"):
        resume(run.run_id, Answer("other", text="yes, allow it"))
    assert len(server.requests) == 1
    done = resume(run.run_id, Answer("option", option_index=3))
    assert done.status == "done" and done.answer == "Denied, fine."


def test_a_cell_run_inside_another_does_not_release_a_waiting_click() -> None:
    """The gate counts cells: a cell that runs another (``shell.run_cell`` from code) still
    runs when the inner one ends, so a click made meanwhile waits for the outer end."""
    from jupyter_agent.edge.click_gate import CellGate

    gate, applied = CellGate(), []
    gate.cell_ended()  # the %load_ext cell ends without the gate having seen it start
    gate.cell_started()  # outer cell
    gate.apply(lambda: applied.append("click"))
    gate.cell_started()  # inner cell
    gate.cell_ended()
    assert applied == []
    gate.cell_ended()  # outer cell: no kernel loop here, so applied at once
    assert applied == ["click"]
    gate.apply(lambda: applied.append("idle"))  # no cell runs: at once
    assert applied == ["click", "idle"]


def test_a_click_and_a_resume_cell_both_fill_out(ipython: Any, server: ScriptedOpenAI) -> None:
    """``--out`` is the turn's on_end: a click on the card fills it as ``%agent resume`` does
    (one road; the click's own copy of the assignment is gone)."""
    from jupyter_agent.edge.magics import _on_click
    from tests.agents.plan.plan_scripts import ask

    ipython.run_cell("%load_ext jupyter_agent")
    server.enqueue(tool_calls([call("ask_agent", ask(), id="o1")]), text("Clicked."),
                   tool_calls([call("ask_agent", ask(), id="o2")]), text("Resumed."))
    with capture_output():
        assert ipython.run_cell("%%plan --out got\ngo").error_in_exec is None
    assert ipython.user_ns["got"] == ""
    run = ipython.user_ns["_agent_run"]
    with capture_output():
        _on_click(run, {"type": "answer", "call_id": "o1", "how": "option", "option_index": 1,
                        "answer": ""})
    assert ipython.user_ns["got"] == "Clicked."
    with capture_output():
        assert ipython.run_cell("%%plan --out got2\ngo again").error_in_exec is None
        assert ipython.run_cell("%agent resume --option 2").error_in_exec is None
    assert ipython.user_ns["got2"] == "Resumed." and ipython.user_ns["got"] == "Clicked."
