"""The view reducer, the MIME bundle built from it, and the live display's throttle."""

from __future__ import annotations

import json
import typing
from typing import Any

import pytest
from IPython.utils.capture import capture_output

from jupyter_agent.agents.run import Run, RunRecorder
from jupyter_agent.base import events as ev
from jupyter_agent.base.events import EVENT_ADAPTER, RUN_MIME_TYPE, event_to_json, merge_deltas
from jupyter_agent.ui import live
from jupyter_agent.view.bundle import (
    build_bundle,
    output_metadata,
    render_markdown,
    render_plain,
)
from jupyter_agent.view.reduce import new_view, reduce_events
from tests.ui.conftest import FakeClock


def a_run_of_events() -> list[ev.BaseEvent]:
    return [
        ev.RunStarted(run_id="run_1", agent="toolloop", model="gpt-4.1-mini", prompt="2+2?"),
        ev.RoundStarted(round=1, model="gpt-4.1-mini", tool_choice="auto"),
        ev.ReasoningDelta(round=1, text="Use "),
        ev.ReasoningDelta(round=1, text="the tool."),
        ev.ToolCalled(round=1, call_id="c1", name="add"),
        ev.ToolArgsDelta(round=1, call_id="c1", delta='{"a": 2, '),
        ev.ToolArgsDelta(round=1, call_id="c1", delta='"b": 2}'),
        ev.ToolReturned(round=1, call_id="c1", name="add", output="4", seconds=0.01),
        ev.UsageRecorded(round=1, model="gpt-4.1-mini", input_tokens=50, output_tokens=10,
                         cost=0.001),
        ev.RoundStarted(round=2, model="gpt-4.1-mini", tool_choice="auto"),
        ev.TextDelta(round=2, text="2 + 2 "),
        ev.TextDelta(round=2, text="= 4."),
        ev.UsageRecorded(round=2, model="gpt-4.1-mini", input_tokens=70, output_tokens=5,
                         cost=0.002, estimated=True),
        ev.RunFinished(status="done", answer="2 + 2 = 4.", rounds=2, input_tokens=120,
                       output_tokens=15, cost=0.003, seconds=1.5),
    ]


def test_simplest_bundle() -> None:
    events = a_run_of_events()
    view = reduce_events(events)
    bundle = build_bundle(view)
    assert list(bundle) == [RUN_MIME_TYPE, "text/html", "text/markdown", "text/plain"]
    assert bundle["text/plain"].startswith("2 + 2 = 4.")
    assert "2 + 2 = 4." in bundle["text/markdown"]
    assert bundle[RUN_MIME_TYPE]["view"] == view
    json.dumps(bundle)  # plain JSON all the way down


def test_reduced_view() -> None:
    view = reduce_events(a_run_of_events())
    assert (view["run_id"], view["agent"], view["status"], view["answer"]) == (
        "run_1", "toolloop", "done", "2 + 2 = 4.")
    kinds = [(i["kind"], i.get("round")) for i in view["items"]]
    assert kinds == [("reasoning", 1), ("tool", 1), ("text", 2)]
    reasoning, card, answer = view["items"]
    assert reasoning["text"] == "Use the tool."
    assert (card["name"], card["arguments"], card["output"], card["state"]) == (
        "add", '{"a": 2, "b": 2}', "4", "done")
    assert answer == {"kind": "text", "round": 2, "text": "2 + 2 = 4.", "withdrawn": False}
    assert view["footer"] == {"model": "gpt-4.1-mini", "rounds": 2, "input_tokens": 120,
                              "output_tokens": 15, "cost": pytest.approx(0.003),
                              "seconds": 1.5, "parts": 1, "estimated": True, "unpriced": False}


def test_failed_tool_retry_and_withdrawn_draft() -> None:
    view = reduce_events([
        ev.RunStarted(run_id="r", agent="plan", model="m"),
        ev.TextDelta(round=1, text="partial that is cut"),
        ev.RoundRetried(round=1, reason="connection lost mid-stream"),
        ev.TextDelta(round=1, text="Draft."),
        ev.StopGateFeedback(round=1, reason="open steps", feedback="Finish step 2."),
        ev.ToolCalled(round=2, call_id="c", name="div"),
        ev.ToolReturned(round=2, call_id="c", name="div", output="Tool error: ZeroDivisionError",
                        error="Tool error: ZeroDivisionError"),
        ev.TextDelta(round=3, text="Final."),
    ])
    texts = [(i["text"], i["withdrawn"]) for i in view["items"] if i["kind"] == "text"]
    assert texts == [("Draft.", True), ("Final.", False)]
    assert any(i["kind"] == "warning" and "retried" in i["message"] for i in view["items"])
    card = next(i for i in view["items"] if i["kind"] == "tool")
    assert card["state"] == "error"
    md = render_markdown(view)
    assert "Draft withdrawn by the stop gate" in md and "Draft." not in md
    assert "(error," in md and "Stop gate:" in md
    assert render_plain(view).startswith("Final.")


