"""The live notebook in a real JupyterLab (this checkout's extension), headless Chromium, the
scripted model: an edit typed into a cell and NOT saved is what ``read_cells`` /
``read_notebook`` return to the model, named as the live notebook, while the file on disk
still holds the old text; after *Kernel > Restart Kernel* and the setup cell run again, the new
kernel gets a fresh comm and the next unsaved edit is read the same way; a reloaded page finds
the set-up kernel and opens its own comm."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls

from .lab_harness import LabNotebook, LabPage, lab_marks, lab_notebook

pytestmark = lab_marks(420)

KEY = "sk-test-key-live-cells-0123456789"
NOTEBOOK = "live-cells.ipynb"
SAVED = "total = 1 + 1"
CELLS = [
    "%load_ext jupyter_agent",
    SAVED,
    "%%toolloop --notebook --history 0\nWhat does cell 2 compute?",
]
# Autosave off: the edit must stay unsaved for as long as the test runs.
_NO_AUTOSAVE = ("@jupyterlab/docmanager-extension/plugin.jupyterlab-settings",
                {"autosave": False})


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabNotebook]:
    base = tmp_path_factory.mktemp("live-cells-lab")
    settings = base / "settings" / _NO_AUTOSAVE[0]
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps(_NO_AUTOSAVE[1]), encoding="utf-8")
    with lab_notebook(base, NOTEBOOK, CELLS, KEY, height=1200) as nb:
        yield nb


def type_at_end(ui: LabPage, index: int, typed: str) -> None:
    """Type ``typed`` at the end of cell ``index``'s source (nothing is saved)."""
    ui.cell(index).locator(".jp-InputArea-editor").click()
    ui.page.keyboard.press("Control+End")
    ui.page.keyboard.type(typed)
    ui.page.keyboard.press("Escape")


def wait_requests(model: ScriptedOpenAI, n: int, timeout: float = 90.0) -> None:
    """Wait until the model received ``n`` requests (a condition, not a sleep)."""
    deadline = time.monotonic() + timeout
    while len(model.requests) < n:
        assert time.monotonic() < deadline, f"{len(model.requests)} of {n} model requests"
        time.sleep(0.1)


def tool_result(request: dict[str, Any], call_id: str) -> str:
    """The content of the tool message answering ``call_id`` in one recorded request."""
    found = [m["content"] for m in request["messages"]
             if m.get("role") == "tool" and m.get("tool_call_id") == call_id]
    assert len(found) == 1, request["messages"]
    content = found[0]
    return content if isinstance(content, str) else json.dumps(content)


def ask_and_read(nb: LabNotebook, tool: str, args: dict[str, Any], call_id: str) -> str:
    """Run the toolloop cell with a model that calls ``tool`` once; its result as the model
    saw it."""
    before = len(nb.model.requests)
    nb.model.enqueue(tool_calls([call(tool, args, id=call_id)]), text("It adds numbers."))
    nb.ui.start(2)
    wait_requests(nb.model, before + 2)
    nb.ui.wait_ready()  # the cell ended: the kernel is idle again
    return tool_result(nb.model.requests[before + 1], call_id)


def saved_sources(nb: LabNotebook) -> list[str]:
    saved = json.loads((nb.server.root / NOTEBOOK).read_text(encoding="utf-8"))
    return ["".join(c["source"]) if isinstance(c["source"], list) else c["source"]
            for c in saved["cells"]]


def test_an_unsaved_edit_is_what_the_agent_reads_and_survives_a_restart(
        lab: LabNotebook) -> None:
    nb, ui = lab, lab.ui
    edit = "  # UNSAVED-EDIT-ONE"
    type_at_end(ui, 1, edit)
    out = ask_and_read(nb, "read_cells", {"start": 2}, "c_read1")
    assert out.startswith("Cells from live notebook live-cells.ipynb (unsaved edits included):")
    assert f"{SAVED}{edit}" in out
    # The file on disk never had the edit: the tool read the front end, not the file.
    assert saved_sources(nb)[1] == SAVED

    # Kernel > Restart Kernel…, confirmed; the setup cell run again opens a fresh comm.
    ui.page.locator(".lm-MenuBar-item", has_text="Kernel").click()
    ui.page.locator(".lm-Menu-item", has_text="Restart Kernel…").first.click()
    ui.page.locator(".jp-Dialog .jp-mod-accept").click()
    ui.wait_ready()
    ui.run(0)
    second = "  # UNSAVED-EDIT-TWO"
    type_at_end(ui, 1, second)
    out = ask_and_read(nb, "read_notebook", {}, "c_read2")
    assert out.startswith("Notebook from live notebook live-cells.ipynb "
                          "(unsaved edits included): 3 cells.")
    assert f"{SAVED}{edit}{second}" in out
    # The cell's own source as sent just before it ran, and the setup cell's new count.
    assert "What does cell 2 compute?" in out and "--- cell 1 (code, executed [1]) ---" in out
    assert saved_sources(nb)[1] == SAVED


def test_a_reloaded_page_opens_its_own_comm_to_the_set_up_kernel(lab: LabNotebook) -> None:
    nb, ui = lab, lab.ui
    kernels = nb.server.api("/api/kernels")
    ui.reload()  # unsaved edits are dropped; the page reconnects to the same kernel
    assert [k["id"] for k in nb.server.api("/api/kernels")] == [k["id"] for k in kernels]
    edit = "  # UNSAVED-AFTER-RELOAD"
    type_at_end(ui, 1, edit)
    # No setup cell run: the page asked the kernel which comms are open and opened its own.
    out = ask_and_read(nb, "read_cells", {"start": 1, "end": 2}, "c_read3")
    assert out.startswith("Cells from live notebook live-cells.ipynb (unsaved edits included):")
    assert f"{SAVED}{edit}" in out and "UNSAVED-EDIT-ONE" not in out
    assert saved_sources(nb)[1] == SAVED
