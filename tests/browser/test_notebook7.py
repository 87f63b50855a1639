"""The same extension in Notebook 7 (the `notebook` package's UI on the same server), headless
Chromium, the scripted model: a ``%%toolloop --notebook`` cell reads the live notebook (an
edit typed and not saved is what ``read_cells`` returns, named as the live notebook), its
approval card works, the finished run is drawn by the extension's renderer, and the proposed
cell's *Insert below* puts a new cell under the agent's cell, once."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.fakes.openai_server import call, text, tool_calls

from .lab_harness import LabNotebook, insert_below, lab_marks, lab_notebook
from .render_harness import ARTIFACTS_DIR

pytestmark = lab_marks(300)

notebook_app = pytest.importorskip("notebook", reason="Notebook 7 is in the test extra")

KEY = "sk-test-key-notebook7-0123456789"
NOTEBOOK = "nb7.ipynb"
EDIT = "  # edited in Notebook 7, not saved"
PROPOSED = "print(sorted(sales))"
RUN = "sum(sales['north']) * 2"
CELLS = [
    "%load_ext jupyter_agent\nsales = {'north': [10, 12], 'south': [8, 15]}",
    "total = sum(sales['north'])",
    "%%toolloop --notebook --history 0\nWhat does cell 2 compute? Then run it.",
]


@pytest.fixture(scope="module")
def nb7(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabNotebook]:
    base = tmp_path_factory.mktemp("notebook7")
    with lab_notebook(base, NOTEBOOK, CELLS, KEY, height=1300, shell="notebook") as nb:
        yield nb


def _tool_results(request: dict[str, Any]) -> list[str]:
    return [m["content"] for m in request["messages"] if m.get("role") == "tool"]


def test_live_cells_approval_and_insert_below_in_notebook7(nb7: LabNotebook) -> None:
    ui, model = nb7.ui, nb7.model
    assert ui.page.locator(".jp-NotebookPanel").count() == 1
    assert ui.page.locator("#jp-main-statusbar").count() == 0  # not JupyterLab's shell
    # An edit typed into cell 2 and not saved.
    ui.cell(1).locator(".jp-InputArea-editor").click()
    ui.page.keyboard.press("Control+End")
    ui.page.keyboard.type(EDIT)
    ui.page.keyboard.press("Escape")
    model.enqueue(tool_calls([call("read_cells", {"start": 2, "end": 2}, id="c_read")]),
                  tool_calls([call("run_python", {"code": RUN}, id="c_run")]))
    ui.run(2)
    cell = ui.cell(2)
    ask = cell.locator(".ja-widget .ja-ask-approval")
    ask.wait_for()
    assert "Run this code in the kernel?" in ask.inner_text()
    assert ask.locator(".ja-code").inner_text() == RUN
    ui.shot("nb7-approval.png", ARTIFACTS_DIR, cell)

    # The model read the notebook as it is on screen, not as saved.
    (read,) = _tool_results(model.requests[1])
    assert EDIT.strip() in read and "live notebook" in read
    saved = json.loads((nb7.server.root / NOTEBOOK).read_text(encoding="utf-8"))
    assert EDIT.strip() not in "".join(saved["cells"][1]["source"])

    model.enqueue(tool_calls([call("insert_cell", {"source": PROPOSED,
                                                   "explanation": "Show the regions."},
                                   id="c_cell")]),
                  text("Cell 2 sums the north figures: 22; doubled, 44."))
    ask.locator('.ja-option[data-index="1"]').click()
    run = cell.locator(".ja-run")
    run.locator('.ja-badge[data-status="done"]').wait_for(timeout=60_000)
    # The kernel ran the approved code: the model saw its value.
    results = _tool_results(model.requests[-1])
    assert "44" in results[1] and "Error" not in results[1], results[1]

    insert_below(ui, run, PROPOSED, 3)
    ui.shot("nb7-inserted.png", ARTIFACTS_DIR, ui.page.locator(".jp-Notebook"))
