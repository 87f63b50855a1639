"""``%%toolloop --acp`` in a real JupyterLab (headless Chromium): the card shows the external
ACP agent's plan, its tool rows and its permission with the agent's own three options; a click
on option 2 sends that option and the run streams on into the same card. The shipped scripted
agent (``jupyter_agent/acp/demo_agent.py``) is the agent. Screenshots go to
``test-artifacts/`` (and ``$JUPYTER_AGENT_SCREENS`` when set).

Fails before ``--acp`` existed (the flag was unknown: the cell errors, no card)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from .lab_harness import LabPage, lab_marks, lab_notebook
from .render_harness import ARTIFACTS_DIR

pytestmark = lab_marks(420)

LIVE = ".ja-widget .ja-run"
SETUP = '''%load_ext jupyter_agent
import sys
from pathlib import Path
Path("notes.txt").write_text("Ship on Friday.\\nCall the venue.\\nBook the room.\\n")
AGENT = [sys.executable, "-m", "jupyter_agent.acp.demo_agent"]
'''
CELLS = [SETUP, "%%toolloop --acp AGENT\nSummarise notes.txt into summary.txt"]


@pytest.fixture(scope="module")
def ui(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LabPage, Path]]:
    base = tmp_path_factory.mktemp("acp-lab")
    with lab_notebook(base, "acp.ipynb", CELLS, "sk-test-key-acp-0123456789") as nb:
        yield nb.ui, nb.server.root


def _shot(ui: LabPage, name: str) -> None:
    ui.shot(name, ARTIFACTS_DIR, ui.cell(1))
    extra = os.environ.get("JUPYTER_AGENT_SCREENS")
    if extra:
        ui.shot(name, Path(extra), ui.cell(1))


def test_the_card_shows_the_agents_plan_tools_and_options_and_a_click_answers(
        ui: tuple[LabPage, Path]) -> None:
    page, root = ui
    page.run(1)
    card = page.cell(1).locator(LIVE)
    ask = card.locator(".ja-ask-approval")
    ask.wait_for(timeout=60_000)
    options = [" ".join(t.split()) for t in ask.locator(".ja-option").all_inner_texts()]
    assert len(options) == 3 and "Always allow notes" in options[1], options
    text = card.inner_text()
    assert "Read notes.txt" in text and "Write summary.txt" in text  # the plan's steps
    assert "fs/read_text_file" in text  # the client's own fs call, a tool row
    assert card.locator(".ja-plan-head").count() >= 1
    _shot(page, "acp-permission.png")
    assert not (root / "summary.txt").exists()

    ask.locator('.ja-option[data-index="2"]').click()
    page.cell(1).locator('.ja-badge[data-status="done"]').first.wait_for(timeout=60_000)
    assert (root / "summary.txt").read_text() == "3 lines of notes."
    assert "option id always" in page.cell(1).inner_text()
    _shot(page, "acp-answered.png")
