"""The notebook tools' cards, drawn by the shared front-end code in headless Chromium: the
``run_python`` approval shows the code highlighted (and never as markup), a figure shows as an
image, and a proposed cell's *Insert below* hands the cell to the notebook extension once, or
without one copies it to the clipboard and says so."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.base.events import (
    AskPending,
    CellProposed,
    RoundStarted,
    RunStarted,
    ToolCalled,
    ToolFigures,
    ToolReturned,
)
from jupyter_agent.view.reduce import reduce_events

from .render_harness import chromium_path, launch_browser, serve, write_page

pytestmark = [
    pytest.mark.browser,
    pytest.mark.timeout(120),
    pytest.mark.skipif(chromium_path() is None, reason="no system Chromium"),
]

CODE = "import pandas as pd\n# growth\nprint('<img src=x onerror=alert(1)>', 42)"
PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJ"
       "RU5ErkJggg==")


@pytest.fixture()
def page(tmp_path: Path) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    events = [
        RunStarted(run_id="run-nb", agent="toolloop", model="gpt-test"), RoundStarted(round=1),
        ToolCalled(round=1, call_id="c_fig", name="run_python", arguments=json.dumps({"code": "plot()"})),
        ToolReturned(round=1, call_id="c_fig", name="run_python", output="[figure 1: 1x1 PNG]"),
        ToolFigures(round=1, call_id="c_fig", figures=[
            {"index": 1, "png": PNG, "width": 1, "height": 1, "description": "[figure 1: 1x1 PNG]"},
            {"index": 2, "png": "\"><script>", "width": 1, "height": 1, "description": "bad"}]),
        ToolCalled(round=1, call_id="c_cell", name="insert_cell",
                   arguments=json.dumps({"source": "df.plot()"})),
        ToolReturned(round=1, call_id="c_cell", name="insert_cell", output="Proposed."),
        CellProposed(round=1, call_id="c_cell", proposal={
            "id": "cell-1", "source": "df.plot()", "kind": "code", "explanation": "The chart.",
            "status": "proposed"}),
        ToolCalled(round=1, call_id="c_run", name="run_python", arguments=json.dumps({"code": CODE})),
        ToolReturned(round=1, call_id="c_run", name="run_python", output="Waiting for approval."),
        AskPending(call_id="c_run", kind="approval", question="Run this code in the kernel?",
                   options=["Allow once", "Allow for this session", "Deny"], allow_other=False,
                   detail={"tool": "run_python", "arguments": {"code": CODE}, "code": CODE,
                           "display": {"code": "python"}}),
    ]
    write_page(tmp_path / "p", reduce_events(events), live=True)
    with serve(tmp_path) as url, sync_playwright() as p:
        browser = launch_browser(p)
        pg = browser.new_page(permissions=["clipboard-read", "clipboard-write"])
        pg.goto(f"{url}p/index.html")
        pg.wait_for_function("window.ready === true")
        yield pg
        browser.close()


def test_code_figures_and_insert_below(page: Any) -> None:
    ask = page.locator(".ja-ask-approval")
    assert "Run this code in the kernel?" in ask.inner_text()
    code = ask.locator(".ja-code")
    assert code.count() == 1 and code.inner_text() == CODE  # shown once, exactly
    assert code.locator(".ja-c-keyword").all_inner_texts()[:2] == ["import", "as"]
    assert code.locator(".ja-c-comment").inner_text() == "# growth"
    assert code.locator(".ja-c-builtin").inner_text() == "print"
    assert page.locator(".ja-run img:not(.ja-figure-img)").count() == 0  # never markup
    assert "display" not in ask.inner_text().lower().split()  # the hint is not a row
    figs = page.locator(".ja-figure")
    assert figs.count() == 2 and figs.locator("img").count() == 1  # a bad PNG: no image
    assert figs.first.locator("img").evaluate("i => i.complete && i.naturalWidth") == 1
    proposal = page.locator(".ja-proposal")
    assert "The chart." in proposal.inner_text()
    # Without the extension: the code goes to the clipboard, once, and the card says so.
    proposal.locator(".ja-insert").click()
    assert page.evaluate("navigator.clipboard.readText()") == "df.plot()"
    assert "copied to the clipboard" in proposal.locator(".ja-proposal-actions").inner_text()
    assert proposal.locator("button").count() == 0
    # With an extension that takes the event: inserted, one event however often it is clicked.
    page.evaluate("""async () => {
        const { renderRun } = await import("./render.js");
        window.inserted = [];
        document.addEventListener("jupyter-agent-insert-cell", e => {
            window.inserted.push(e.detail); e.preventDefault(); });
        const el = document.createElement("div");
        document.body.appendChild(el);
        renderRun(el, window.view, {onAction: () => {}});
        const btn = el.querySelector(".ja-insert");
        btn.click(); btn.click();
        window.lastEl = el;
    }""")
    assert page.evaluate("window.inserted") == [
        {"id": "cell-1", "source": "df.plot()", "kind": "code"}]
    assert "Inserted below." in page.evaluate(
        "window.lastEl.querySelector('.ja-proposal-actions').textContent")
    # Discard on a fresh card: no event, the buttons go.
    page.evaluate("""async () => {
        const { renderRun } = await import("./render.js");
        const el = document.createElement("div");
        document.body.appendChild(el);
        renderRun(el, window.view, {onAction: () => {}});
        el.querySelector(".ja-discard").click();
        window.discardEl = el;
    }""")
    assert page.evaluate("window.inserted.length") == 1
    assert page.evaluate("window.discardEl.querySelector('.ja-proposal-actions').textContent") \
        == "Discarded."
