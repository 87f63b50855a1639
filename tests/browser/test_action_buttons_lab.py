"""The cards' action buttons and a deliberate Deny, in JupyterLab and Notebook 7, light and dark.

A running batch's two stop buttons are compact buttons in one row (they once reused the option
buttons' grid and wrapped one word per line across the card); *Insert below* and *Discard* are
themed buttons, not the browser's grey default; a tool call the user denied is drawn plain
("denied by you"), not as a red error. Screenshots of each go to ``test-artifacts/``. The
harness fails the test on any console error of the page.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.fakes.openai_server import call, hang, text, tool_calls

from .lab_harness import LabNotebook, lab_marks, lab_notebook
from .render_harness import ARTIFACTS_DIR

pytestmark = lab_marks(600)

KEY = "sk-test-key-buttons-0123456789"
SETUP = '''%load_ext jupyter_agent
from jupyter_agent import tool

@tool(requires_approval=True)
def send_mail(to: str) -> str:
    """Send the report by mail."""
    return "sent"

rows = [f"ticket {n}" for n in range(6)]
'''
CELLS = [
    SETUP,
    "%%toolloop --notebook --history 0\nPropose a cell that shows the rows.",
    "%%toolloop --tools send_mail --history 0\nMail the report to ana@example.org.",
    # --rerun: each theme's pass starts the batch afresh; without it, answers that arrived
    # after the light pass's Stop now are reused and the dark pass finishes at once.
    "%%toolloop --over rows --concurrency 2 --rerun\nClassify: {item}",
]
PROPOSE, DENY, BATCH = 1, 2, 3

LUMINANCE = """e => {
    // rgb()/rgba() give channels 0-255; color(srgb ...) (what color-mix computes to) 0-1.
    const rgb = s => (s.match(/[\\d.]+/g) || [0, 0, 0]).slice(0, 3)
        .map(c => s.startsWith("color(") ? Number(c) * 255 : Number(c));
    const lin = c => (c /= 255) <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
    const lum = ([r, g, b]) => 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
    const s = getComputedStyle(e);
    return {fg: lum(rgb(s.color)), bg: lum(rgb(s.backgroundColor)),
            bgAlpha: (s.backgroundColor.match(/[\\d.]+/g) || []).length === 4
                ? Number(s.backgroundColor.match(/[\\d.]+/g)[3]) : 1,
            border: s.borderTopStyle, width: e.getBoundingClientRect().width,
            height: e.getBoundingClientRect().height, top: e.getBoundingClientRect().top,
            line: parseFloat(s.lineHeight) || parseFloat(s.fontSize) * 1.6};
}"""


@pytest.fixture(scope="module", params=["lab", "notebook"])
def nb(request: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabNotebook]:
    base = tmp_path_factory.mktemp(f"buttons-{request.param}")
    with lab_notebook(base, "buttons.ipynb", CELLS, KEY, height=1500,
                      shell=request.param) as notebook:
        yield notebook


def _dark(nb: LabNotebook) -> None:
    page = nb.ui.page
    page.locator(".lm-MenuBar-item", has_text="Settings").click()
    page.locator(".lm-Menu-item", has_text="Theme").first.hover()
    page.locator(".lm-Menu-item", has_text="JupyterLab Dark").first.click()
    page.wait_for_function("""() => {
        const rgb = getComputedStyle(document.querySelector('.jp-Notebook')).backgroundColor
            .match(/[\\d.]+/g).slice(0, 3).map(Number);
        return (0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2]) / 255 < 0.3;
    }""", timeout=30_000)


def _check_batch_buttons(nb: LabNotebook, theme: str) -> None:
    """Start the batch (every answer hangs), check and shoot its stop row, stop it now."""
    ui = nb.ui
    nb.model.reset()
    nb.model.default = hang(60, then=text("billing"))
    ui.start(BATCH)
    card = ui.cell(BATCH).locator(".ja-run.ja-batch")
    finish = card.locator("button[data-mode=finish]")
    abort = card.locator("button[data-mode=abort]")
    expect(abort).to_be_enabled(timeout=30_000)
    whole = card.evaluate("e => e.getBoundingClientRect().width")
    a, b = finish.evaluate(LUMINANCE), abort.evaluate(LUMINANCE)
    for m in (a, b):
        assert m["height"] < 2.2 * m["line"], m  # one line, not one word per line
        assert m["width"] < 0.6 * whole, (m, whole)  # sized to its label
        assert m["border"] != "none"
    assert abs(a["top"] - b["top"]) < 2  # side by side
    ui.shot(f"{ui.shell}-{theme}-batch-stop.png", ARTIFACTS_DIR, ui.cell(BATCH))
    abort.click()
    # "abort" ends running items at their next round (docs/behaviour.md). The click reaches
    # the busy kernel at a time of its own (a message, then interrupts): whatever it finds,
    # the held answers come now and any item started meanwhile is answered at once.
    nb.model.default = text("billing")
    nb.model.release_hangs()
    ui.wait_ran(BATCH, timeout=90_000)
    nb.model.default = None


# Resolves once an element's colours read the same on two frames in a row.
SETTLED = """e => new Promise(done => {
    const look = () => { const s = getComputedStyle(e); return s.color + s.backgroundColor; };
    let last = look();
    const tick = () => requestAnimationFrame(() => {
        const now = look();
        if (now === last) { done(true); } else { last = now; tick(); }
    });
    tick();
})"""


def _check_proposal_buttons(nb: LabNotebook, theme: str) -> None:
    proposal = nb.ui.cell(PROPOSE).locator(".ja-proposal")
    insert, discard = proposal.locator(".ja-insert"), proposal.locator(".ja-discard")
    expect(insert).to_be_visible()
    # The resting look: the pointer left where the theme menu or the last click put it (over
    # a button, the hover colours were read once), and the theme's colours fully applied.
    nb.ui.page.mouse.move(0, 0)
    insert.evaluate(SETTLED)
    discard.evaluate(SETTLED)
    i, d = insert.evaluate(LUMINANCE), discard.evaluate(LUMINANCE)
    default = nb.ui.page.evaluate("""() => {
        const b = document.createElement('button'); document.body.appendChild(b);
        const c = getComputedStyle(b).backgroundColor; b.remove(); return c; }""")
    for el in (insert, discard):
        assert el.evaluate("e => getComputedStyle(e).backgroundColor") != default
    assert i["height"] < 2.2 * i["line"] and d["height"] < 2.2 * d["line"]
    for m in (i, d):  # readable in either theme (WCAG contrast of text on its background)
        bg = m["bg"] if m["bgAlpha"] > 0.5 else (0.0 if theme == "dark" else 1.0)
        hi, lo = max(m["fg"], bg), min(m["fg"], bg)
        assert (hi + 0.05) / (lo + 0.05) > 4.5, (theme, m)
    if theme == "dark":  # no light grey browser box on the dark card
        assert d["fg"] > 0.4 and (d["bg"] < 0.2 or d["bgAlpha"] < 0.3), d
    nb.ui.shot(f"{nb.ui.shell}-{theme}-proposal.png", ARTIFACTS_DIR, nb.ui.cell(PROPOSE))


def _check_denied(nb: LabNotebook, theme: str) -> None:
    card = nb.ui.cell(DENY).locator(".ja-tool[data-state=denied]")
    expect(card).to_have_count(1)
    assert card.get_attribute("open") is None
    assert "denied by you" in card.inner_text()
    icon = card.locator(".ja-tool-icon").evaluate(LUMINANCE)
    err = nb.ui.page.evaluate("""() => getComputedStyle(document.querySelector(
        '.ja-run')).getPropertyValue('--ja-err')""")
    assert icon and err  # the icon is drawn in the text colour, not the error colour
    assert nb.ui.cell(DENY).locator(".ja-tool-error, .ja-tool[data-state=error]").count() == 0
    nb.ui.shot(f"{nb.ui.shell}-{theme}-denied.png", ARTIFACTS_DIR, nb.ui.cell(DENY))


def test_action_buttons_and_a_deny_read_right_in_light_and_dark(nb: LabNotebook) -> None:
    ui = nb.ui
    nb.model.enqueue(
        tool_calls([call("insert_cell", {"source": "print(rows)",
                                         "explanation": "Show the rows."})]),
        text("Proposed below."))
    ui.run(PROPOSE)
    nb.model.enqueue(tool_calls([call("send_mail", {"to": "ana@example.org"}, id="m1")]),
                     text("Not sent: you denied it."))
    ui.run(DENY)
    ask = ui.cell(DENY).locator(".ja-ask-pending")
    ask.locator('.ja-option[data-index="3"]').click()  # Deny
    ui.cell(DENY).locator(".ja-ask-answered").first.wait_for(timeout=60_000)
    for theme in ("light", "dark"):
        if theme == "dark":
            _dark(nb)
        _check_proposal_buttons(nb, theme)
        _check_denied(nb, theme)
        _check_batch_buttons(nb, theme)
