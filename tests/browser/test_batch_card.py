"""The batch card (batch.js) in a real headless Chromium, from states the engine produces.

The page loads the cards' module exactly as the kernel ships it (``ui/shared.py``'s ``BUNDLE``)
and draws its batch card with a fake widget model that records the messages the card sends.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.batch.progress import Progress
from jupyter_agent.batch.spec import Item
from jupyter_agent.ui.shared import BUNDLE

from .render_harness import (
    ARTIFACTS_DIR,
    DARK_THEME_CSS,
    INJECTION,
    STATIC_DIR,
    chromium_path,
    launch_browser,
    serve,
)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(chromium_path() is None, reason="no system Chromium"),
]

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><link rel="icon" href="data:,"><link rel="stylesheet" href="run.css">
<link rel="stylesheet" href="batch.css"></head>
<body style="margin:16px;max-width:900px"><div id="card"></div>
<script type="module">
import cards from "./bundle.js";
const widget = cards.batch;
const view = await (await fetch("view.json")).json();
window.sent = [];
// What the JupyterLab extension would hear: the stop event, caught where it bubbles to.
window.events = [];
document.addEventListener("jupyter-agent-stop", (e) => window.events.push(
  { detail: e.detail, fromCard: document.getElementById("card").contains(e.target) }));
const handlers = [];
const model = {
  get: (k) => (k === "view" ? window.currentView : undefined),
  on: (_e, f) => handlers.push(f), off: () => {},
  send: (msg) => window.sent.push(msg),
};
window.currentView = view;
window.update = (v) => { window.currentView = v; handlers.forEach((f) => f()); };
widget.render({ model, el: document.getElementById("card") });
window.ready = true;
</script></body></html>
"""


def _view(status: str = "running") -> dict[str, Any]:
    p = Progress(batch_id="b", kind="toolloop", total=10, models=["m1", "m2"], rows=5,
                 concurrency=4, engine="thread")
    for n, (state, answer) in enumerate([("done", "billing"), ("error", ""),
                                         ("done", INJECTION)]):
        p.started()
        p.finished(Item(position=n, row=n, model="m1", prompt="p", key="k"),
                   {"status": state, "answer": answer, "error": "HTTP 500" if not answer else None,
                    "input_tokens": 10, "output_tokens": 2, "cost": 0.001, "seconds": 0.5,
                    "run_id": f"run_{n}"})
    p.started()
    if status != "running":
        p.skip_rest()
        p.close(status, "Stopped after 4 items (the item limit); run again to continue.")
    return p.view()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = launch_browser(p)
        yield b
        b.close()


def _open(browser: Any, tmp_path: Path, view: dict[str, Any]) -> Any:
    for name in ("run.css", "batch.css"):
        shutil.copy(STATIC_DIR / name, tmp_path / name)
    shutil.copy(BUNDLE, tmp_path / "bundle.js")
    (tmp_path / "view.json").write_text(json.dumps(view), encoding="utf-8")
    (tmp_path / "index.html").write_text(PAGE, encoding="utf-8")
    server = serve(tmp_path)
    url = server.__enter__()
    page = browser.new_page(viewport={"width": 960, "height": 800})
    page.dialogs = []
    page.on("dialog", lambda d: (page.dialogs.append(d.message), d.dismiss()))
    page.goto(url + "index.html")
    page.wait_for_function("window.ready === true")
    page._server = server  # closed with the page's test
    return page


def test_the_live_card_counts_and_stops(browser: Any, tmp_path: Path) -> None:
    page = _open(browser, tmp_path, _view())
    counts = page.inner_text(".ja-batch-counts")
    for words in ("2 done", "1 failed", "1 running", "6 waiting"):
        assert words in counts
    assert "Batch: toolloop over 5 rows × 2 models" in page.inner_text(".ja-header")
    rows = page.locator(".ja-batch-item")
    assert rows.count() == 3 and "HTTP 500" in rows.nth(1).inner_text()
    assert INJECTION in rows.nth(2).inner_text()  # model text stays text
    assert page.locator("img").count() == 0 and page.dialogs == []

    page.click("text=Stop (let running items finish)")
    page.click("text=Stop (let running items finish)", force=True)  # disabled: nothing sent
    page.click("text=Stop now (abort running items)")
    assert page.evaluate("window.sent") == [{"type": "stop", "mode": "finish"},
                                           {"type": "stop", "mode": "abort"}]
    # The engine's next state redraws the card; a finished batch has no buttons.
    page.evaluate("v => window.update(v)", _view("stopped"))
    page.wait_for_function("document.querySelectorAll('.ja-batch-stop').length === 0")
    assert "not run" in page.inner_text(".ja-batch-counts")
    assert "item limit" in page.inner_text(".ja-warning")
    page.close()
    page._server.__exit__(None, None, None)


def _stop_event(interrupts: int) -> dict[str, Any]:
    return {"detail": {"batch": True, "interrupts": interrupts}, "fromCard": True}


def test_stop_now_asks_the_extension_for_two_interrupts(browser: Any, tmp_path: Path) -> None:
    """During a ``%%toolloop --over`` cell the widget message waits for the cell to end: the
    kernel hears the stop only as interrupts, and the coordinator aborts on the second."""
    page = _open(browser, tmp_path, _view())
    page.click("text=Stop now (abort running items)")
    assert page.evaluate("window.events") == [_stop_event(2)]
    assert page.evaluate("window.sent") == [{"type": "stop", "mode": "abort"}]
    # After an abort both buttons are spent: clicks (forced) dispatch and send nothing more.
    page.click("text=Stop (let running items finish)", force=True)
    page.click("text=Stop now (abort running items)", force=True)
    assert page.evaluate("window.events") == [_stop_event(2)]
    assert len(page.evaluate("window.sent")) == 1
    page.close()
    page._server.__exit__(None, None, None)


