"""Tutorial 03 opened and run from its recording (no key) in JupyterLab and Notebook 7 (issue
#22: an ipywidgets ``processLuminoMessage`` console error was seen while opening it). The
harness fails the test on any console error or uncaught exception of the page; a screenshot of
the plan card goes to ``test-artifacts/``.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from .lab_harness import LabPage, lab_marks, lab_with_browser
from .render_harness import ARTIFACTS_DIR, CONSOLE_ERRORS

pytestmark = lab_marks(600)

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
T03 = "03-planning-with-ask.ipynb"
PLAN_CELL, LAST_CELL = 5, 12


@pytest.fixture
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Any]]:
    # A server per shell: Notebook 7.6 opened on a server where a JupyterLab page was open
    # throws "Command 'filebrowser:open-path' not registered" at load (its notebook page has
    # no file browser), with the workspace and the sessions deleted too: not the card's error.
    with lab_with_browser(tmp_path_factory.mktemp("t03-lab")) as both:
        yield both


@pytest.mark.parametrize("shell", ["lab", "notebook"])
def test_tutorial_03_opens_and_runs_all_without_a_console_error(lab: Any, shell: str) -> None:
    browser, server = lab
    # Notebook 7 at the root (its notebook page has no file browser to open a folder with).
    where = "" if shell == "notebook" else "lab/"
    (server.root / where).mkdir(exist_ok=True)
    shutil.copy(NOTEBOOKS / T03, server.root / where / T03)
    page = browser.new_page(viewport={"width": 1280, "height": 1400})
    page.set_default_timeout(30_000)
    ui = LabPage(page, server, shell)
    ui.open(f"{where}{T03}")
    ui.watch(LAST_CELL)
    page.locator(".lm-MenuBar-item", has_text="Run").click()
    page.locator(".lm-Menu-item", has_text="Run All Cells").first.click()
    ui.wait_ran(LAST_CELL, timeout=240_000)
    ui.wait_ready()
    card = ui.cell(PLAN_CELL).locator(".ja-run")
    expect(card.locator(".ja-ask-answered")).to_have_count(1, timeout=30_000)
    page.wait_for_timeout(2000)  # late widget messages (a view built after its output left)
    ui.cell(PLAN_CELL).scroll_into_view_if_needed()
    ui.shot(f"{shell}-t03-run-all.png", ARTIFACTS_DIR, ui.cell(PLAN_CELL))
    ui.reload()  # reopened from disk: saved outputs only, a new kernel
    page.wait_for_timeout(2000)
    page.close()
    # Checked here (the harness's teardown checks too) to name the page in the message.
    errors, CONSOLE_ERRORS[:] = list(CONSOLE_ERRORS), []
    assert not errors, "console errors on the page:\n" + "\n".join(errors)
