"""A notebook ``make demo`` executed opens "Trusted" in Notebook 7 (issue #22: every demo
notebook showed "Not Trusted"): the demo signs what it ran into the Jupyter data folder the
server reads. Screenshots of the toolbar, light and dark, go to ``test-artifacts/``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from jupyter_agent.edge.demo import run_demo

from .lab_harness import LabPage, lab_marks, lab_with_browser
from .render_harness import ARTIFACTS_DIR

pytestmark = lab_marks(600)

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Any]]:
    with lab_with_browser(tmp_path_factory.mktemp("demo-trust")) as both:
        yield both


def _shot(page: Any, theme: str) -> None:
    """The top of the page: the title, the toolbar and its trust indicator."""
    ARTIFACTS_DIR.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS_DIR / f"notebook7-demo-trusted-{theme}.png"),
                    clip={"x": 0, "y": 0, "width": 1280, "height": 200})


def test_a_demo_notebook_opens_trusted_in_notebook_7(lab: Any,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    browser, server = lab
    # The demo signs into the Jupyter data folder of whoever runs it: here the server's.
    monkeypatch.setenv("JUPYTER_DATA_DIR", server.env["JUPYTER_DATA_DIR"])
    results = run_demo(NOTEBOOKS, server.root, live_local=False, only=["03"])
    assert results[0]["ok"], results
    # The tutorial as shipped (not executed here) beside it, for contrast.
    (server.root / "shipped.ipynb").write_bytes((NOTEBOOKS / results[0]["name"]).read_bytes())
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    ui = LabPage(page, server, "notebook")
    ui.open("shipped.ipynb")
    expect(page.locator(".jp-NotebookTrustedStatus")).to_have_text("Not Trusted")
    ui.open(results[0]["name"])
    status = page.locator(".jp-NotebookTrustedStatus")
    expect(status).to_have_text("Trusted")
    _shot(page, "light")
    page.locator(".lm-MenuBar-item", has_text="Settings").click()
    page.locator(".lm-Menu-item", has_text="Theme").first.hover()
    page.locator(".lm-Menu-item", has_text="JupyterLab Dark").first.click()
    page.wait_for_timeout(1500)
    expect(status).to_have_text("Trusted")
    _shot(page, "dark")
    page.close()
