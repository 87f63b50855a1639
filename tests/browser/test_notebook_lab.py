"""``%%toolloop --notebook`` in a real JupyterLab (this checkout's extension), headless
Chromium, the scripted model: the model asks to run code in the kernel; the approval card
shows it highlighted; after *Allow once* the code runs in the kernel (the next cell sees its
variable) and its figure shows on the tool card; the proposed cell's *Insert below* puts a new
cell under the agent's cell, once, however often it is clicked."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls

from .lab_harness import LabPage, insert_below, lab_marks, lab_notebook
from .render_harness import ARTIFACTS_DIR

pytestmark = lab_marks(420)

KEY = "sk-test-key-notebook-0123456789"
NOTEBOOK = "notebook-tools.ipynb"
CODE = ("import matplotlib.pyplot as plt\n"
        "growth = {k: v[-1] - v[0] for k, v in sales.items()}\n"
        "plt.bar(list(growth), list(growth.values()))\nplt.title('growth')\ngrowth")
PROPOSED = "plt.bar(list(growth), list(growth.values()))"
CELLS = [
    "%load_ext jupyter_agent\nsales = {'north': [10, 12], 'south': [8, 15]}",
    "%%toolloop --notebook --history 0\nWhich region grew fastest? Make a chart.",
    "print(sorted(growth.items()))",
]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LabPage, ScriptedOpenAI]]:
    base = tmp_path_factory.mktemp("notebook-lab")
    with lab_notebook(base, NOTEBOOK, CELLS, KEY, height=1400) as nb:
        yield nb.ui, nb.model


def test_run_python_approval_figure_and_insert_below(lab: tuple[LabPage, ScriptedOpenAI]
                                                     ) -> None:
    ui, model = lab
    model.enqueue(tool_calls([call("run_python", {"code": CODE}, id="c_run")]))
    ui.run(1)
    cell = ui.cell(1)
    ask = cell.locator(".ja-widget .ja-ask-approval")
    ask.wait_for()
    assert "Run this code in the kernel?" in ask.inner_text()
    code = ask.locator(".ja-code")
    assert code.inner_text() == CODE
    assert "import" in code.locator(".ja-c-keyword").all_inner_texts()
    ui.shot("lab-notebook-approval.png", ARTIFACTS_DIR, cell)
    model.enqueue(tool_calls([call("insert_cell", {"source": PROPOSED,
                                                   "explanation": "The growth chart."},
                                   id="c_cell")]),
                  text("South grew fastest (+7)."))
    ask.locator('.ja-option[data-index="1"]').click()
    # Once the run ends, the saved output (the extension's renderer) replaces the widget.
    run = cell.locator(".ja-run")
    run.locator('.ja-badge[data-status="done"]').wait_for(timeout=60_000)
    img = run.locator(".ja-figure-img")
    assert img.count() == 1 and img.evaluate("i => i.complete && i.naturalWidth > 100")
    assert "title 'growth'" in run.locator(".ja-figure figcaption").inner_text()
    insert_below(ui, run, PROPOSED, 2)
    ui.shot("lab-notebook-inserted.png", ARTIFACTS_DIR, ui.page.locator(".jp-Notebook"))
    # The code ran in the kernel: the user's next cell (now index 3) sees its variable.
    ui.run(3)
    out = ui.cell(3).locator(".jp-OutputArea-output").inner_text()
    assert "[('north', 2), ('south', 7)]" in out
