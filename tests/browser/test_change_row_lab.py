"""A sandboxed command's change row in JupyterLab: the held module is named on the card, a
click on Keep applies it (the file exists afterwards), a click on Undo reverts what the
command applied; light and dark screenshots go to ``test-artifacts/`` (docs/sandbox.md,
"Deciding on the card"). The harness fails the test on any console error of the page.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.fakes.openai_server import call, text, tool_calls

from .lab_harness import LabNotebook, lab_marks, lab_notebook
from .render_harness import ARTIFACTS_DIR
from .test_action_buttons_lab import _dark

pytestmark = [*lab_marks(600),
              pytest.mark.skipif(shutil.which("bwrap") is None, reason="no bubblewrap")]

KEY = "sk-test-key-changes-0123456789"
CELLS = ["%load_ext jupyter_agent",
         "%%toolloop --tools bash --approve bash --history 0\nWrite pyarrow.py and notes.txt."]
CELL = 1
MODULE = "a module the kernel could import"


@pytest.fixture(scope="module")
def nb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabNotebook]:
    with lab_notebook(tmp_path_factory.mktemp("changes"), "changes.ipynb", CELLS, KEY,
                      height=1100) as notebook:
        yield notebook


def _wait_for(predicate: Any, what: str, seconds: float = 30.0) -> None:
    end = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < end, what
        time.sleep(0.1)


def test_keep_and_undo_on_the_change_row(nb: LabNotebook) -> None:
    ui, root = nb.ui, nb.server.root
    nb.model.enqueue(
        tool_calls([call("bash", {"command": "echo 'VALUE = 7' > pyarrow.py && "
                                             "echo hi > notes.txt"}, id="b1")]),
        text("Wrote both."))
    ui.run(CELL)
    row = ui.cell(CELL).locator(".ja-changes")
    expect(row).to_contain_text(f"bash wrote pyarrow.py, {MODULE}: held", timeout=60_000)
    expect(row).to_contain_text("bash changed the workspace: 1 added (notes.txt)")
    assert not (root / "pyarrow.py").exists()  # held: nothing outside sees it
    assert (root / "notes.txt").exists()
    ui.page.mouse.move(0, 0)
    ui.shot("lab-light-changes-held.png", ARTIFACTS_DIR, ui.cell(CELL))
    row.locator("button.ja-change-keep").click()
    expect(row.locator(".ja-changes-done")).to_contain_text("Kept 1 held change(s)",
                                                            timeout=30_000)
    _wait_for(lambda: (root / "pyarrow.py").exists(), "Keep did not apply pyarrow.py")
    expect(row.locator("button.ja-change-keep")).to_have_count(0)  # decided: no second Keep
    expect(row).to_contain_text(f"bash wrote pyarrow.py, {MODULE}: kept")
    _dark(nb)
    ui.page.mouse.move(0, 0)
    ui.shot("lab-dark-changes-kept.png", ARTIFACTS_DIR, ui.cell(CELL))
    row.locator("button.ja-change-undo").click()
    expect(row.locator(".ja-changes-done").last).to_contain_text("Undid", timeout=30_000)
    _wait_for(lambda: not (root / "notes.txt").exists(), "Undo did not remove notes.txt")
    assert (root / "pyarrow.py").exists()  # the kept module is the person's now
    expect(row.locator("button")).to_have_count(0)
    expect(row).to_contain_text("1 added (notes.txt), undone")
    ui.shot("lab-dark-changes-undone.png", ARTIFACTS_DIR, ui.cell(CELL))


def test_a_row_whose_kernel_is_gone_names_the_command(nb: LabNotebook) -> None:
    """The kernel shut down with a decision open: a click on Keep reaches nothing, keeps
    nothing, and the card (drawn as a saved one, no button enabled) names the exact
    ``%agent keep ID`` to run from a new cell. Runs last: it ends the module's kernel."""
    ui, root = nb.ui, nb.server.root
    nb.model.enqueue(tool_calls([call("bash", {"command": "echo 'x = 1' > chardet.py"},
                                      id="b2")]), text("Wrote it."))
    ui.run(CELL)
    cell = ui.cell(CELL)
    row = cell.locator(".ja-changes")
    expect(row).to_contain_text(f"bash wrote chardet.py, {MODULE}: held", timeout=60_000)
    rid = row.get_attribute("data-record-id")
    ui.shut_down_kernel()
    ui.page.wait_for_timeout(1500)
    cell.locator("button.ja-change-keep").click()
    expect(cell.locator(".ja-kernel-gone, .ja-changes-waiting").first).to_contain_text(
        f"%agent keep {rid}", timeout=30_000)
    expect(cell.locator(".ja-changes")).to_contain_text(f"%agent keep {rid}")
    assert cell.locator(".ja-changes button:enabled").count() == 0
    assert not (root / "chardet.py").exists()
    ui.shot("lab-dark-changes-kernel-gone.png", ARTIFACTS_DIR, cell)
