"""Cards that never lie: the run renderer's states, drawn in headless Chromium.

Each test draws a view reduced from real events by ``jupyter_agent.view.reduce`` (plus, where the
kernel does not emit it yet, the item fields the view may carry: ``queued`` and ``interrupted``
tool states, a tool's ``started_at``, unknown counts as ``None``) and checks what the card says
and what stays safe: one stop message per click, no "0.00 s" for an interrupted call, no 0 for
an unknown count, a 400-line output in a bounded box, copy buttons that copy the whole text.
"""

from __future__ import annotations

import copy
import json
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from jupyter_agent.base.events import (
    AskAnswered,
    AskPending,
    RoundStarted,
    RunFinished,
    RunStarted,
    TextDelta,
    ToolCalled,
    ToolReturned,
    ToolStarted,
    UsageRecorded,
    Warning_,
)
from jupyter_agent.ui.shared import BUNDLE
from jupyter_agent.view.reduce import reduce_events

from .render_harness import (
    ARTIFACTS_DIR,
    chromium_path,
    launch_browser,
    serve,
    write_page,
)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(chromium_path() is None, reason="no system Chromium"),
]

OpenRun = Callable[..., Any]
COMMAND = "grep -c '' *.csv"
LONG_OUTPUT = "\n".join(f"line {i:03d}: " + "y" * 30 for i in range(400))


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = launch_browser(p)
        yield b
        b.close()


@pytest.fixture()
def open_run(browser: Any, tmp_path: Path) -> Iterator[OpenRun]:
    """Open a page drawing ``view`` (clipboard allowed); return the Playwright page."""
    pages: list[Any] = []

    with serve(tmp_path) as url:
        def _open(view: dict[str, Any], *, live: bool = True, dark: bool = False) -> Any:
            name = f"p{len(pages)}"
            write_page(tmp_path / name, view, live=live, dark=dark)
            page = browser.new_page(viewport={"width": 960, "height": 900},
                                    permissions=["clipboard-read", "clipboard-write"])
            page.goto(f"{url}{name}/index.html")
            page.wait_for_function("window.ready === true")
            pages.append(page)
            return page

        yield _open
        for page in pages:
            page.close()


def _running(started_ago: float = 0.0, *more: Any) -> dict[str, Any]:
    """A run that started ``started_ago`` seconds ago and sent its first request."""
    return reduce_events([
        RunStarted(run_id="run-7", agent="toolloop", model="gpt-test", t=time.time() - started_ago),
        RoundStarted(round=1),
        *more,
    ])


def _tool(call_id: str, state: str, **fields: Any) -> dict[str, Any]:
    item = {"kind": "tool", "round": 1, "call_id": call_id, "name": "bash",
            "arguments": '{"command": "sleep 1"}', "output": "", "error": None, "seconds": 0.0,
            "state": state, "internal": False}
    item.update(fields)
    return item


def _clipboard(page: Any) -> str:
    return page.evaluate("navigator.clipboard.readText()")


# ------------------------------------------------------------------ while it works
def test_running_card_waits_for_the_model_ticks_and_stops_once(open_run: OpenRun) -> None:
    page = open_run(_running(65))
    # Nothing streamed yet: the card says what it waits for, not nothing.
    expect(page.locator(".ja-waiting")).to_have_text("Waiting for the model…")
    elapsed = page.locator(".ja-header .ja-elapsed")
    # The run started 65 s before the page opened; a loaded machine opens it later (never a
    # time below 65 s, nor one far past what the page took to load).
    shown = re.fullmatch(r"1 min (\d\d) s", elapsed.inner_text())
    assert shown is not None and 5 <= int(shown.group(1)) <= 35, elapsed.inner_text()
    expect(elapsed).not_to_have_text(elapsed.inner_text(), timeout=3000)  # it ticks

    stop = page.locator(".ja-header .ja-stop")
    assert stop.is_enabled() and "Stop" in stop.inner_text()
    # Two clicks as fast as the page takes them, then a streaming redraw: one message.
    stop.evaluate("b => { b.click(); b.click(); }")
    page.evaluate("""() => {
        const v = structuredClone(window.view);
        v.items.push({kind: "text", round: 1, text: "Partial", withdrawn: false});
        window.redraw(v);
        window.redraw(v);
    }""")
    assert page.evaluate("window.actions") == [{"type": "stop", "run_id": "run-7"}]
    expect(stop).to_be_disabled()
    assert stop.inner_text() == "Stopping…"
    # Text is streaming in the current round: no longer waiting.
    assert page.locator(".ja-waiting").count() == 0

    # The run ends: no stop button, no ticking time, the footer has the time.
    page.evaluate("""() => {
        const v = structuredClone(window.view);
        v.status = "aborted"; v.footer.seconds = 66.2;
        window.redraw(v);
    }""")
    assert page.locator(".ja-stop, .ja-elapsed, .ja-waiting").count() == 0
    assert page.inner_text('.ja-footer [data-part="time"]') == "1 min 6 s"
    ARTIFACTS_DIR.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS_DIR / "cards-stopped.png"))


