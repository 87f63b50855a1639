"""Agent cells in a real JupyterLab, driven in headless Chromium against the scripted model.

One JupyterLab serves the whole module; one notebook holds a ``%%toolloop`` cell, a ``%%plan``
cell that asks, and a ``%%toolloop`` cell whose tool needs approval. The live anywidget view
draws the runs while they run or wait; clicks on its buttons resume the run in the same
output; a finished run is redrawn by our MIME renderer, so the saved notebook shows every run
again after the kernel is gone. Screenshots of each state go to ``test-artifacts/``.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.base.events import RUN_MIME_TYPE
from tests.agents.plan.plan_scripts import set_plan, step_done
from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls

from .lab_harness import (
    LabPage,
    lab_environment,
    lab_marks,
    lab_notebook,
    labextension_list,
)
from .render_harness import ARTIFACTS_DIR

pytestmark = lab_marks(300)

KEY = "sk-test-key-browser-0123456789"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
NOTEBOOK = "agent.ipynb"
LIVE = ".ja-widget .ja-run"
STATIC = ".jp-RenderedJupyterAgentRun > .ja-run"  # the renderer node is the output node
ANSWER = "The sum of 17 and 25 is **42**, computed with the add tool in one round."
PLAN_OPTIONS = ["Weekly figures", "Monthly figures", "Quarterly figures"]
DENIED = "Permission denied by the user: delete_file was not run."

SETUP = '''%load_ext jupyter_agent
from pathlib import Path
from jupyter_agent import tool

@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b

@tool(requires_approval=True)
def delete_file(path: str) -> str:
    """Delete a file in the notebook folder."""
    Path(path).unlink()
    return f"deleted {path}"
'''
CELLS = [
    SETUP,
    "%%toolloop --tools add\nWhat is 17 + 25? Use the tools.",
    "%%plan --tools add\nPlan a small sales report.",
    "%%toolloop --tools delete_file\nDelete old.txt.",
]
TOOLLOOP, PLAN, APPROVAL = 1, 2, 3


class Session:
    """The module's JupyterLab page, model server and the scenarios already run."""

    def __init__(self, ui: LabPage, model: ScriptedOpenAI) -> None:
        self.ui = ui
        self.server = ui.lab
        self.page = ui.page
        self.model = model
        self.done: set[str] = set()

    def ensure(self, name: str, scenario: Callable[[Session], None]) -> None:
        """Run ``scenario`` unless an earlier test already did (tests stay independent)."""
        if name not in self.done:
            self.model.reset()
            try:
                scenario(self)
            except BaseException:
                # What the page showed, for the failure report.
                self.ui.shot(f"lab-failed-{name}.png", ARTIFACTS_DIR)
                raise
            self.done.add(name)


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    """JupyterLab + scripted model + Chromium, with the notebook open and its setup cell run."""
    base = tmp_path_factory.mktemp("lab")
    with lab_notebook(base, NOTEBOOK, CELLS, KEY) as nb:
        (nb.server.root / "old.txt").write_text("keep me", encoding="utf-8")
        yield Session(nb.ui, nb.model)


def _wait_static_done(s: Session, index: int) -> Any:
    """The cell's run drawn by the MIME renderer with status done; returns the output."""
    out = s.ui.cell(index).locator(STATIC)
    out.locator('.ja-badge[data-status="done"]').wait_for()
    return out


def _record_texts(s: Session, index: int) -> None:
    """Collect the answer text of the cell's live output at every DOM change (streaming).

    The observer watches the whole notebook, not the cell's node: JupyterLab may re-attach a
    cell's node while it runs (windowed notebooks), and an observer on a detached node sees
    nothing more."""
    s.page.evaluate("""index => {
        window.__jaTexts = [];
        new MutationObserver(() => {
            const cell = document.querySelectorAll(".jp-Notebook .jp-Cell")[index];
            const t = cell && cell.querySelector(".ja-widget .ja-text .ja-md");
            if (t) window.__jaTexts.push(t.textContent);
        }).observe(document.body, {subtree: true, childList: true, characterData: true});
    }""", index)


# ------------------------------------------------------------------------------ scenarios
def _after(gate: threading.Event, turn: Any) -> Callable[[dict], Any]:
    """A turn the scripted server sends only once ``gate`` is set (at most 60 s later)."""
    def held(_body: dict) -> Any:
        gate.wait(60)
        return turn
    return held


