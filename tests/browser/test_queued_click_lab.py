"""A click on a waiting card while another cell runs, in a real JupyterLab (headless Chromium).

The plan of cell 1 waits for an answer; cell 2 (a slow tool loop, same notebook) runs. The
click is taken by the kernel only when cell 2 ends (runs never overlap): the card says so
("queued behind the running cell"), then the plan goes on, on its own conversation, and ends.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls

from .lab_harness import LabPage, lab_marks, lab_notebook
from .render_harness import ARTIFACTS_DIR

pytestmark = lab_marks(420)

KEY = "sk-test-key-queued-0123456789"
NOTEBOOK = "queued.ipynb"
LIVE = ".ja-widget .ja-run"
STATIC = ".jp-RenderedJupyterAgentRun > .ja-run"
ASK = {"reason": "r", "blockerType": "ambiguous_goal", "question": "Which period?",
       "options": ["Q1", "Q2", "Both"]}
CELLS = ["%load_ext jupyter_agent",
         "%%plan\nWrite the sales report.",
         "%%chat\nA slow side question."]
PLAN, SIDE = 1, 2


@pytest.fixture
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LabPage, ScriptedOpenAI, Any]]:
    base = tmp_path_factory.mktemp("queued-lab")
    with lab_notebook(base, NOTEBOOK, CELLS, KEY, height=1200) as nb:
        yield nb.ui, nb.model, nb.base


def test_a_click_while_another_cell_runs_is_queued_then_applied(lab: Any) -> None:
    ui, model, base = lab
    model.enqueue(tool_calls([call("ask_agent", ASK, id="ask_1")]))
    ui.run(PLAN)
    card = ui.cell(PLAN).locator(f"{LIVE} .ja-ask-pending")
    card.wait_for()

    # Cell 2 runs: its model answers only once the click was taken (a gate, not a fixed
    # delay, so a slow machine cannot end cell 2 before the click); the plan's card stays
    # waiting and clickable.
    side_may_answer = threading.Event()

    def side_answer(body: dict[str, Any]) -> Any:
        side_may_answer.wait(120)
        return text("Side answer.")

    model.enqueue(side_answer)
    try:
        ui.start(SIDE)
        ui.cell(SIDE).locator(f"{LIVE} .ja-waiting").wait_for(timeout=30_000)
        option = card.locator('.ja-option[data-index="2"]')
        expect(option).to_be_enabled()
        model.enqueue(text("Report for Q2 written."))
        option.click()
        status = card.locator(".ja-ask-status")
        expect(status).to_have_text(
            "Answer queued behind the running cell; it applies when that cell ends.",
            timeout=15_000)
        assert card.locator(".ja-option:enabled").count() == 0  # no second click
        assert len(model.requests) == 2  # the plan did not go on while cell 2 runs
        ui.shot("lab-queued-click.png", ARTIFACTS_DIR, ui.cell(PLAN))
    finally:
        side_may_answer.set()

    # Cell 2 ends; then the kernel takes the click and the plan finishes.
    ui.cell(SIDE).locator(STATIC).locator('.ja-badge[data-status="done"]').wait_for(
        timeout=60_000)
    done = ui.cell(PLAN).locator(STATIC)
    done.locator('.ja-badge[data-status="done"]').wait_for(timeout=60_000)
    assert "Report for Q2 written." in done.inner_text()
    assert "not waiting for an answer" not in done.inner_text()  # no "superseded" warning
    # The plan's resumed request is its own conversation: nothing of the side question.
    resumed = model.requests[-1]["messages"]
    assert resumed[-1]["role"] == "tool" and "Q2" in resumed[-1]["content"]
    assert "slow side question" not in str(resumed)
    ui.shot("lab-queued-click-done.png", ARTIFACTS_DIR, ui.cell(PLAN))