def test_markdown_and_plain_text() -> None:
    view = reduce_events(a_run_of_events())
    md = render_markdown(view)
    assert md.split("\n\n")[0] == "<details><summary>Reasoning</summary>"
    assert "```\nUse the tool.\n```" in md
    assert "**Tool `add`** (ok, 0.01 s) `{\"a\": 2, \"b\": 2}`\n\n```\n4\n```" in md
    assert md.endswith("*gpt-4.1-mini · 2 round(s) · about 120 in / 15 out tokens (estimated) · "
                       "$0.0030 · 1.5 s*")
    assert render_plain(view) == ("2 + 2 = 4.\n\n[done] gpt-4.1-mini · 2 round(s) · about 120 in / "
                                  "15 out tokens (estimated) · $0.0030 · 1.5 s")


def test_tool_output_with_backticks_cannot_break_the_fence() -> None:
    view = reduce_events([
        ev.ToolCalled(round=1, call_id="c", name="cat"),
        ev.ToolReturned(round=1, call_id="c", name="cat", output="```\n# not a heading\n```"),
    ])
    md = render_markdown(view)
    assert "````\n```\n# not a heading\n```\n````" in md


def test_long_tool_output_is_previewed_head_and_tail() -> None:
    view = reduce_events([
        ev.ToolCalled(round=1, call_id="c", name="dump"),
        ev.ToolReturned(round=1, call_id="c", name="dump", output="H" * 2000 + "T" * 2000),
    ])
    md = render_markdown(view)
    assert "H" * 100 in md and "T" * 100 in md and "characters hidden" in md
    assert len(md) < 600  # a preview: the whole output is in the view


def test_metadata_carries_usage_not_secrets() -> None:
    view = reduce_events(a_run_of_events())
    meta = output_metadata(view)[RUN_MIME_TYPE]
    assert meta == {"run_id": "run_1", "status": "done", "model": "gpt-4.1-mini",
                    "input_tokens": 120, "output_tokens": 15, "cost": pytest.approx(0.003),
                    "seconds": 1.5, "rounds": 2}


def test_merge_deltas_merges_consecutive_deltas() -> None:
    events = [ev.RunStarted(run_id="r", agent="chat", model="m")]
    events += [ev.TextDelta(round=1, text="x") for _ in range(500)]
    events += [ev.ToolCalled(round=1, call_id="a", name="f")]
    events += [ev.ToolArgsDelta(round=1, call_id="a", delta="1") for _ in range(3)]
    events += [ev.ToolArgsDelta(round=1, call_id="b", delta="2") for _ in range(2)]
    events += [ev.TextDelta(round=2, text="y") for _ in range(3)]
    compact = merge_deltas([event_to_json(e) for e in events])
    assert [(e["type"], e.get("text") or e.get("delta")) for e in compact] == [
        ("run_started", None), ("text_delta", "x" * 500), ("tool_called", None),
        ("tool_args_delta", "111"), ("tool_args_delta", "22"), ("text_delta", "yyy")]
    assert events[1].text == "x"  # the run's own events are not modified
    # The compacted log reduces to the same view as the full one.
    rebuilt = reduce_events([EVENT_ADAPTER.validate_python(e) for e in compact])
    assert rebuilt == reduce_events(events)


