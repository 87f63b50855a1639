"""A card left waiting by a restarted kernel, in JupyterLab and Notebook 7 (issue #22).

A ``%%plan`` asks; the kernel is restarted; a new cell answers with ``%agent resume`` in the new
kernel and the run finishes there. The old card's comm is dead, so nothing the new kernel sends
reaches it: the page itself must show it the run's final state (``render.js``: a card of a run
another card on the page shows ended), and drop its "waiting for you" badge and buttons.
Screenshots go to ``test-artifacts/``; the harness fails the test on any console error.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.agents.plan.plan_scripts import ask
from tests.fakes.openai_server import call, text, tool_calls

from .lab_harness import LabNotebook, lab_marks, lab_notebook
from .render_harness import ARTIFACTS_DIR

pytestmark = lab_marks(600)

KEY = "sk-test-key-restart-0123456789"
CELLS = [
    "%load_ext jupyter_agent",
    "%%plan\nPlan the offsite.",
    "%agent resume --option 1",
]
SETUP, PLAN, RESUME = 0, 1, 2


@pytest.fixture(scope="module", params=["lab", "notebook"])
def nb(request: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabNotebook]:
    base = tmp_path_factory.mktemp(f"restart-{request.param}")
    with lab_notebook(base, "restart.ipynb", CELLS, KEY, shell=request.param) as notebook:
        yield notebook


def _restart(nb: LabNotebook) -> None:
    page = nb.ui.page
    page.locator(".lm-MenuBar-item", has_text="Kernel").click()
    page.locator(".lm-Menu-item", has_text="Restart Kernel").first.click()
    page.locator(".jp-Dialog .jp-mod-accept").click()
    nb.ui.wait_ready()


def test_the_old_card_shows_the_end_of_a_run_resumed_in_a_new_kernel(nb: LabNotebook) -> None:
    ui = nb.ui
    nb.model.enqueue(tool_calls([call("ask_agent", ask("Which venue?", ["Lyon", "Paris", "Nice"]))]),
                     text("Booked Lyon."))
    ui.run(PLAN)
    old = ui.cell(PLAN)
    expect(old.locator(".ja-ask-pending")).to_have_count(1, timeout=30_000)
    assert "waiting for you" in old.inner_text()
    _restart(nb)
    ui.run(SETUP)
    ui.run(RESUME, timeout=90_000)
    expect(ui.cell(RESUME).locator(".ja-run")).to_have_count(1, timeout=30_000)
    assert "Booked Lyon." in ui.cell(RESUME).inner_text()
    # The old card: the run's final state, said to have finished elsewhere, no button left.
    expect(old.locator(".ja-ended-elsewhere")).to_have_count(1, timeout=15_000)
    text_now = old.inner_text()
    assert "waiting for you" not in text_now, text_now
    assert "Booked Lyon." in text_now, text_now
    assert old.locator(".ja-ask-pending").count() == 0
    assert old.locator(".ja-option:enabled").count() == 0
    old.scroll_into_view_if_needed()
    ui.shot(f"{ui.shell}-restart-old-card.png", ARTIFACTS_DIR, old)