def toolloop_scenario(s: Session) -> None:
    # The answer streams only once the live view is on screen: on a slow machine the widget's
    # first render (the ESM load) can otherwise take longer than the whole stream.
    shown = threading.Event()
    s.model.enqueue(tool_calls([call("add", {"a": 17, "b": 25}, id="call_add")]),
                    _after(shown, text(ANSWER, chunk_size=3, delay=0.03)))
    _record_texts(s, TOOLLOOP)
    s.ui.start(TOOLLOOP)
    try:
        s.ui.cell(TOOLLOOP).locator(LIVE).wait_for()
    finally:
        shown.set()
    out = _wait_static_done(s, TOOLLOOP)
    s.ui.shot("lab-toolloop-done.png", ARTIFACTS_DIR, s.ui.cell(TOOLLOOP))

    # While it streamed, the live widget showed a growing, partial answer.
    texts = s.page.evaluate("window.__jaTexts")
    final = out.locator(".ja-text").inner_text()
    assert any(0 < len(t) < len(final) for t in texts), texts
    # ... and only ever a start of the final answer: no patch applied twice, none lost
    # (markdown marks aside: a half-streamed "**4" is drawn as text, the final one as bold).
    flat = out.locator(".ja-text .ja-md").inner_text().replace("*", "")
    assert all(flat.startswith(t.replace("*", "").rstrip()) for t in texts), texts
    assert out.locator(".ja-text strong").inner_text() == "42"
    assert "The sum of 17 and 25 is" in final
    card = out.locator('.ja-tool[data-call-id="call_add"]')
    assert card.get_attribute("data-state") == "done"
    assert "add" in card.locator(".ja-tool-name").inner_text()
    # One output, updated in place; the finished run no longer needs the widget.
    assert s.ui.cell(TOOLLOOP).locator(".jp-OutputArea-output").count() == 1
    assert s.ui.cell(TOOLLOOP).locator(".ja-widget").count() == 0
    assert s.model.requests[1]["messages"][-1] == {"role": "tool", "tool_call_id": "call_add",
                                                   "content": "42"}


def plan_scenario(s: Session) -> None:
    plan = set_plan("1", "2")
    plan["updates"][0]["plan"].update(task="Sales report",
                                      description="Collect the figures, then summarise them.")
    plan["updates"][0]["plan"]["steps"][0]["title"] = "Collect the sales figures"
    plan["updates"][0]["plan"]["steps"][1]["title"] = "Write the summary"
    ask = {"reason": "The period decides which figures to load.", "blockerType": "ambiguous_goal",
           "question": "Which period should the report cover?", "options": PLAN_OPTIONS}
    s.model.enqueue(tool_calls([call("update_plan", plan, id="plan_1")]),
                    tool_calls([call("ask_agent", ask, id="ask_1")]))
    s.ui.run(PLAN)
    cell = s.ui.cell(PLAN)
    live = cell.locator(LIVE)
    live.locator('.ja-badge[data-status="ask"]').wait_for()
    options = live.locator(".ja-ask-pending .ja-option")
    assert options.count() == 3
    assert [t.split("\n")[-1] for t in options.all_inner_texts()] == PLAN_OPTIONS
    assert live.locator(".ja-plan .ja-step").count() == 2
    assert live.locator(".ja-ask-question").inner_text() == "Which period should the report cover?"
    assert len(s.model.requests) == 2  # suspended: the kernel is free, no further request
    s.ui.shot("lab-plan-ask.png", ARTIFACTS_DIR, cell)
    outputs = cell.locator(".jp-OutputArea-output").count()

    s.model.enqueue(tool_calls([call("update_plan", step_done("1", "2"), id="plan_2")]),
                    text("The plan is done: the report covers the monthly figures."))
    live.locator('.ja-option[data-index="2"]').click()
    out = _wait_static_done(s, PLAN)
    s.ui.shot("lab-plan-done.png", ARTIFACTS_DIR, cell)

    # The same output continued: no new output, the widget replaced by the finished run.
    assert cell.locator(".jp-OutputArea-output").count() == outputs
    assert cell.locator(".ja-widget").count() == 0
    statuses = out.locator(".ja-step").evaluate_all("els => els.map(e => e.dataset.status)")
    assert statuses == ["done", "done"]
    # The answered card is folded: its line says the answer, its body marks the option.
    assert "→ Monthly figures" in " ".join(out.locator(".ja-ask-answered > summary").inner_text().split())
    assert "Monthly figures" in out.locator(".ja-ask-answered .ja-chosen").text_content()
    assert "the report covers the monthly figures" in out.locator(".ja-text").last.inner_text()
    told = [m for m in s.model.requests[2]["messages"] if m.get("tool_call_id") == "ask_1"]
    assert told and "Monthly figures" in told[0]["content"]