SAMPLES: list[ev.BaseEvent] = [
    ev.RunStarted(run_id="r", agent="chat", model="m", prompt="p", session="s"),
    ev.ToolsOffered(tools=["read_file", "probe"]),
    ev.RoundStarted(round=1, model="m", tool_choice="none"),
    ev.ReasoningDelta(round=1, text="r"),
    ev.TextDelta(round=1, text="t"),
    ev.ToolCalled(round=1, call_id="c", name="n", arguments="{}"),
    ev.ToolStarted(round=1, call_id="c", name="n"),
    ev.ToolArgsDelta(round=1, call_id="c", delta="{"),
    ev.ToolReturned(round=1, call_id="c", name="n", output="o", error="e", seconds=1.0,
                    internal=True),
    ev.UsageRecorded(round=1, module="m", model="x", input_tokens=1, output_tokens=2, cost=0.5,
                     estimated=True),
    ev.PlanUpdated(plan={"task": "T", "steps": [{"id": "1", "status": "pending"}]}),
    ev.PlanStatus(status="updating", round=1, call_id="c"),
    ev.AskPending(call_id="c", kind="approval", question="q?", options=["a", "b", "c"],
                  descriptions=["x", "y", "z"], allow_other=False, detail={"tool": "bash"}),
    ev.AskAnswered(call_id="c", how="option", answer="a", option_index=1),
    ev.RoundRetried(round=1, reason="why"),
    ev.StopGateFeedback(round=1, reason="r", feedback="f"),
    ev.ContextCompressed(round=1, method="checkpoint", tokens_before=10, tokens_after=5,
                         seconds=0.1),
    ev.Warning_(message="w"),
    ev.CellProposed(round=1, call_id="c", proposal={"id": "cell-1", "source": "x = 1",
                                                    "kind": "code", "explanation": "",
                                                    "status": "proposed"}),
    ev.ToolFigures(round=1, call_id="c", figures=[{"index": 1, "png": "iVBORw0KGgo=",
                                                   "width": 1, "height": 1,
                                                   "description": "[figure 1: 1x1 PNG]"}]),
    ev.WorkspaceChanged(round=1, call_id="c", record_id="r1", tool="bash", added=2,
                        names=["a.txt", "b.txt"],
                        held=[{"path": "pyarrow.py", "kind": "added",
                               "reason": "a module the kernel could import"}], held_count=1),
    ev.OutputChecked(schema_name="Ticket", valid=False, data={"label": "x"},
                     errors=["urgency: Field required"], attempts=3),
    ev.RunFinished(status="max_rounds", answer="a", rounds=3, input_tokens=1, output_tokens=2,
                   cost=0.1, seconds=2.0, finish_reason="stop", error=None),
    ev.RunFailed(error="boom"),
]


def test_every_event_type_is_sampled() -> None:
    union = typing.get_args(typing.get_args(ev.RunEvent)[0])
    assert {cls for cls in union} == {type(e) for e in SAMPLES}


@pytest.mark.parametrize("event", SAMPLES, ids=lambda e: e.type)  # type: ignore[attr-defined]
def test_every_event_round_trips_through_json(event: ev.BaseEvent) -> None:
    assert event_to_json(event) == event.model_dump(mode="json")  # the fast path is exact
    text = json.dumps(event_to_json(event))
    back = EVENT_ADAPTER.validate_python(json.loads(text))
    assert type(back) is type(event)
    assert back == event
    assert EVENT_ADAPTER.validate_json(EVENT_ADAPTER.dump_json(event)) == event


def test_unknown_event_type_is_rejected() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        EVENT_ADAPTER.validate_python({"type": "no_such_event", "t": 0})


def test_view_is_plain_json_after_a_whole_run() -> None:
    view = new_view()
    reduce_events(SAMPLES, view)
    assert json.loads(json.dumps(view)) == view


# ------------------------------------------------------------------------------ live display
@pytest.mark.parametrize("widgets", [False, True])
def test_a_fast_stream_is_throttled(ipython: Any, clock: FakeClock, widgets: bool) -> None:
    run = Run(agent="chat", model="m", prompt="p")
    recorder = RunRecorder(run)
    with capture_output() as cap:
        recorder.start()
        display = live.LiveDisplay(run, widgets=widgets)
        recorder.listeners.append(display.on_event)
        assert (display.widget is not None) == widgets
        recorder.emit(ev.RoundStarted(round=1, model="m"))
        for _ in range(2000):  # 2,000 tokens over 2 simulated seconds
            clock.now += 0.001
            recorder.emit(ev.TextDelta(round=1, text="tok "))
        streamed = display.updates
        recorder.finish("done", answer="tok " * 2000)
    assert streamed <= 2 * live.MAX_UPDATES_PER_SECOND + 2
    assert streamed >= 2 * live.MAX_UPDATES_PER_SECOND - 2  # throttled, not silenced
    final = cap.outputs[-1].data
    assert final["text/plain"].startswith("tok tok")
    assert final[RUN_MIME_TYPE]["view"]["answer"] == "tok " * 2000
    if not widgets:  # without a widget, each update re-sends the bundle: count them
        assert len(cap.outputs) <= streamed + 3