def test_clock_skew_and_static_mode_never_claim_a_running_time(open_run: OpenRun) -> None:
    # The kernel's clock runs a minute ahead of the browser's: 0 s, never a negative time.
    page = open_run(_running(-60))
    assert page.inner_text(".ja-elapsed") == "0 s"
    # A saved notebook's "running" run may be long dead: no ticking time, no stop button.
    static = open_run(_running(600, ToolCalled(round=1, call_id="c1", name="bash",
                                               arguments="{}"),
                               ToolStarted(round=1, call_id="c1", name="bash")), live=False)
    assert static.locator(".ja-elapsed, .ja-stop").count() == 0
    assert static.inner_text('.ja-tool[data-call-id="c1"] .ja-tool-time') == "running…"
    # Nor a "Waiting for the model…" line: nothing waits in a saved card, and a card whose
    # kernel is gone says it no longer updates (issue 37: the two lines contradicted).
    idle = open_run(_running(600), live=False)
    assert idle.locator(".ja-waiting").count() == 0


def test_waiting_line_follows_rounds_and_tools(open_run: OpenRun) -> None:
    view = _running(1, TextDelta(round=1, text="Let me look."),
                    ToolCalled(round=1, call_id="c1", name="bash", arguments="{}"))
    page = open_run(view)
    assert page.locator(".ja-waiting").count() == 0  # a tool runs
    done = copy.deepcopy(view)
    done["items"][-1].update(state="done", seconds=0.2, output="ok")
    page.evaluate("v => window.redraw(v)", done)
    assert page.locator(".ja-waiting").count() == 1  # tools done, the next request is due
    done["footer"]["rounds"] = 2
    done["items"].append({"kind": "reasoning", "round": 2, "text": "Hmm"})
    page.evaluate("v => window.redraw(v)", done)
    assert page.locator(".ja-waiting").count() == 0  # the model answers


