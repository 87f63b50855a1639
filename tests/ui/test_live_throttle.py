"""The live display's throttle holds for a whole run, not only between streamed tokens.

A long scripted run (many rounds, each with a round start, a user tool start and streamed
text) on a simulated clock must reach the front end at most ``MAX_UPDATES_PER_SECOND`` times
a second: the events before a wait (round start, tool start) are drawn once the interval is
over, by a timer when nothing else comes, not at once. A pause (ask) and the end of the run
are drawn at once.
"""

from __future__ import annotations

import time as real_time
from typing import Any

import pytest
from IPython.utils.capture import capture_output

from jupyter_agent.agents.run import Run, RunRecorder
from jupyter_agent.base import events as ev
from jupyter_agent.ui import live
from tests.ui.conftest import FakeClock


def _wait_for(condition: Any, timeout: float = 10.0) -> bool:
    """Poll ``condition`` until it holds (a generous bound: the machine is shared)."""
    deadline = real_time.monotonic() + timeout
    while not condition():
        if real_time.monotonic() > deadline:
            return False
        real_time.sleep(0.005)
    return True


def _shown(widgets: bool) -> tuple[Run, RunRecorder, live.LiveDisplay]:
    run = Run(agent="toolloop", model="m", prompt="p")
    recorder = RunRecorder(run)
    recorder.start()
    display = live.LiveDisplay(run, widgets=widgets)
    recorder.listeners.append(display.on_event)
    return run, recorder, display


@pytest.mark.parametrize("widgets", [False, True])
def test_a_long_run_with_many_rounds_and_tools_keeps_the_cap(ipython: Any, clock: FakeClock,
                                                              widgets: bool) -> None:
    rounds, tokens = 60, 20
    with capture_output():
        run, recorder, display = _shown(widgets)
        t0, real0 = clock.now, real_time.monotonic()
        for r in range(1, rounds + 1):
            recorder.emit(ev.RoundStarted(round=r, model="m"))
            for _ in range(tokens):
                clock.now += 0.001
                recorder.emit(ev.TextDelta(round=r, text="tok "))
            recorder.emit(ev.ToolCalled(round=r, call_id=f"c{r}", name="work", arguments="{}"))
            recorder.emit(ev.ToolStarted(round=r, call_id=f"c{r}", name="work"))
            clock.now += 0.001
            recorder.emit(ev.ToolReturned(round=r, call_id=f"c{r}", name="work", output="ok"))
        streamed = display.updates
        simulated, real = clock.now - t0, real_time.monotonic() - real0
        recorder.finish("done", answer="done")
    # The cap over the simulated time, plus what deferred timers (real time) may add.
    cap = live.MAX_UPDATES_PER_SECOND * (simulated + real) + 3
    assert streamed <= cap, (streamed, cap)
    # Throttled, not silenced: about one update per interval of simulated time.
    assert streamed >= live.MAX_UPDATES_PER_SECOND * simulated * 0.8
    # Nothing was lost: the final view holds every round's tool and all the text.
    tools = [i for i in run.view["items"] if i["kind"] == "tool"]
    assert len(tools) == rounds and all(t["state"] == "done" for t in tools)
    assert display._timer is None  # the end cancelled any pending draw


@pytest.mark.parametrize("widgets", [False, True])
def test_a_tool_start_is_drawn_without_another_event(ipython: Any, clock: FakeClock,
                                                     widgets: bool) -> None:
    with capture_output():
        run, recorder, display = _shown(widgets)
        clock.now += 1.0
        recorder.emit(ev.RoundStarted(round=1, model="m"))  # an interval passed: at once
        before = display.updates
        # Right after a push (the clock stands still): held, then drawn by the timer while
        # the "tool" runs and sends nothing.
        recorder.emit(ev.ToolCalled(round=1, call_id="c1", name="slow", arguments="{}"))
        recorder.emit(ev.ToolStarted(round=1, call_id="c1", name="slow"))
        assert display.updates == before  # not at once: the throttle holds
        assert _wait_for(lambda: display.updates == before + 1 and not display._dirty)
        card = next(i for i in run.view["items"] if i["kind"] == "tool")
        assert card["state"] == "running"
        # A pause is drawn at once, even right after a push.
        shown = display.updates
        recorder.emit(ev.AskPending(call_id="c2", question="Go on?", options=["yes", "no"]))
        assert display.updates == shown + 1 and not display._dirty
        recorder.finish("ask")
    assert display._timer is None


def test_internal_tools_and_plain_events_wait_for_the_next_tick(ipython: Any,
                                                                clock: FakeClock) -> None:
    with capture_output():
        run, recorder, display = _shown(False)
        clock.now += 1.0
        recorder.emit(ev.RoundStarted(round=1, model="m"))
        before = display.updates
        recorder.emit(ev.ToolCalled(round=1, call_id="p1", name="update_plan", arguments="{}"))
        recorder.emit(ev.ToolStarted(round=1, call_id="p1", name="update_plan"))
        recorder.emit(ev.TextDelta(round=1, text="hi"))
        assert display._timer is None and display.updates == before and display._dirty
        clock.now += 0.05
        recorder.emit(ev.TextDelta(round=1, text=" there"))  # the interval is over: drawn
        assert display.updates == before + 1 and not display._dirty
        recorder.finish("done", answer="hi there")
    assert run.view["answer"] == "hi there"