def test_events_before_a_wait_are_shown_once_the_interval_is_over(ipython: Any,
                                                                  clock: FakeClock) -> None:
    import time as real_time

    def wait_for(condition: Any) -> bool:  # a generous bound: the machine is shared
        deadline = real_time.monotonic() + 10
        while not condition() and real_time.monotonic() < deadline:
            real_time.sleep(0.005)
        return bool(condition())

    run = Run(agent="toolloop", model="m")
    recorder = RunRecorder(run)
    with capture_output():
        recorder.start()
        display = live.LiveDisplay(run, widgets=False)
        recorder.listeners.append(display.on_event)
        clock.now += 1
        recorder.emit(ev.TextDelta(round=1, text="a"))
        before = display.updates
        recorder.emit(ev.TextDelta(round=1, text="b"))  # same instant: held back
        assert display.updates == before
        recorder.emit(ev.ToolCalled(round=1, call_id="c", name="f"))  # rides the throttle
        recorder.emit(ev.UsageRecorded(round=1, input_tokens=3, output_tokens=1))
        assert display.updates == before and display._timer is None
        # A user tool starts: not at once (the cap holds), but drawn by a timer while the
        # tool works and no other event comes, so its card reads "running".
        recorder.emit(ev.ToolStarted(round=1, call_id="c", name="f"))
        assert display.updates == before
        assert wait_for(lambda: display.updates == before + 1 and not display._dirty)
        recorder.emit(ev.ToolReturned(round=1, call_id="c", name="f", output="x"))
        recorder.emit(ev.RoundStarted(round=2))  # the kernel waits for the model: drawn soon
        assert wait_for(lambda: display.updates == before + 2 and not display._dirty)
        # Internal tools are fast: no push before they run, one at the next tick.
        recorder.emit(ev.ToolCalled(round=2, call_id="p", name="update_plan"))
        recorder.emit(ev.UsageRecorded(round=2, input_tokens=3, output_tokens=1))
        recorder.emit(ev.ToolStarted(round=2, call_id="p", name="update_plan"))
        assert display.updates == before + 2 and display._timer is None


def test_a_resumed_run_shows_its_whole_time_and_parts() -> None:
    from jupyter_agent.base.events import AskAnswered, AskPending, RunFinished, RunStarted
    from jupyter_agent.view import reduce as state
    from jupyter_agent.view.bundle import footer_text

    view = reduce_events([
        RunStarted(run_id="r", agent="plan", model="m", prompt="p"),
        AskPending(call_id="a1", question="Which?", options=["x", "y", "z"]),
        RunFinished(status="ask", rounds=1, seconds=2.5),
    ])
    assert footer_text(view).endswith("2.5 s")  # one part so far: no "parts"
    state.reduce_event(view, AskAnswered(call_id="a1", how="option", answer="y", option_index=2))
    state.reduce_event(view, RunFinished(status="done", rounds=2, seconds=9.8))
    assert view["footer"]["seconds"] == pytest.approx(12.3) and view["footer"]["parts"] == 2
    assert footer_text(view).endswith("12.3 s in 2 parts")


def test_a_withdrawn_question_closes_the_card() -> None:
    from jupyter_agent.base.events import AskPending, RunStarted, ToolCalled
    from jupyter_agent.view.reduce import withdraw_ask

    view = reduce_events([
        RunStarted(run_id="r", agent="plan", model="m", prompt="p"),
        ToolCalled(round=1, call_id="a1", name="ask_agent", arguments="{}"),
        AskPending(call_id="a1", question="Which?", options=["x", "y", "z"]),
    ])
    withdraw_ask(view, "superseded: its cell was run again.")
    assert view["ask"] is None and view["status"] == "superseded"
    assert view["error"] == "superseded: its cell was run again."
    (closed,) = [i for i in view["items"] if i["kind"] == "ask"]
    assert closed["answered"]["how"] == "dismissed" and closed["question"] == "Which?"
    tool = next(i for i in view["items"] if i["kind"] == "tool")
    assert tool["state"] == "done" and tool["output"].startswith("Withdrawn")
    # Twice is harmless (a second supersede finds nothing waiting).
    withdraw_ask(view, "again")
    assert [i["kind"] for i in view["items"]].count("ask") == 1
