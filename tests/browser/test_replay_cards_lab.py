"""Tutorial cards in a real JupyterLab (headless Chromium), replayed from their cassettes with
no key: clicks the recording does not hold, old cards clicked after Run All, a kernel restarted
with a question waiting. Each card must say what is true, in one line, and never "Answer sent;
waiting for the kernel…" forever. Screenshots go to ``test-artifacts/``.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from .lab_harness import TOKEN, LabPage, lab_marks, lab_with_browser
from .render_harness import ARTIFACTS_DIR

pytestmark = lab_marks(600)

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
T03 = "03-planning-with-ask.ipynb"
T04 = "04-sessions-permissions-workspace.ipynb"
LIVE = ".ja-widget .ja-run"
SENT = "Answer sent; waiting for the kernel…"
QUEUED = "Answer queued behind the running cell; it applies when that cell ends."
PLAN_CELL = 5  # tutorial 03: the %%plan cell that asks; cells 2-3 set it up
APPROVAL_CELL = 16  # tutorial 04: the %%toolloop whose bash call needs approval


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Any]]:
    with lab_with_browser(tmp_path_factory.mktemp("replay-lab")) as both:
        yield both


def _open(lab: tuple[Any, Any], folder: str, name: str) -> LabPage:
    """A fresh copy of tutorial ``name`` in its own folder (its own kernel), opened."""
    browser, server = lab
    (server.root / folder).mkdir()
    shutil.copy(NOTEBOOKS / name, server.root / folder / name)
    page = browser.new_page(viewport={"width": 1280, "height": 1400})
    page.set_default_timeout(30_000)
    ui = LabPage(page, server)
    # Its own workspace: the notebooks of the other tests stay closed (their cells would
    # match the same selectors).
    page.goto(f"{server.url}/lab/workspaces/{folder}/tree/{folder}/{name}?token={TOKEN}")
    ui.wait_ready()
    return ui


def _menu(ui: LabPage, menu: str, item: str) -> None:
    ui.page.locator(".lm-MenuBar-item", has_text=menu).click()
    ui.page.locator(".lm-Menu-item", has_text=item).first.click()


def _no_red(ui: LabPage) -> None:
    """No Python traceback and no error output anywhere in the notebook."""
    errors = ui.page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    texts = [errors.nth(i).inner_text() for i in range(errors.count())]
    assert not [t for t in texts if "Traceback" in t or "Error" in t], texts
    assert ui.page.locator(".jp-RenderedText .ansi-red-fg").count() == 0


def _waiting_card(ui: LabPage) -> Any:
    for i in (2, 3, PLAN_CELL):
        ui.run(i)
    card = ui.cell(PLAN_CELL).locator(f"{LIVE} .ja-ask-pending")
    card.wait_for()
    return card


def test_replay_marks_the_recorded_option_and_refuses_another_in_one_line(lab: Any) -> None:
    ui = _open(lab, "c", T03)
    card = _waiting_card(ui)
    recorded = card.locator(".ja-option.ja-recorded")
    expect(recorded).to_have_count(1)
    k = recorded.get_attribute("data-index")
    assert k and "▶ recorded" in recorded.inner_text()
    expect(card.locator(".ja-recorded-line")).to_have_text(
        f"This recording answered option {k}: click it, or go live (%agent live) and re-run "
        "the cell.")
    other = "1" if k != "1" else "2"
    card.locator(f'.ja-option[data-index="{other}"]').click()
    # The refusal marks the line under the buttons, which says it already: once on the card.
    expect(card.locator(".ja-recorded-line.ja-ask-refused")).to_have_count(1, timeout=15_000)
    assert card.inner_text().count(f"This recording answered option {k}") == 1
    # The question still waits: every button clickable again, no "sent" claim, no red.
    assert card.locator(".ja-option:enabled").count() == card.locator(".ja-option").count()
    assert SENT not in card.inner_text() and QUEUED not in card.inner_text()
    _no_red(ui)
    ui.shot("lab-replay-refused.png", ARTIFACTS_DIR, ui.cell(PLAN_CELL))
    # The recorded option goes on: the card is answered, the plan runs from the recording.
    card.locator(f'.ja-option[data-index="{k}"]').click()
    ui.cell(PLAN_CELL).locator(".ja-ask-answered").first.wait_for(timeout=60_000)
    ui.page.close()


def test_a_click_after_a_kernel_restart_gives_the_exact_resume_command(lab: Any) -> None:
    ui = _open(lab, "b", T03)
    card = _waiting_card(ui)
    hint = ui.cell(PLAN_CELL).locator(".ja-hint").inner_text()
    _menu(ui, "Kernel", "Restart Kernel…")
    ui.page.locator(".jp-Dialog .jp-mod-accept").click()
    ui.wait_ready()
    card.locator('.ja-option[data-index="2"]').click()
    gone = ui.cell(PLAN_CELL).locator(".ja-kernel-gone")
    expect(gone).to_be_visible(timeout=15_000)
    text = gone.inner_text()
    assert "The kernel was restarted: run %agent resume " in text and "--option 2" in text, text
    command = gone.locator("code").inner_text()
    assert command.startswith("%agent resume ") and command.endswith(" --option 2")
    assert command.split()[2] in hint  # the waiting run's id, as its hint names it
    out = ui.cell(PLAN_CELL)
    assert out.locator(".ja-option:enabled").count() == 0
    assert SENT not in out.inner_text() and QUEUED not in out.inner_text()
    ui.shot("lab-restart-click.png", ARTIFACTS_DIR, ui.cell(PLAN_CELL))
    ui.page.close()


CLICK_WHEN_SHOWN = """(n) => {
    window.clicked = false;
    const timer = setInterval(() => {
        const cell = document.querySelectorAll(".jp-Notebook .jp-Cell")[n];
        const b = cell && cell.querySelector('.ja-ask-pending .ja-option[data-index="1"]');
        if (b && !b.disabled) { b.click(); window.clicked = true; clearInterval(timer); }
    }, 5);
}"""


def _check_old_card(ui: LabPage, name: str) -> None:
    cell = ui.cell(APPROVAL_CELL)
    cell.scroll_into_view_if_needed()
    ui.shot(name, ARTIFACTS_DIR, cell)
    text = cell.inner_text()
    assert SENT not in text and QUEUED not in text, text
    # The real state: answered (by the resume cell), folded to one line, no button left.
    assert cell.locator(".ja-ask-answered").count() == 1, text
    assert cell.locator(".ja-ask-pending").count() == 0
    _no_red(ui)


def test_tutorial_04_run_all_with_a_click_on_the_approval_card_as_it_shows(lab: Any) -> None:
    ui = _open(lab, "a", T04)
    ui.page.evaluate(CLICK_WHEN_SHOWN, APPROVAL_CELL)
    # The saved notebook shows execution counts already: wait for this run's own (see watch).
    ui.watch(26)
    _menu(ui, "Run", "Run All Cells")
    ui.wait_ran(26, timeout=240_000)
    ui.wait_ready()
    print("clicked while running all:", ui.page.evaluate("window.clicked"))
    # The resume cell answered the card; a click the kernel took during Run All must not leave
    # it saying "sent" (checked below, once the card shows its answer).
    expect(ui.cell(APPROVAL_CELL).locator(".ja-ask-answered")).to_have_count(1, timeout=30_000)
    _check_old_card(ui, "lab-04-run-all-click.png")
    ui.page.close()


def test_tutorial_04_allow_once_before_the_resume_cell_is_refused_in_one_line(lab: Any) -> None:
    ui = _open(lab, "a2", T04)
    for i in (2, 4, 5, 6, 8, 9, 10, 11, 13, 14, APPROVAL_CELL):
        ui.run(i)
    card = ui.cell(APPROVAL_CELL).locator(f"{LIVE} .ja-ask-pending")
    card.wait_for()
    k = card.locator(".ja-option.ja-recorded").get_attribute("data-index")
    assert k == "2"  # the tutorial's `%agent resume --option 2` cell, recorded as code
    card.locator('.ja-option[data-index="1"]').click()  # "Allow once"
    expect(card.locator(".ja-recorded-line.ja-ask-refused")).to_have_count(1, timeout=15_000)
    assert card.inner_text().count("This recording answered option 2") == 1
    assert SENT not in card.inner_text()
    assert card.locator(".ja-option:enabled").count() == 3
    ui.shot("lab-04-allow-once-refused.png", ARTIFACTS_DIR, ui.cell(APPROVAL_CELL))
    _no_red(ui)
    ui.run(18)  # the tutorial's own answer: the old card shows it
    _check_old_card(ui, "lab-04-resumed-by-cell.png")
    ui.page.close()
