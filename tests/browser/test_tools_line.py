"""The card's ``Tools: ...`` line (tools_line.js, hooked into the footer) in a real Chromium:
drawn from the view's ``tools``, absent for a run that offered none, text only (a tool name is
never markup)."""

from __future__ import annotations

import pytest

from jupyter_agent.base.events import RunStarted, TextDelta, ToolsOffered
from jupyter_agent.view.reduce import reduce_events

from .render_harness import chromium_path
from .test_render_static import OpenRun, browser, open_run, site  # noqa: F401 (fixtures)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(chromium_path() is None, reason="no system Chromium"),
]


def test_the_card_lists_the_offered_tools(open_run: OpenRun) -> None:  # noqa: F811
    page = open_run(reduce_events([
        RunStarted(run_id="r", agent="toolloop", model="m"),
        ToolsOffered(tools=["read_file", "bash", "<img src=x onerror=alert(1)>"]),
        TextDelta(round=1, text="ok"),
    ]))
    line = page.locator(".ja-footer .ja-tools-line")
    assert line.count() == 1
    assert line.inner_text() == "Tools: read_file, bash, <img src=x onerror=alert(1)>"
    assert page.locator(".ja-footer img").count() == 0 and page.dialogs == []


def test_an_empty_set_says_none_and_a_chat_card_has_no_line(open_run: OpenRun) -> None:  # noqa: F811
    empty = open_run(reduce_events([RunStarted(run_id="r", agent="toolloop", model="m"),
                                    ToolsOffered(tools=[])]))
    assert empty.inner_text(".ja-tools-line") == "Tools: none"
    chat = open_run(reduce_events([RunStarted(run_id="r", agent="chat", model="m"),
                                   TextDelta(round=1, text="hi")]))
    assert chat.locator(".ja-tools-line").count() == 0


def test_a_running_plan_card_says_what_its_update_plan_call_does(open_run: OpenRun) -> None:  # noqa: F811
    from jupyter_agent.base.events import PlanStatus, RunFinished, ToolCalled, ToolReturned

    start = [RunStarted(run_id="r", agent="plan", model="m"), ToolsOffered(tools=[]),
             ToolCalled(round=1, call_id="p1", name="update_plan"),
             PlanStatus(status="generating", round=1, call_id="p1")]
    page = open_run(reduce_events(start))
    assert page.inner_text(".ja-plan-status").endswith("Generating the plan…")
    returned = ToolReturned(round=1, call_id="p1", name="update_plan", output="ok")
    after = open_run(reduce_events([*start, returned]))
    assert after.locator(".ja-plan-status").count() == 0
    ended = open_run(reduce_events([*start, RunFinished(status="done")]))
    assert ended.locator(".ja-plan-status").count() == 0
