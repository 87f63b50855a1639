"""A batch card's stop buttons during a ``%%toolloop --over`` cell, in a real JupyterLab.

The kernel reads widget messages only when the cell ends, so during a blocking batch the card's
widget message would wait for the batch to end. The card also dispatches ``jupyter-agent-stop``
with an interrupt count; the extension interrupts the kernel that many times and the batch's
coordinator counts them (one: let running items finish; two: abort them).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.fakes.openai_server import ScriptedOpenAI, call, hang, text, tool_calls

from .lab_harness import LabPage, lab_marks, lab_notebook
from .render_harness import ARTIFACTS_DIR

pytestmark = lab_marks(420)

KEY = "sk-test-key-batch-stop-0123456789"
NOTEBOOK = "batch-stop.ipynb"
SETUP = '''%load_ext jupyter_agent
from jupyter_agent import tool

@tool
def noop() -> str:
    """Nothing."""
    return "ok"

rows = [f"ticket {n} about an invoice" for n in range(12)]
'''
CELLS = [
    SETUP,
    "%%toolloop --over rows --concurrency 2 --out results\nClassify: {item}",
    "%%toolloop --over rows --concurrency 2 --tools noop --out results2\nTask: {item}",
    "print('statuses:', '|'.join(results['status']))",
    "print('statuses:', '|'.join(results2['status']))",
]
FINISH, ABORT, SHOW_FINISH, SHOW_ABORT = 1, 2, 3, 4
CARD = ".ja-run.ja-batch"


class Lab:
    def __init__(self, ui: LabPage, model: ScriptedOpenAI) -> None:
        self.ui = ui
        self.page = ui.page
        self.model = model


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    base = tmp_path_factory.mktemp("batch-stop-lab")
    with lab_notebook(base, NOTEBOOK, CELLS, KEY, height=1400) as nb:
        yield Lab(nb.ui, nb.model)


def _statuses(lab: Lab, index: int) -> list[str]:
    lab.ui.run(index)
    out = lab.ui.cell(index).locator(".jp-OutputArea-output").inner_text()
    return out.split("statuses:", 1)[1].strip().split("|")


def _wait_requests(lab: Lab, n: int) -> None:
    end = time.monotonic() + 30
    while len(lab.model.requests) < n:
        assert time.monotonic() < end, "the batch never started"
        time.sleep(0.05)


@contextmanager
def _interrupted(lab: Lab, n: int) -> Iterator[threading.Event]:
    """An event set once the server has answered ``n`` kernel interrupts sent by the page.

    The server signals the kernel before it answers, so the running items' answers can wait
    on this instead of a fixed delay that a loaded machine may outlast before the click lands.
    Handlers run while the test waits in a Playwright call (``wait_ran``).
    """
    seen = threading.Event()
    count = 0

    def on_response(response: Any) -> None:
        nonlocal count
        if response.request.method == "POST" and response.url.split("?")[0].endswith(
                "/interrupt"):
            count += 1
            if count >= n:
                seen.set()

    lab.page.on("response", on_response)
    try:
        yield seen
    finally:
        seen.set()  # never leave a server thread waiting
        lab.page.remove_listener("response", on_response)


def test_finish_during_a_cell_batch_lets_running_items_end(lab: Lab) -> None:
    lab.model.reset()
    with _interrupted(lab, 1) as interrupted:
        # The running items answer only after the interrupt reached the kernel (then 2 s more,
        # for the kernel to act on the signal): without the stop, no item would ever end.
        def answer(body: dict[str, Any]) -> Any:
            interrupted.wait(90)
            return hang(2, then=text("billing"))

        lab.model.default = answer
        lab.ui.start(FINISH)
        card = lab.ui.cell(FINISH).locator(CARD)
        button = card.locator("text=Stop (let running items finish)")
        expect(button).to_be_enabled(timeout=30_000)
        _wait_requests(lab, 2)
        t0 = time.monotonic()
        button.click()  # a real press and release (the row survives the card's redraws)
        # One interrupt: the two running items end with their answers, no other starts.
        lab.ui.wait_ran(FINISH)
        waited = time.monotonic() - t0
    assert waited < 20, waited
    statuses = _statuses(lab, SHOW_FINISH)
    assert statuses == ["done"] * 2 + ["skipped"] * 10, statuses
    assert len(lab.model.requests) == 2
    lab.ui.shot("lab-batch-stopped.png", ARTIFACTS_DIR, lab.ui.cell(FINISH))


def test_stop_now_during_a_cell_batch_aborts_running_items(lab: Lab) -> None:
    lab.model.reset()

    with _interrupted(lab, 2) as interrupted:
        # The running items ask for a tool only after both interrupts reached the kernel.
        def answer(body: dict[str, Any]) -> Any:
            if body["messages"][-1]["role"] == "tool":
                return text("never asked")
            interrupted.wait(90)
            return hang(2, then=tool_calls([call("noop", {})]))

        lab.model.default = answer
        lab.ui.start(ABORT)
        card = lab.ui.cell(ABORT).locator(CARD)
        button = card.locator("text=Stop now (abort running items)")
        expect(button).to_be_enabled(timeout=30_000)
        _wait_requests(lab, 2)
        button.click()  # a real press and release (the row survives the card's redraws)
        # Two interrupts: the running items end at their next round (no tool result is sent
        # back).
        lab.ui.wait_ran(ABORT)
    statuses = _statuses(lab, SHOW_ABORT)
    assert statuses == ["aborted"] * 2 + ["skipped"] * 10, statuses
    assert len(lab.model.requests) == 2
    # The kernel is usable again, and no stray interrupt hit the cells run since.
    lab.ui.run(0)
    assert "Error" not in lab.ui.cell(0).locator(".jp-OutputArea").inner_text()