def test_tool_states_say_queued_running_and_interrupted_truthfully(open_run: OpenRun) -> None:
    view = _running(10)
    view["items"] = [
        _tool("a", "done", seconds=1.25, output="ok"),
        _tool("b", "running", started_at=time.time() - 3),
        _tool("c", "queued"),
        # The kernel's marker for an interrupted call, with no duration: no "0.00 s".
        _tool("d", "error", error="interrupted", seconds=0.0,
              output="Tool error: interrupted by the user before it finished."),
        _tool("e", "interrupted", seconds=2.5),
        # Denied by the user: a choice, not an error; it never ran.
        _tool("f", "error", seconds=0.0, error="Permission denied by the user: bash was not run.",
              output="Permission denied by the user: bash was not run."),
        # Refused by the round limit: an error that took no time at all never ran.
        _tool("g", "error", seconds=0.0, error="Round limit reached: not run.",
              output="Round limit reached: not run."),
    ]
    page = open_run(view)
    times = {cid: page.inner_text(f'.ja-tool[data-call-id="{cid}"] .ja-tool-time')
             for cid in "abcdefg"}
    states = page.eval_on_selector_all(".ja-tool", "els => els.map(e => e.dataset.state)")
    assert states == ["done", "running", "queued", "interrupted", "interrupted", "denied",
                      "error"]
    assert times["a"] == "1.25 s"
    assert times["b"] in ("running 3 s", "running 4 s")
    assert times["c"] == "queued"
    assert times["d"] == "interrupted"
    assert times["e"] == "interrupted after 2.50 s"
    assert times["f"] == "denied by you" and times["g"] == "not run"
    # The deny is drawn plain: not opened, no red error block, an icon in the text colour.
    denied = page.locator('.ja-tool[data-call-id="f"]')
    assert denied.get_attribute("open") is None
    assert page.locator('.ja-tool[data-call-id="g"]').get_attribute("open") is not None
    red = page.evaluate("getComputedStyle(document.querySelector("
                        "'.ja-tool[data-call-id=\"g\"] .ja-tool-icon')).color")
    icon = page.evaluate("getComputedStyle(document.querySelector("
                         "'.ja-tool[data-call-id=\"f\"] .ja-tool-icon')).color")
    assert icon != red
    denied.locator("summary").click()
    expect(denied).to_contain_text("Permission denied by the user")
    assert page.locator('.ja-tool[data-call-id="f"] .ja-tool-error').count() == 0
    assert "0.00 s" not in page.inner_text(".ja-items")
    page.click('.ja-tool[data-call-id="d"] > summary')
    # The body is built on the (asynchronous) toggle event.
    expect(page.locator('.ja-tool[data-call-id="d"]')).to_contain_text("interrupted by the user")
    body = page.inner_text('.ja-tool[data-call-id="d"]')
    assert "interrupted by the user" in body and "ERROR" not in body.upper().split("OUTPUT")[0]

    # The run ended while b ran and c waited: neither may still say "running" or "queued".
    ended = copy.deepcopy(view)
    ended["status"] = "aborted"
    page.evaluate("v => window.redraw(v)", ended)
    states = page.eval_on_selector_all(".ja-tool", "els => els.map(e => e.dataset.state)")
    assert states == ["done", "interrupted", "interrupted", "interrupted", "interrupted", "denied",
                      "error"]
    assert "running" not in page.inner_text(".ja-items")
    page.screenshot(path=str(ARTIFACTS_DIR / "cards-tool-states.png"))


def test_unknown_counts_and_prices_read_unknown_not_zero(open_run: OpenRun) -> None:
    view = reduce_events([
        RunStarted(run_id="r", agent="chat", model="local-model"),
        RoundStarted(round=1),
        RunFinished(status="aborted", rounds=1, seconds=0.4),
    ])
    view["footer"].update(input_tokens=None, output_tokens=None, cost=None)
    page = open_run(view)
    footer = page.inner_text(".ja-footer")
    assert "tokens unknown" in footer and "cost unknown" in footer
    assert "0 in" not in footer and "cost 0" not in footer
    # An aborted run with nothing in it says so instead of showing an empty card.
    assert page.inner_text(".ja-error") == (
        "Aborted: the run was stopped before the model answered.")

    # Known zeros stay zeros (a free local model costs 0); one unknown side reads "—".
    known = reduce_events([RunStarted(run_id="r", agent="chat", model="m"),
                           UsageRecorded(model="m", input_tokens=12, output_tokens=0, cost=0.0)])
    page = open_run(known)
    assert page.inner_text('.ja-footer [data-part="tokens"]') == "12 in / 0 out tokens"
    assert page.inner_text('.ja-footer [data-part="cost"]') == "cost 0"
    known["footer"]["output_tokens"] = None
    page.evaluate("v => window.redraw(v)", known)
    assert page.inner_text('.ja-footer [data-part="tokens"]') == "12 in / — out tokens"
    # Before the first call is accounted (the view starts at 0 in / 0 out, cost 0.0), the
    # counts are not known yet: no call has 0 input tokens.
    page = open_run(_running(1))
    footer = " ".join(page.inner_text(".ja-footer").split())
    assert footer == "gpt-test · 1 round · tokens unknown · cost unknown"


# ------------------------------------------------------------------ when it is done
def _approval(answer: str, index: int | None, how: str = "option", **args: Any) -> dict[str, Any]:
    arguments = {"command": COMMAND, **args}
    return reduce_events([
        RunStarted(run_id="r", agent="toolloop", model="m"),
        ToolCalled(round=1, call_id="c1", name="bash", arguments=json.dumps(arguments)),
        AskPending(call_id="c1", kind="approval", question="Run this command in the workspace?",
                   options=["Allow once", "Allow for this session", "Deny"], allow_other=False,
                   detail={"tool": "bash", "arguments": arguments, "command": COMMAND,
                           "cwd": "/home/user/work"}),
        AskAnswered(call_id="c1", how=how, answer=answer, option_index=index),
    ])