def test_finish_then_abort_is_one_interrupt_each(browser: Any, tmp_path: Path) -> None:
    """The coordinator counts interrupts: a finish already sent one, so the abort adds one."""
    page = _open(browser, tmp_path, _view())
    page.click("text=Stop (let running items finish)")
    page.click("text=Stop (let running items finish)", force=True)  # a double click
    assert page.evaluate("window.events") == [_stop_event(1)]
    # A progress update redraws the card between the clicks: the count survives it.
    page.evaluate("v => window.update(v)", _view())
    page.wait_for_timeout(100)
    page.click("text=Stop now (abort running items)")
    assert page.evaluate("window.events") == [_stop_event(1), _stop_event(1)]
    assert page.evaluate("window.sent") == [{"type": "stop", "mode": "finish"},
                                           {"type": "stop", "mode": "abort"}]
    page.close()
    page._server.__exit__(None, None, None)


def test_a_click_whose_press_and_release_straddle_a_redraw_still_stops(
        browser: Any, tmp_path: Path) -> None:
    """The live card redraws several times a second while the batch runs; a click is a press
    and a release. A redraw between the two must not lose the stop (the row is kept)."""
    page = _open(browser, tmp_path, _view())
    box = page.locator("text=Stop (let running items finish)").bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    for _ in range(3):  # the engine's next states arrive while the button is held
        page.evaluate("v => window.update(v)", _view())
        page.evaluate("() => new Promise(r => requestAnimationFrame(() => r()))")
    page.mouse.up()
    assert page.evaluate("window.sent") == [{"type": "stop", "mode": "finish"}]
    assert page.locator(".ja-batch-stop").count() == 1  # one row, not one per redraw
    assert page.locator(".ja-batch-counts").count() == 1
    page.close()
    page._server.__exit__(None, None, None)


def test_the_card_shows_the_judge_and_the_cached_rounds(browser: Any, tmp_path: Path) -> None:
    view = _view("done")
    view["cached"], view["saved"] = 3, 0.0123
    view["judge"] = {"criteria": "c", "model": INJECTION, "scale": 5, "judged": 2, "mean": 4.5,
                     "invalid": 1, "failed": 2, "calls": 4, "cost": 0.002, "input_tokens": 1,
                     "output_tokens": 1,
                     "pairwise": {"a": "m1", "b": "m2", "wins_a": 2, "wins_b": 1, "ties": 1,
                                  "compared": 4, "win_rate_a": 0.625}}
    page = _open(browser, tmp_path, view)
    judge = page.inner_text(".ja-batch-judge")
    assert "mean 4.50/5 over 2 answers" in judge and "1 off-scale" in judge
    assert "· 2 failed" in judge  # judge calls that got no answer are not called off-scale
    # Plurals right (issue 37: "1 losses"); calls sent apart from cached ones.
    assert "m1 vs m2: 2 wins, 1 loss, 1 tie (win rate 63%)" in judge
    assert "4 calls sent" in judge
    assert INJECTION in judge and page.locator("img").count() == 0  # a name stays text
    assert "3 answers from the cache, not sent (saved 0.0123)" in page.inner_text(".ja-footer")
    page.close()
    page._server.__exit__(None, None, None)
    # A fully cached, unpriced judge: nothing sent, cost unknown (not "4 calls", not 0).
    view["judge"].update(cached=4, priced=False, cost=None)
    view["cost"], view["saved"] = None, None
    (tmp_path / "unpriced").mkdir()
    page = _open(browser, tmp_path / "unpriced", view)
    judge = page.inner_text(".ja-batch-judge")
    assert "4 calls from the cache, none sent" in judge and "4 calls sent" not in judge
    assert "cost unknown: set a price in the profile" in judge and "0.0000" not in judge
    footer = page.inner_text(".ja-footer")
    assert "saved unknown: set a price in the profile" in footer and "saved 0" not in footer
    page.close()
    page._server.__exit__(None, None, None)


def test_the_results_table_shows_each_row_s_judge_score(browser: Any, tmp_path: Path) -> None:
    view = _view("done")
    view["judge"] = {"criteria": "c", "model": "m1", "scale": 5, "judged": 2, "mean": 4.5,
                     "invalid": 1, "failed": 0, "calls": 3, "cost": 0.002}
    view["preview"] = [
        {"row": 1, "model": "m1", "status": "done", "answer": "billing", "error": None,
         "score": None, "judge": 5},
        {"row": 2, "model": "m1", "status": "error", "answer": None, "error": "HTTP 500",
         "score": None, "judge": None},
        {"row": 3, "model": "m1", "status": "done", "answer": INJECTION, "error": None,
         "score": None, "judge": 4}]
    page = _open(browser, tmp_path, view)
    head = page.locator(".ja-batch-table th").all_inner_texts()
    assert head == ["row", "model", "status", "answer", "judge"]
    assert page.locator(".ja-batch-judge-score").all_inner_texts() == ["5", "–", "4"]
    for name in ("light", "dark"):
        if name == "dark":
            page.evaluate("css => document.head.insertAdjacentHTML('beforeend', "
                          "`<style>${css}</style>`)", DARK_THEME_CSS)
        page.locator("#card").screenshot(path=str(ARTIFACTS_DIR / f"batch-judge-{name}.png"))
    # Without a judge the table has no such column.
    for row in view["preview"]:
        del row["judge"]
    page.evaluate("v => window.update(v)", view)
    page.wait_for_function("document.querySelectorAll('.ja-batch-judge-score').length === 0")
    assert "judge" not in page.locator(".ja-batch-table th").all_inner_texts()
    page.close()
    page._server.__exit__(None, None, None)
