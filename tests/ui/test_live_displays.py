"""Live displays are found by run id while their run can still be answered, and dropped once it
ended for good; the kernel never keeps more than ``MAX_DISPLAYS`` of them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.agents.held import HELD
from jupyter_agent.agents.plan import plan
from jupyter_agent.agents.resume import Answer, resume
from jupyter_agent.agents.run import Run, RunRecorder, last_run
from jupyter_agent.agents.toolloop import toolloop
from jupyter_agent.tools.registry import REGISTRY, tool
from jupyter_agent.ui.live import MAX_DISPLAYS, LiveDisplay, displays
from tests.agents.plan.plan_scripts import ask
from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls


@pytest.fixture(autouse=True)
def _quiet(capsys: pytest.CaptureFixture[str], tmp_path: Path,
           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # outside a kernel, displays print: keep them out of the log


def _shown() -> tuple[list[Any], Callable[[Any], None]]:
    """A listener that opens a live display on ``run_started``, as the magics do."""
    opened: list[LiveDisplay] = []

    def listener(event: Any) -> None:
        if event.type == "run_started":
            opened.append(LiveDisplay(last_run(), widgets=False))
        opened[-1].on_event(event)

    return opened, listener


def test_a_waiting_run_keeps_its_display_until_it_is_answered(server: ScriptedOpenAI) -> None:
    server.enqueue(tool_calls([call("bash", {"command": "echo hi"}, id="c1")]), text("ok"))
    opened, listener = _shown()
    run = toolloop("go", tools=["bash"], listeners=[listener])

    assert run.status == "ask" and displays.get(run.run_id) is opened[0]  # a click needs it
    resume(run.run_id, Answer("option", option_index=3), run=run,
           listeners=[displays[run.run_id].on_event])
    assert run.status == "done" and run.run_id not in displays


def test_a_finished_run_leaves_nothing_behind(server: ScriptedOpenAI) -> None:
    server.enqueue(text("hello"))
    opened, listener = _shown()
    from jupyter_agent.agents.chat import chat

    run = chat("hi", listeners=[listener])
    assert run.status == "done" and len(opened) == 1 and len(displays) == 0


def test_a_failed_resume_that_still_waits_keeps_the_display(server: ScriptedOpenAI) -> None:
    """A plan resumed where its tool is missing ends ``error`` but its question is put back:
    the display must stay, or the next click would draw nowhere."""
    @tool
    def lookup(key: str) -> str:
        """Look a key up."""
        return "v"

    server.enqueue(tool_calls([call("ask_agent", ask(), id="a1")]))
    opened, listener = _shown()
    run = plan("go", tools=["lookup"], listeners=[listener])
    assert run.status == "ask"
    REGISTRY.unregister("lookup")
    HELD.clear()  # as in a new kernel: the tool must be found again by name

    live = displays[run.run_id]
    failed = resume(run.run_id, Answer("option", option_index=1), run=run,
                    listeners=[live.on_event])
    assert failed.status == "error" and failed.pending is not None
    assert displays.get(run.run_id) is live

    tool(lookup.fn)
    server.enqueue(text("done"))
    resume(run.run_id, Answer("option", option_index=1), run=run, listeners=[live.on_event])
    assert run.status == "done" and run.run_id not in displays


def test_displays_are_bounded_oldest_first() -> None:
    runs = []
    for _ in range(MAX_DISPLAYS + 20):  # questions nobody ever answers
        run = Run(agent="plan", model="m")
        LiveDisplay(run, widgets=False)
        RunRecorder(run).finish("ask")
        runs.append(run)
    assert len(displays) == MAX_DISPLAYS
    assert runs[0].run_id not in displays and runs[19].run_id not in displays
    assert runs[20].run_id in displays and runs[-1].run_id in displays


def test_a_display_replaced_for_the_same_run_is_not_dropped_by_the_old_one() -> None:
    run = Run(agent="chat", model="m")
    old = LiveDisplay(run, widgets=False)
    new = LiveDisplay(run, widgets=False)  # e.g. `%agent resume` opened another one
    recorder = RunRecorder(run, listeners=[old.on_event])
    recorder.finish("ask")
    assert displays[run.run_id] is new
    run.status = "running"
    recorder.finish("done")  # the old display sees the end: it must not drop the new one
    assert displays[run.run_id] is new  # kept (and bounded like any other)