def test_answered_approval_folds_to_one_line_and_opens_without_repeats(
        open_run: OpenRun) -> None:
    page = open_run(_approval("Allow for this session", 2))
    card = page.locator(".ja-ask-answered")
    line = " ".join(card.locator("summary").inner_text().split())
    assert line == f"✓ Allowed for this session: bash {COMMAND}"
    folded = card.bounding_box()["height"]
    assert folded < 40, folded
    card.locator("summary").click()
    opened = card.bounding_box()["height"]
    assert opened > 3 * folded
    body = card.inner_text()
    assert body.count(COMMAND) == 2  # the line and the Command row; no Arguments repeating it
    assert "ARGUMENTS" not in body.upper().replace("ALLOWED", "")
    assert "✓ chosen" in card.locator(".ja-chosen").inner_text()
    print(f"answered approval card: {folded:.0f} px folded, {opened:.0f} px opened")

    # More arguments than the command: only those are listed under Arguments.
    page = open_run(_approval("Deny", 3, timeout=5))
    card = page.locator(".ja-ask-answered")
    assert " ".join(card.locator("summary").inner_text().split()).startswith("✕ Denied: bash")
    card.locator("summary").click()
    args = card.locator(".ja-approval-detail pre").all_inner_texts()
    assert args[0] == COMMAND and '"timeout": 5' in args[1] and COMMAND not in args[1]


def test_hostile_answers_stay_on_one_line(open_run: OpenRun) -> None:
    # A typed answer on an approval denies (runtime/approval.py); a 10,000-character command
    # and a multi-line one still fold to one line.
    page = open_run(_approval("yes please\nrun it", None, how="other"))
    assert " ".join(page.inner_text(".ja-ask-answered > summary").split()).startswith("✕ Denied")
    huge = _approval("Allow once", 1)
    huge["items"][-1]["detail"]["command"] = "echo " + "x" * 10_000 + "\nrm -rf /"
    page = open_run(huge)
    card = page.locator(".ja-ask-answered")
    assert card.bounding_box()["height"] < 40
    assert "rm -rf" not in card.locator("summary").inner_text()
    assert page.evaluate("document.documentElement.scrollWidth") <= 960


def test_long_output_opens_in_a_bounded_box_and_copies_whole(open_run: OpenRun) -> None:
    view = _running(1, ToolCalled(round=1, call_id="big", name="bash", arguments="{}"),
                    ToolReturned(round=1, call_id="big", name="bash", output=LONG_OUTPUT,
                                 seconds=0.3))
    page = open_run(view)
    card = page.locator('.ja-tool[data-call-id="big"]')
    card.locator("summary").click()
    out = card.locator(".ja-tool-output")
    assert out.inner_text().count("\n") <= 12  # the preview is short in lines, not only chars
    card.locator(".ja-more").click()
    assert "400 lines" not in card.locator(".ja-more").inner_text()  # it says Show less now
    box = out.evaluate("e => [e.clientHeight, e.scrollHeight, innerHeight]")
    assert box[0] <= 0.6 * box[2] + 1 and box[1] > 5 * box[0], box
    out.evaluate("e => e.scrollTop = e.scrollHeight")  # it scrolls to the last line
    assert "line 399" in out.inner_text()
    card.locator(".ja-collapsible:has(.ja-tool-output) > .ja-copy").click()
    assert _clipboard(page) == LONG_OUTPUT
    page.screenshot(path=str(ARTIFACTS_DIR / "cards-long-output.png"))


def test_copy_buttons_copy_the_answer_and_code_even_without_the_clipboard_api(
        open_run: OpenRun) -> None:
    answer = "Use this:\n\n```python\nprint('<b>hi</b>')\n```\n\nDone."
    page = open_run(_running(1, TextDelta(round=1, text=answer)))
    page.locator(".ja-text .ja-actions .ja-copy").click()
    assert _clipboard(page) == answer
    code = page.locator(".ja-codeblock > .ja-copy")
    code.hover()
    code.click()
    assert _clipboard(page) == "print('<b>hi</b>')"
    expect(code).to_have_text("Copied")
    # Plain http on another host has no Clipboard API: the fallback still copies.
    page.evaluate("""() => {
        window.__clip = navigator.clipboard;
        Object.defineProperty(navigator, "clipboard", {get: () => undefined, configurable: true});
    }""")
    page.locator(".ja-text .ja-actions .ja-copy").click()
    assert page.evaluate("window.__clip.readText()") == answer


