"""Cards that never lie, in a real JupyterLab driven in headless Chromium.

One JupyterLab (this checkout's extension, see ``lab_harness``) and one notebook against the
scripted model server: an approval answered "Allow for this session" folds to one line; a
400-line tool output opens in a bounded box and its copy button puts the whole output on the
clipboard; a run waiting for a slow model says so, shows its time ticking and a stop button,
and the stop button ends it (the extension interrupts the kernel); the palette finds
"Agent: Insert %%plan cell"; and the cards read in the dark theme. Screenshots of each state go
to ``test-artifacts/``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from jupyter_agent.base.previews import STREAM_PREVIEW, head_tail
from tests.fakes.openai_server import ScriptedOpenAI, call, hang, text, tool_calls

from .lab_harness import (
    LabPage,
    lab_marks,
    lab_notebook,
)
from .render_harness import ARTIFACTS_DIR

pytestmark = lab_marks(420)

KEY = "sk-test-key-cards-0123456789"
NOTEBOOK = "cards.ipynb"
COMMAND = "grep -c '' *.csv"
LIVE = ".ja-widget .ja-run"
STATIC = ".jp-RenderedJupyterAgentRun > .ja-run"
PLAN_PLACEHOLDER = ("Describe the goal here; the agent plans the steps, may ask you to choose, "
                    "then works through them.")

SETUP = '''%load_ext jupyter_agent
from jupyter_agent import tool

@tool(requires_approval=True)
def count_lines(command: str) -> str:
    """Count lines with a shell command (a stand-in: it runs nothing)."""
    return "a.csv:3"

@tool
def dump(n: int) -> str:
    """Return n numbered lines."""
    return "\\n".join(f"line {i:03d}: " + "z" * 30 for i in range(n))
'''
CELLS = [
    SETUP,
    "%%toolloop --tools count_lines\nCount the lines of the CSV files.",
    "%%toolloop --tools dump\nShow me 400 lines.",
    "%%toolloop --tools dump\nTake your time.",
]
APPROVAL, OUTPUT, SLOW = 1, 2, 3
DUMP_400 = "\n".join(f"line {i:03d}: " + "z" * 30 for i in range(400))


class Lab:
    """The module's page, model server and JupyterLab."""

    def __init__(self, ui: LabPage, model: ScriptedOpenAI) -> None:
        self.ui = ui
        self.page = ui.page
        self.model = model


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    base = tmp_path_factory.mktemp("cards-lab")
    with lab_notebook(base, NOTEBOOK, CELLS, KEY, height=1400, permissions=["clipboard-read", "clipboard-write"]) as nb:
        yield Lab(nb.ui, nb.model)


def _done(lab: Lab, index: int, status: str = "done") -> Any:
    out = lab.ui.cell(index).locator(STATIC)
    out.locator(f'.ja-badge[data-status="{status}"]').wait_for(timeout=60_000)
    return out


def _shot(lab: Lab, name: str, index: int) -> None:
    lab.ui.shot(name, ARTIFACTS_DIR, lab.ui.cell(index))


def test_answered_approval_folds_to_one_line(lab: Lab) -> None:
    lab.model.reset()
    lab.model.enqueue(tool_calls([call("count_lines", {"command": COMMAND}, id="c1")]))
    lab.ui.run(APPROVAL)
    cell = lab.ui.cell(APPROVAL)
    pending = cell.locator(f"{LIVE} .ja-ask-approval")
    pending.wait_for()
    # The command is shown once: the Arguments object would only repeat it.
    assert pending.inner_text().count(COMMAND) == 1
    pending_px = pending.bounding_box()["height"]
    lab.model.enqueue(text("There are 3 lines in a.csv."))
    pending.locator('.ja-option[data-index="2"]').click()
    out = _done(lab, APPROVAL)
    card = out.locator(".ja-ask-answered")
    line = " ".join(card.locator("summary").inner_text().split())
    assert line == f"✓ Allowed for this session: count_lines {COMMAND}"
    folded_px = card.bounding_box()["height"]
    _shot(lab, "lab-cards-approval-folded.png", APPROVAL)
    card.locator("summary").click()
    opened_px = card.bounding_box()["height"]
    assert "✓ chosen" in card.locator(".ja-chosen").inner_text()
    _shot(lab, "lab-cards-approval-opened.png", APPROVAL)
    card.locator("summary").click()  # folded again for the later screenshots
    print(f"\napproval card: pending {pending_px:.0f} px, answered {folded_px:.0f} px folded, "
          f"{opened_px:.0f} px opened")
    assert folded_px < 40 < 200 < opened_px, (folded_px, opened_px)


def test_400_line_output_stays_in_a_bounded_box_and_copies_whole(lab: Lab) -> None:
    lab.model.reset()
    answer = "Here they are.\n\n```\nline 000\nline 399\n```"
    lab.model.enqueue(tool_calls([call("dump", {"n": 400}, id="d1")]), text(answer))
    lab.ui.run(OUTPUT)
    out = _done(lab, OUTPUT)
    card = out.locator('.ja-tool[data-call-id="d1"]')
    card.locator("summary").click()
    card.locator(".ja-more").click()
    pre = card.locator(".ja-tool-output")
    client, scroll, inner = pre.evaluate("e => [e.clientHeight, e.scrollHeight, innerHeight]")
    assert client <= 0.6 * inner + 1 and scroll > 5 * client, (client, scroll, inner)
    cell_px = lab.ui.cell(OUTPUT).bounding_box()["height"]
    assert cell_px < 1400, cell_px  # before: a 7,000 px box
    pre.evaluate("e => e.scrollTop = e.scrollHeight")
    assert "line 399" in pre.inner_text()
    _shot(lab, "lab-cards-long-output.png", OUTPUT)

    pre.hover()
    card.locator(".ja-collapsible:has(.ja-tool-output) > .ja-copy").click()
    # The card holds the stream preview of a long result (docs/behaviour.md §12.6: the model got
    # it whole); copy gives exactly what the card holds.
    assert lab.page.evaluate("navigator.clipboard.readText()") == head_tail(DUMP_400,
                                                                            *STREAM_PREVIEW)
    out.locator(".ja-text .ja-actions .ja-copy").click()
    assert lab.page.evaluate("navigator.clipboard.readText()") == answer
    print(f"\n400-line output: box {client} px of {scroll} px, cell {cell_px:.0f} px")


