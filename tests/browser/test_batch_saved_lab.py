"""A finished batch card in a saved notebook, reopened in a real JupyterLab with no kernel state.

While it runs, the batch card is a widget; when the batch ends its output becomes the static
bundle (the batch view as ``application/vnd.jupyter-agent.batch+json``, markdown, plain text).
The labextension's batch renderer draws that view, so a reopened notebook shows the card itself
(status, counts, results), not the markdown fallback, in the light and the dark theme.
Hostile saved payloads (HTML in answers, missing or mistyped fields, a huge results list, a
payload that is no view at all) are drawn escaped and capped, or fall back to the plain text.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import nbformat
import pytest

from jupyter_agent.view.batch import BATCH_MIME_TYPE, batch_bundle
from tests.fakes.openai_server import ScriptedOpenAI, text

from .lab_harness import (
    KERNELSPEC,
    TOKEN,
    LabPage,
    check_lab,
    lab_marks,
    start_lab,
    write_notebook,
)
from .render_harness import ARTIFACTS_DIR, launch_browser

pytestmark = lab_marks(420)

KEY = "sk-test-key-batch-saved-0123456789"
NOTEBOOK = "batch-saved.ipynb"
HOSTILE = "batch-hostile.ipynb"
ANSWER = 'Paid <img src=x onerror="window.pwned=1"><b>bold</b>'
SETUP = '%load_ext jupyter_agent\nrows = ["order 1", "order 2", "order 3"]'
BATCH = "%%chat --over rows --concurrency 2 --out results\nIs {item} paid?"
RENDERED = ".jp-RenderedJupyterAgentBatch > .ja-run.ja-batch"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


class Lab:
    def __init__(self, ui: LabPage, model: ScriptedOpenAI, errors: list[str]) -> None:
        self.ui = ui
        self.page = ui.page
        self.model = model
        self.errors = errors  # uncaught page errors: a renderer that throws shows up here


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    from playwright.sync_api import sync_playwright

    base = tmp_path_factory.mktemp("batch-saved-lab")
    with ScriptedOpenAI() as model, start_lab(base, {
        "OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": KEY,
        "JUPYTER_AGENT_HOME": str(base / "agent-home"),
    }) as server:
        check_lab(server)
        write_notebook(server.root / NOTEBOOK, [SETUP, BATCH])
        nbformat.write(_hostile_notebook(), server.root / HOSTILE)
        with sync_playwright() as p:
            browser = launch_browser(p)
            page = browser.new_page(viewport={"width": 1280, "height": 1200})
            page.set_default_timeout(30_000)
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            try:
                yield Lab(LabPage(page, server), model, errors)
            except BaseException:
                print(server.log_tail())
                raise
            finally:
                browser.close()


# ------------------------------------------------------------------------ hostile payloads
def _view(**over: Any) -> dict[str, Any]:
    """A finished batch view as ``batch/progress.py`` and ``batch/api.py`` build it."""
    view: dict[str, Any] = {
        "version": 1, "batch_id": "batch_x", "kind": "chat", "status": "done",
        "stop_reason": "", "total": 3, "rows": 3, "models": ["m"], "engine": "thread",
        "concurrency": 2, "counts": {"done": 3, "failed": 0, "running": 0, "waiting": 0,
                                     "ask": 0, "skipped": 0},
        "reused": 0, "input_tokens": 30, "output_tokens": 6, "cost": 0.0, "elapsed": 1.5,
        "rate": 120.0, "eta": None, "latest": [], "board": [],
        "preview": [{"row": n, "model": "m", "status": "done", "answer": "ok", "error": "",
                     "score": None} for n in (1, 2, 3)]}
    view.update(over)
    return view


def _output(data: dict[str, Any]) -> Any:
    return nbformat.v4.new_output("display_data", data=data)


HUGE = 5000
HOSTILE_CELLS: list[tuple[str, dict[str, Any]]] = [
    # HTML and script in every answer, a status and a model that try to be class names.
    ("html", batch_bundle(_view(
        kind="<i>chat</i>", total=HUGE, rows=HUGE,
        counts={"done": HUGE, "failed": 0, "running": 0, "waiting": 0, "ask": 0, "skipped": 0},
        preview=[{"row": n, "model": "<b>m</b>", "status": "done jp-mod-hidden",
                  "answer": f"{ANSWER} <script>window.pwned=2</script> {n}", "error": "",
                  "score": None} for n in range(1, HUGE + 1)],
        board=[{"model": "<img src=x onerror=window.pwned=3>", "items": HUGE, "done": HUGE,
                "failed": 0, "accuracy": 0.5, "cost": 0.0, "p50_seconds": 0.2,
                "p95_seconds": 0.4}] * 200))),
    # Every field missing.
    ("empty", {BATCH_MIME_TYPE: {}, "text/plain": "Batch finished: (empty)"}),
    # Every field of the wrong type.
    ("mistyped", {BATCH_MIME_TYPE: {
        "status": {"toString": "x"}, "counts": "lots", "total": "NaN", "rows": {"a": 1},
        "models": 3, "kind": ["chat"], "latest": "x", "preview": [1, None, {"row": {"x": 1}, "answer": 5}, [2]],
        "board": [None, 7, {"model": {"a": 1}, "items": "many", "accuracy": "high"}],
        "cost": "free", "elapsed": -1, "rate": None, "stop_reason": {"x": 1}},
        "text/plain": "Batch: mistyped"}),
    # No view at all: the plain text is shown.
    ("not-a-view", {BATCH_MIME_TYPE: ["not", "a", "view"],
                    "text/plain": "Batch finished: the plain-text fallback <b>here</b>"}),
]


def _hostile_notebook() -> Any:
    cells = []
    for name, data in HOSTILE_CELLS:
        cell = nbformat.v4.new_code_cell(f"# {name}")
        cell.outputs = [_output(data)]
        cells.append(cell)
    return nbformat.v4.new_notebook(cells=cells, metadata=KERNELSPEC)


# ------------------------------------------------------------------------------- helpers
def _wait_saved(path: Any, timeout: float = 20.0) -> dict[str, Any]:
    end = time.monotonic() + timeout
    while True:
        try:
            nb = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:  # caught while the server writes it
            nb = {"cells": [{}, {}]}
        outs = [o.get("data", {}) for o in nb["cells"][1].get("outputs", [])]
        found = [d for d in outs if BATCH_MIME_TYPE in d]
        if found and found[0][BATCH_MIME_TYPE].get("status") == "done":
            return found[0]
        assert time.monotonic() < end, f"the saved notebook has no finished batch: {outs}"
        time.sleep(0.2)


def _dark(lab: Lab) -> None:
    page = lab.page
    if page.evaluate("document.body.dataset.jpThemeLight") == "false":
        return
    page.locator(".lm-MenuBar-item", has_text="Settings").click()
    page.locator(".lm-Menu-item", has_text="Theme").first.hover()
    page.locator(".lm-Menu-item", has_text="JupyterLab Dark").first.click()
    page.wait_for_function("document.body.dataset.jpThemeLight === 'false'", timeout=30_000)
    page.wait_for_timeout(500)  # the theme's CSS variables settle (screenshots only)


def _open_alone(ui: LabPage, name: str) -> None:
    """Open ``name`` as the only notebook (``reset``: a fresh workspace), so cell locators
    cannot reach into a notebook another test left open."""
    ui.page.goto(f"{ui.lab.url}/lab/tree/{name}?reset&token={TOKEN}")
    ui.wait_ready()
    assert ui.page.locator(".jp-Notebook").count() == 1


def _shown(locator: Any) -> None:
    """Wait until ``locator`` is in the page, then scroll it into view (JupyterLab lays out
    cells far below the viewport lazily); the checks read ``text_content``, not layout."""
    locator.wait_for(state="attached")
    locator.scroll_into_view_if_needed()
    locator.wait_for()


def _luminance(card: Any) -> dict[str, float]:
    return card.evaluate("""e => {
        const rgb = s => s.match(/[\\d.]+/g).slice(0, 3).map(Number);
        const lum = ([r, g, b]) => (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255;
        const bg = getComputedStyle(document.querySelector('.jp-Notebook')).backgroundColor;
        return {fg: lum(rgb(getComputedStyle(e.querySelector('td')).color)), bg: lum(rgb(bg))};
    }""")


# --------------------------------------------------------------------------------- tests
def test_a_saved_batch_reopens_drawn_by_the_renderer(lab: Lab) -> None:
    ui, page = lab.ui, lab.page
    lab.model.reset()
    lab.model.default = text(ANSWER)
    _open_alone(ui, NOTEBOOK)
    ui.run(0)
    ui.run(1)
    # The finished card replaced the widget at once (a display update), drawn by the renderer.
    ui.cell(1).locator(RENDERED).wait_for()
    assert len(lab.model.requests) == 3
    ui.save()
    saved = _wait_saved(lab.ui.lab.root / NOTEBOOK)
    assert WIDGET_MIME not in saved  # the finished card needs no widget state
    assert saved[BATCH_MIME_TYPE]["counts"]["done"] == 3
    assert KEY not in (lab.ui.lab.root / NOTEBOOK).read_text(encoding="utf-8")

    ui.shut_down_kernel()
    end = time.monotonic() + 20
    while ui.lab.api("/api/kernels") and time.monotonic() < end:
        time.sleep(0.2)
    assert ui.lab.api("/api/kernels") == []
    ui.reload()  # the notebook reopens from disk, with a new kernel that never ran the batch

    card = ui.cell(1).locator(RENDERED)
    card.wait_for()
    assert card.locator('.ja-badge[data-status="done"]').inner_text() == "finished"
    assert card.locator(".ja-batch-done b").inner_text() == "3"
    assert card.locator(".ja-batch-failed b").inner_text() == "0"
    assert "chat over 3 rows" in card.locator(".ja-header").inner_text()
    rows = card.locator("tr.ja-batch-item")
    assert rows.count() == 3
    cells = rows.first.locator("td").all_inner_texts()
    assert cells[0] == "1" and cells[2] == "done", cells
    # The model's HTML is text: shown as typed, never parsed.
    assert "<img" in cells[3] and "<b>bold</b>" in cells[3], cells
    assert card.locator("td img, td b").count() == 0
    assert page.evaluate("window.pwned === undefined")
    # Not the markdown fallback, and no widget placeholder.
    assert ui.cell(1).locator(".jp-RenderedMarkdown").count() == 0
    assert "Error displaying widget" not in ui.cell(1).inner_text()
    assert lab.errors == []

    ui.shot("lab-batch-saved-light.png", ARTIFACTS_DIR, ui.cell(1))
    light = _luminance(card)
    _dark(lab)
    ui.shot("lab-batch-saved-dark.png", ARTIFACTS_DIR, ui.cell(1))
    dark = _luminance(card)
    print("\nbatch card luminance, light:", light, "dark:", dark)
    assert light["bg"] > 0.7 and light["fg"] < 0.4, light
    assert dark["bg"] < 0.3 and dark["fg"] > 0.6, dark


def test_hostile_saved_payloads_render_safely_or_fall_back(lab: Lab) -> None:
    ui, page = lab.ui, lab.page
    _open_alone(ui, HOSTILE)
    cell = {name: ui.cell(n) for n, (name, _) in enumerate(HOSTILE_CELLS)}

    html = cell["html"].locator(RENDERED)
    _shown(html)
    rows = html.locator("tr.ja-batch-item")
    assert rows.count() == 50  # capped: 5,000 results would stall the page
    assert "4,950 more not shown" in html.text_content()
    assert rows.first.locator("td").nth(3).text_content().startswith("Paid <img")
    # A status that is not an item status gives no class of its own (no "jp-mod-hidden").
    assert html.locator(".jp-mod-hidden").count() == 0
    assert rows.first.evaluate("e => e.className") == "ja-batch-item ja-batch-item-other"
    assert "<i>chat</i>" in html.locator(".ja-agent").text_content()
    board = html.locator("table.ja-batch-table").nth(1)
    assert board.locator("tr").count() == 1 + 50 + 1  # head, capped rows, "more"
    assert html.locator("img, script, i").count() == 0
    assert page.evaluate("window.pwned === undefined")

    empty = cell["empty"].locator(RENDERED)
    _shown(empty)
    assert empty.locator(".ja-badge").text_content() == "unknown"  # no status: not "finished"
    assert empty.locator(".ja-batch-done b").text_content() == "0"

    mistyped = cell["mistyped"].locator(RENDERED)
    _shown(mistyped)
    assert "[object Object]" not in mistyped.text_content()
    assert mistyped.locator("tr.ja-batch-item").count() == 1  # the one object in the list
    assert mistyped.locator("tr.ja-batch-item td").all_text_contents()[3] == "5"

    fallback = cell["not-a-view"]
    _shown(fallback.locator(".jp-RenderedJupyterAgentBatch"))
    assert fallback.locator(RENDERED).count() == 0
    text_out = fallback.locator(".jp-RenderedJupyterAgentBatch pre")
    assert text_out.text_content() == "Batch finished: the plain-text fallback <b>here</b>"
    assert fallback.locator(".jp-OutputArea b").count() == 0
    assert lab.errors == []
    _dark(lab)
    html.locator(".ja-header").scroll_into_view_if_needed()
    ui.shot("lab-batch-hostile-dark.png", ARTIFACTS_DIR)