def test_anywidget_stop_reaches_the_kernel_and_the_page_once_and_cleans_up(
        open_run: OpenRun) -> None:
    page = open_run(_running(5), live=False)
    result = page.evaluate(
        """async (src) => {
            const url = URL.createObjectURL(new Blob([src], {type: "text/javascript"}));
            const widget = (await import(url)).default.run;
            const sent = [], events = [];
            const model = {view: window.view, get(k) { return this[k]; }, on() {}, off() {},
                           send(msg) { sent.push(msg); }};
            document.addEventListener("jupyter-agent-stop", e => events.push(e.detail));
            const el = document.createElement("div");
            document.body.appendChild(el);
            const cleanup = widget.render({model, el});
            el.querySelector(".ja-stop").click();
            el.querySelector(".ja-stop").click();
            const before = el.querySelector(".ja-elapsed").textContent;
            cleanup();
            await new Promise(r => setTimeout(r, 1600));
            return {sent, events, ticked: el.querySelector(".ja-elapsed").textContent !== before};
        }""",
        BUNDLE.read_text(encoding="utf-8"),
    )
    assert result == {"sent": [{"type": "stop", "run_id": "run-7"}],
                      "events": [{"run_id": "run-7"}], "ticked": False}


def test_dark_theme_screenshots(open_run: OpenRun) -> None:
    view = _approval("Allow for this session", 2)
    view["items"].insert(0, _tool("q", "queued"))
    view["items"].append({"kind": "text", "round": 2, "withdrawn": False,
                          "text": "Counted.\n\n```\n3 a.csv\n```"})
    view["status"] = "running"
    view["footer"].update(input_tokens=None, output_tokens=None, cost=None)
    for dark in (False, True):
        page = open_run(view, dark=dark)
        page.locator(".ja-ask-answered > summary").click()
        name = "dark" if dark else "light"
        page.screenshot(path=str(ARTIFACTS_DIR / f"cards-{name}.png"), full_page=True)
        if dark:
            fg = page.locator(".ja-ask-verdict").evaluate("e => getComputedStyle(e).color")
            assert fg == "rgba(255, 255, 255, 0.87)"


def test_a_note_is_calm_and_a_warning_is_not(open_run: OpenRun) -> None:
    # issue #22: "Earlier turns were not sent" (a choice the package made, nothing wrong) was
    # drawn as an orange warning at a newcomer's second agent cell.
    note = ("Earlier turns were not sent: local is a small model that copies an earlier answer "
            "instead of calling the tools, so its tool loops start fresh (%%chat still gets "
            "them). <b>not markup</b>")
    view = reduce_events([
        RunStarted(run_id="run-7", agent="toolloop", model="local", t=time.time()),
        Warning_(message=note, level="note"), Warning_(message="Round 2 retried: timeout"),
        RoundStarted(round=1)])
    for dark in (False, True):
        page = open_run(view, dark=dark)
        assert page.locator(".ja-note").inner_text() == note
        assert page.locator(".ja-note b").count() == 0  # text, never markup
        assert page.locator(".ja-warning").count() == 1  # a real warning keeps its look
        warn_bg = page.locator(".ja-warning").evaluate("e => getComputedStyle(e).backgroundColor")
        note_bg = page.locator(".ja-note").evaluate("e => getComputedStyle(e).backgroundColor")
        assert note_bg == "rgba(0, 0, 0, 0)" and warn_bg != note_bg  # no orange tint
        name = "dark" if dark else "light"
        page.locator(".ja-run").screenshot(path=str(ARTIFACTS_DIR / f"note-{name}.png"))


def test_a_waiting_run_says_how_to_answer_from_a_new_cell(open_run: OpenRun) -> None:
    view = _running(5)
    view["status"] = "ask"
    view["hint"] = ("Waiting for your answer. Click an option, or run "
                    "`%agent resume run-7 --option N` / `--dismiss`. <b>not markup</b>")
    page = open_run(view, live=False)  # a saved notebook shows it too
    hint = page.locator(".ja-hint")
    assert "%agent resume run-7 --option N" in hint.inner_text()
    assert "`" not in hint.inner_text() and hint.locator("b").count() == 0  # text, not markup
    assert hint.locator("button.ja-copy").count() == 1
    # Once the run goes on, the line is gone.
    view["status"] = "running"
    assert open_run(view, live=False).locator(".ja-hint").count() == 0