def approval_scenario(s: Session) -> None:
    s.model.enqueue(tool_calls([call("delete_file", {"path": "old.txt"}, id="del_1")]))
    s.ui.run(APPROVAL)
    cell = s.ui.cell(APPROVAL)
    card = cell.locator(f"{LIVE} .ja-ask-approval")
    card.wait_for()
    assert [t.split("\n")[-1] for t in card.locator(".ja-option").all_inner_texts()] == [
        "Allow once", "Allow for this session", "Deny"]
    assert "delete_file" in card.inner_text() and "old.txt" in card.inner_text()
    # The call the card is about has not run: its tool card says it waits.
    tool_card = cell.locator(f'{LIVE} .ja-tool[data-call-id="del_1"]')
    assert tool_card.get_attribute("data-state") == "waiting"
    assert len(s.model.requests) == 1
    s.ui.shot("lab-approval-card.png", ARTIFACTS_DIR, cell)

    s.model.enqueue(text("I did not delete old.txt: you denied it."))
    card.locator('.ja-option[data-index="3"]').click()
    out = _wait_static_done(s, APPROVAL)
    s.ui.shot("lab-approval-denied.png", ARTIFACTS_DIR, cell)

    told = [m for m in s.model.requests[1]["messages"] if m.get("tool_call_id") == "del_1"]
    assert [m["content"] for m in told] == [DENIED]
    assert (s.server.root / "old.txt").read_text(encoding="utf-8") == "keep me"
    assert "Deny" in out.locator(".ja-ask-answered .ja-chosen").text_content()
    assert out.locator('.ja-tool[data-call-id="del_1"]').get_attribute("data-state") == "denied"
    assert "you denied it" in out.locator(".ja-text").last.inner_text()
    assert cell.locator(".ja-widget").count() == 0


# ------------------------------------------------------------------------------ tests
def test_toolloop_cell_shows_tool_cards_and_the_streamed_answer(session: Session) -> None:
    session.ensure("toolloop", toolloop_scenario)


def test_plan_ask_click_resumes_in_the_same_output_until_done(session: Session) -> None:
    session.ensure("plan", plan_scenario)


def test_approval_deny_tells_the_model_and_the_run_finishes(session: Session) -> None:
    session.ensure("approval", approval_scenario)


def _saved_runs(path: Path) -> dict[int, list[dict[str, Any]]]:
    nb = json.loads(path.read_text(encoding="utf-8"))
    return {i: [o["data"] for o in c.get("outputs", []) if "data" in o]
            for i, c in enumerate(nb["cells"])}


def test_saved_notebook_reopens_with_the_static_renderer(session: Session) -> None:
    for name, scenario in (("toolloop", toolloop_scenario), ("plan", plan_scenario),
                           ("approval", approval_scenario)):
        session.ensure(name, scenario)
    lab, page = session.ui, session.page
    path = session.server.root / NOTEBOOK
    lab.save()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        saved = _saved_runs(path)
        if all(any(RUN_MIME_TYPE in d for d in saved[i]) for i in (TOOLLOOP, PLAN, APPROVAL)):
            break
        time.sleep(0.2)
    else:
        pytest.fail(f"the saved notebook lacks a run output: {saved}")
    for i in (TOOLLOOP, PLAN, APPROVAL):
        (data,) = [d for d in saved[i] if RUN_MIME_TYPE in d]
        assert data[RUN_MIME_TYPE]["view"]["status"] == "done"
        assert WIDGET_MIME not in data  # a finished run never depends on widget state
    assert KEY not in path.read_text(encoding="utf-8")

    lab.shut_down_kernel()
    deadline = time.monotonic() + 20
    while session.server.api("/api/kernels") and time.monotonic() < deadline:
        time.sleep(0.2)
    assert session.server.api("/api/kernels") == []
    lab.reload()
    runs = page.locator(f".jp-Notebook {STATIC}")
    runs.nth(2).wait_for()
    assert runs.count() == 3
    assert page.locator('.jp-Notebook .ja-badge[data-status="done"]').count() == 3
    assert page.locator(".jp-Notebook .ja-widget").count() == 0
    assert "Error displaying widget" not in page.locator(".jp-Notebook").inner_text()
    assert lab.cell(TOOLLOOP).locator(".ja-text strong").inner_text() == "42"
    steps = lab.cell(PLAN).locator(".ja-step").evaluate_all("els => els.map(e => e.dataset.status)")
    assert steps == ["done", "done"]
    assert "Monthly figures" in lab.cell(PLAN).locator(".ja-ask-answered").inner_text()
    # Answered cards are folded to one line that says what was decided.
    assert "Denied: delete_file" in lab.cell(APPROVAL).locator(".ja-ask-answered").inner_text()
    assert re.search(r"\d+ rounds?", lab.cell(TOOLLOOP).locator(".ja-footer").inner_text())
    lab.shot("lab-reopened.png", ARTIFACTS_DIR)
    for i, name in ((TOOLLOOP, "toolloop"), (PLAN, "plan"), (APPROVAL, "approval")):
        lab.shot(f"lab-reopened-{name}.png", ARTIFACTS_DIR, lab.cell(i))


def test_labextension_list_shows_jupyter_agent_enabled(tmp_path: Path) -> None:
    listing = labextension_list(lab_environment(tmp_path, {}))
    assert re.search(r"jupyter-agent v\S+ enabled\s+OK", listing), listing