def test_running_card_waits_ticks_and_stops(lab: Lab) -> None:
    lab.model.reset()
    lab.model.enqueue(hang(120, then=text("Too late.")))
    lab.ui.start(SLOW)
    live = lab.ui.cell(SLOW).locator(LIVE)
    expect(live.locator(".ja-waiting")).to_have_text("Waiting for the model…", timeout=30_000)
    elapsed = live.locator(".ja-header .ja-elapsed")
    first = elapsed.inner_text()
    expect(elapsed).not_to_have_text(first, timeout=5_000)  # it ticks
    stop = live.locator(".ja-header .ja-stop")
    expect(stop).to_be_enabled()
    _shot(lab, "lab-cards-waiting.png", SLOW)

    t0 = time.monotonic()
    stop.click()
    # The extension interrupts the kernel: the run ends now, not after the model's 120 s.
    out = _done(lab, SLOW, status="aborted")
    waited = time.monotonic() - t0
    assert waited < 60, waited
    assert "stopped before the model answered" in out.locator(".ja-error").inner_text()
    assert out.locator(".ja-stop, .ja-elapsed, .ja-waiting").count() == 0
    assert len(lab.model.requests) == 1
    _shot(lab, "lab-cards-stopped.png", SLOW)
    # The kernel is usable again: the setup cell runs.
    lab.ui.run(0)


def test_palette_finds_agent_commands_and_inserts_a_placeholder(lab: Lab) -> None:
    ui, page = lab.ui, lab.page
    cells = page.locator(".jp-Notebook .jp-Cell")
    before = cells.count()
    ui.cell(before - 1).locator(".jp-InputArea-prompt").click()  # insert below the last cell
    page.keyboard.press("Control+Shift+c")
    palette = page.locator("#command-palette")
    palette.locator("input").fill("agent")
    items = palette.locator(".lm-CommandPalette-item:not(.lm-mod-disabled)").all_inner_texts()
    labels = [" ".join(i.split()) for i in items]
    for magic in ("chat", "toolloop", "plan"):
        assert f"Agent: Insert %%{magic} cell" in labels, labels
    page.screenshot(path=str(ARTIFACTS_DIR / "lab-cards-palette.png"))
    palette.locator(".lm-CommandPalette-item", has_text="Agent: Insert %%plan cell").click()
    expect(cells).to_have_count(before + 1)
    new = ui.cell(before)
    editor = new.locator(".jp-InputArea-editor")
    expect(editor).to_contain_text(PLAN_PLACEHOLDER)
    # The placeholder is selected: typing replaces it.
    page.keyboard.type("Summarise the sales data.")
    expect(editor).to_have_text("%%plan" + "Summarise the sales data.")
    source = page.evaluate("""() => {
        const lines = [...document.querySelectorAll('.jp-Notebook .jp-Cell')].at(-1)
            .querySelectorAll('.cm-line');
        return [...lines].map(l => l.textContent).join('\\n');
    }""")
    assert source == "%%plan\nSummarise the sales data."
    page.keyboard.press("Escape")


def test_cards_read_in_the_dark_theme(lab: Lab) -> None:
    ui, page = lab.ui, lab.page
    # Open the long output and the approval, so both themes show the busy parts.
    out = ui.cell(APPROVAL).locator(STATIC)
    out.locator(".ja-ask-answered > summary").click()
    for index, name in ((APPROVAL, "approval"), (OUTPUT, "output"), (SLOW, "stopped")):
        _shot(lab, f"lab-cards-light-{name}.png", index)
    page.locator(".lm-MenuBar-item", has_text="Settings").click()
    page.locator(".lm-Menu-item", has_text="Theme").first.hover()
    page.locator(".lm-Menu-item", has_text="JupyterLab Dark").first.click()
    page.wait_for_function("document.body.dataset.jpThemeLight === 'false'", timeout=30_000)
    # The theme's CSS is in force once the notebook's own background turns dark (the body's
    # flag flips first, and a fixed pause would race the stylesheet on a loaded machine).
    page.wait_for_function("""() => {
        const rgb = getComputedStyle(document.querySelector('.jp-Notebook')).backgroundColor
            .match(/[\\d.]+/g).slice(0, 3).map(Number);
        return (0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2]) / 255 < 0.3;
    }""", timeout=30_000)
    for index, name in ((APPROVAL, "approval"), (OUTPUT, "output"), (SLOW, "stopped")):
        _shot(lab, f"lab-cards-dark-{name}.png", index)
    colours = out.evaluate("""e => {
        const rgb = s => s.match(/[\\d.]+/g).slice(0, 3).map(Number);
        const lum = ([r, g, b]) => (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255;
        const bg = getComputedStyle(document.querySelector('.jp-Notebook')).backgroundColor;
        return {fg: lum(rgb(getComputedStyle(e).color)), bg: lum(rgb(bg)),
                verdict: lum(rgb(getComputedStyle(e.querySelector('.ja-ask-verdict')).color))};
    }""")
    print("\ndark theme luminance:", json.dumps(colours))
    assert colours["bg"] < 0.3 and colours["fg"] > 0.6 and colours["verdict"] > 0.6, colours