def test_a_click_after_a_kernel_restart_says_so_and_gives_the_command(open_run: OpenRun) -> None:
    waiting = reduce_events([
        RunStarted(run_id="run-9", agent="toolloop", model="m"),
        ToolCalled(round=1, call_id="c1", name="bash", arguments=json.dumps({"command": COMMAND})),
        AskPending(call_id="c1", kind="approval", question="Run this command in the workspace?",
                   options=["Allow once", "Allow for this session", "Deny"], allow_other=False,
                   detail={"tool": "bash", "command": COMMAND}),
    ])
    page = open_run(waiting, live=False)
    result = page.evaluate(
        """async ([src, view]) => {
            const url = URL.createObjectURL(new Blob([src], {type: "text/javascript"}));
            const widget = (await import(url)).default.run;
            let tries = 0;
            // The comm of a restarted kernel: every send throws (what JupyterLab does).
            const model = {view, get(k) { return this[k]; }, on() {}, off() {},
                           send() { tries += 1; throw new Error("Cannot send"); }};
            const el = document.createElement("div");
            el.id = "gone";
            document.body.appendChild(el);
            widget.render({model, el});
            el.querySelector('.ja-option[data-index="2"]').click();
            await new Promise(r => setTimeout(r, 50));
            el.querySelector('.ja-option[data-index="1"]')?.click();  // a second click: nothing
            return {tries};
        }""",
        [BUNDLE.read_text(encoding="utf-8"), waiting],
    )
    assert result == {"tries": 1}
    card = page.locator("#gone")
    gone = card.locator(".ja-kernel-gone")
    assert "%agent resume run-9 --option 2" in gone.inner_text()
    assert "kernel was restarted" in gone.inner_text()
    assert gone.locator("button.ja-copy").count() == 1
    # No button stays clickable, no "sent" or "Cannot send" claim, the badge does not lie.
    assert card.locator(".ja-option:enabled, .ja-other-submit:enabled").count() == 0
    assert "Cannot send" not in card.inner_text() and "Answer sent" not in card.inner_text()
    ARTIFACTS_DIR.mkdir(exist_ok=True)
    card.screenshot(path=str(ARTIFACTS_DIR / "cards-kernel-gone.png"))


def test_nbconvert_html_reads_like_the_card_and_runs_nothing(browser: Any, tmp_path: Path) -> None:
    import nbformat
    from nbconvert import HTMLExporter

    from jupyter_agent.base.secrets import register_secret
    from jupyter_agent.view.bundle import build_bundle, output_metadata

    secret = "sk-live-secret-9f8e7d6c5b4a"
    register_secret(secret)
    hostile = '<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">'
    view = reduce_events([
        RunStarted(run_id="run-h", agent="toolloop", model="gpt-test"),
        ToolCalled(round=1, call_id="c1", name="bash",
                   arguments=json.dumps({"command": COMMAND, "note": hostile})),
        ToolStarted(round=1, call_id="c1", name="bash"),
        ToolReturned(round=1, call_id="c1", name="bash", output=f"3 a.csv\nkey={secret}",
                     seconds=0.42),
        UsageRecorded(round=1, model="gpt-test", input_tokens=120, output_tokens=30, cost=0.0012),
        TextDelta(round=2, text=f"## Result\n\nThere are **3** lines in `a.csv`.\n\n{hostile}\n\n"
                                "```python\nprint('<b>hi</b>')\n```"),
        RunFinished(status="done", answer="x", rounds=2, seconds=1.5),
    ])
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("%%toolloop\nCount the lines.")
    cell.outputs = [nbformat.v4.new_output("display_data", data=build_bundle(view, []),
                                           metadata=output_metadata(view))]
    nb.cells = [cell]
    body, _ = HTMLExporter().from_notebook_node(nb)
    assert secret not in body
    page_path = tmp_path / "export.html"
    page_path.write_text(body, encoding="utf-8")
    page = browser.new_page(viewport={"width": 960, "height": 700})
    # nbconvert's template loads require.js and MathJax from a CDN; offline, an empty script
    # stands in (a failed load would be a console error that is none of ours).
    page.route("https://cdnjs.cloudflare.com/**", lambda route: route.fulfill(
        status=200, body="", content_type="text/javascript"))
    page.goto(page_path.as_uri())
    out = page.locator(".jp-OutputArea-output").first
    text = out.inner_text()
    assert "window.pwned" in text  # shown as text...
    assert page.evaluate("window.pwned === undefined")  # ...never run
    assert out.locator("script, img, [onerror]").count() == 0
    # The card's layout: the call folds to one line with its arguments as name=value, not the
    # raw JSON; the answer is formatted; the footer has the counts.
    assert 'bash command="grep -c' in " ".join(text.split())
    assert out.locator("details summary").count() >= 1
    assert out.locator("strong", has_text="3").count() >= 1
    assert "120 in / 30 out tokens" in text
    ARTIFACTS_DIR.mkdir(exist_ok=True)
    out.locator("details").first.locator("summary").click()
    page.screenshot(path=str(ARTIFACTS_DIR / "nbconvert-run.png"), full_page=True)
    page.close()


def test_a_waiting_card_shows_its_run_ended_in_another_card_and_no_other_run_changes(
        open_run: OpenRun) -> None:
    # Issue #22 (hostile side): only cards of the same run follow, a later redraw of the dead
    # card's stale view keeps the end, and a card of another run keeps waiting.
    waiting = reduce_events([
        RunStarted(run_id="run-7", agent="plan", model="m"),
        ToolCalled(round=1, call_id="c1", name="ask_agent", arguments="{}"),
        AskPending(call_id="c1", kind="ask", question="Which venue?",
                   options=["Lyon", "Paris", "Nice"], allow_other=False),
    ])
    ended = {**copy.deepcopy(waiting), "status": "done", "ask": None, "answer": "Booked Lyon."}
    other = {**copy.deepcopy(waiting), "run_id": "run-8"}
    page = open_run(waiting, live=True)
    page.evaluate(
        """async ([ended, other, waiting]) => {
            const { renderRunInto } = await import("./render.js");
            const card = (id) => { const el = document.createElement("div"); el.id = id;
                                   document.body.appendChild(el); return el; };
            const o = card("other");
            renderRunInto(o, other, {onAction() {}});
            renderRunInto(card("resumed"), ended, undefined);
            window.redraw(waiting);  // the dead card drawn again from its own (stale) view
        }""",
        [ended, other, waiting],
    )
    old = page.locator("#run")
    expect(old.locator(".ja-ended-elsewhere")).to_have_count(1)
    assert "Booked Lyon." in old.inner_text()
    assert old.locator(".ja-ask-pending").count() == 0
    assert old.locator("[data-status=ask]").count() == 0
    kept = page.locator("#other")
    assert kept.locator(".ja-ended-elsewhere").count() == 0
    assert kept.locator(".ja-option:enabled").count() == 3


def test_a_typed_answer_is_drawn_once_and_the_agent_is_named(open_run: OpenRun) -> None:
    """Issue 37: the typed answer's JSON showed as text and again as the field table; the
    card did not say which agent ran."""
    from jupyter_agent.base.events import OutputChecked, ToolsOffered
    from jupyter_agent.view.bundle import render_markdown

    answer = '{"label": "billing", "urgency": 2}'
    view = reduce_events([
        RunStarted(run_id="run-t", agent="toolloop", model="gpt-test"),
        ToolsOffered(tools=["bash"], agent="sh", agent_source="session"),
        RoundStarted(round=1), TextDelta(round=1, text=answer),
        OutputChecked(schema_name="Ticket", valid=True,
                      data={"label": "billing", "urgency": 2}, errors=[], attempts=1),
        RunFinished(status="done", answer=answer),
    ])
    page = open_run(view, live=False)
    expect(page.locator(".ja-output-table")).to_contain_text("billing")
    assert page.locator(".ja-text").count() == 0  # no second, raw JSON rendering
    assert page.locator(".ja-run").inner_text().count("billing") == 1
    expect(page.locator(".ja-tools-line")).to_have_text(
        "Agent sh (this session's agent) · Tools: bash")
    md = render_markdown(view)
    assert md.count("billing") == 1 and "Agent sh (this session's agent) · Tools: bash" in md
    # An invalid answer keeps its text: the table cannot stand for it.
    bad = copy.deepcopy(view)
    bad["output"]["valid"] = False
    page = open_run(bad, live=False)
    assert page.locator(".ja-text").count() == 1
