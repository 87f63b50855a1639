"""Replay cards: the recorded option is marked, the others say why in one line, a refused
click leaves the question waiting and the card clickable.

Real parts: the real client over HTTP to the scripted server while recording, the cassette
while replaying, SQLite, the real reducer and the kernel's click handler, headless Chromium.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from jupyter_agent.agents.plan.agent import plan
from jupyter_agent.agents.resume import Answer, resume
from jupyter_agent.edge.magics import _on_click
from jupyter_agent.replay import go_live, start
from jupyter_agent.session import default_store
from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls

from .render_harness import ARTIFACTS_DIR, chromium_path, launch_browser, serve, write_page

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(chromium_path() is None, reason="no system Chromium"),
]

ASK = {"reason": "The format decides the whole report.", "blockerType": "ambiguous_goal",
       "question": "Which format should the report use?", "options": ["Markdown", "HTML", "PDF"]}
TASK = "Write a short report about apples."
LINE = ("This recording answered option 2: click it, or go live (%agent live) and re-run "
        "the cell.")


@pytest.fixture()
def replayed(server: ScriptedOpenAI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
             ) -> Iterator[Any]:
    """A plan run replayed up to its question; the recording answered it with option 2."""
    cassette = tmp_path / "plan.cassette.json"
    server.enqueue(tool_calls([call("ask_agent", ASK)]), text("I will write it in HTML."))
    start("record", cassette)
    plan(TASK)
    resume(None, Answer("option", option_index=2))  # the notebook's `%agent resume --option 2`
    go_live()
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    start("replay", cassette)
    run = plan(TASK)
    assert run.status == "ask"
    yield run
    go_live()


def _page(browser: Any, directory: Path, url: str, view: dict[str, Any]) -> Any:
    write_page(directory, view)
    page = browser.new_page(viewport={"width": 960, "height": 700})
    page.goto(f"{url}{directory.name}/index.html")
    page.wait_for_function("window.ready === true")
    return page


def test_replay_marks_the_recorded_option_and_a_refused_click_leaves_it_waiting(
        replayed: Any, tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    run = replayed
    assert run.view["ask"]["recorded_option"] == 2
    call_id = run.pending.call_id
    # The user clicks option 1 (twice: the second is another refusal, not a lost click).
    for seq in (1, 2):
        _on_click(run, {"type": "answer", "call_id": call_id, "how": "option",
                        "option_index": 1, "answer": "Markdown"})
        refused = run.view["ask"]["refused"]
        assert refused["seq"] == seq and "option 2" in refused["message"]
        assert "\n" not in refused["message"]
    # What stayed safe: the run still waits on the same card, no error, no warning item.
    assert run.status == "ask" and not run.error and run.pending.call_id == call_id
    assert [r.run_id for r in default_store().list_pending()] == [run.run_id]
    assert not [it for it in run.view["items"] if it["kind"] == "warning"]
    waiting = copy.deepcopy(run.view)
    waiting.pop("hint", None)
    before = copy.deepcopy(waiting)
    before["ask"].pop("refused")

    with sync_playwright() as p, serve(tmp_path) as url:
        browser = launch_browser(p)
        page = _page(browser, tmp_path / "card", url, before)
        card = page.locator(".ja-ask-pending")
        marked = card.locator(".ja-option.ja-recorded")
        assert marked.count() == 1 and marked.get_attribute("data-index") == "2"
        assert "▶ recorded" in marked.inner_text()
        expect(card.locator(".ja-recorded-line")).to_have_text(LINE)
        # The click on option 1 goes out once; the kernel refuses it (the view _on_click left).
        card.locator('.ja-option[data-index="1"]').click()
        assert page.evaluate("window.actions")[0]["option_index"] == 1
        expect(card.locator(".ja-ask-status")).to_contain_text("Answer")
        page.evaluate("(v) => window.redraw(v)", waiting)
        # The refusal says what the line under the buttons says: that line is marked, and
        # "This recording answered option 2" is on the card once.
        expect(page.locator(".ja-ask-pending .ja-recorded-line.ja-ask-refused")).to_have_text(LINE)
        text = page.locator(".ja-ask-pending").inner_text()
        assert text.count("This recording answered") == 1, text
        assert "Answer sent" not in text
        buttons = page.locator(".ja-ask-pending .ja-option")
        assert all(buttons.nth(i).is_enabled() for i in range(buttons.count()))
        page.locator(".ja-ask-pending").screenshot(path=str(ARTIFACTS_DIR / "replay-refused.png"))
        # A redraw of the same refusal does not undo the next click; option 2 goes out.
        page.locator('.ja-ask-pending .ja-option[data-index="2"]').click()
        page.evaluate("(v) => window.redraw(v)", waiting)
        assert [a["option_index"] for a in page.evaluate("window.actions")] == [1, 2]
        assert page.locator(".ja-ask-pending .ja-option").first.is_disabled()
        # A saved notebook (no kernel) marks it too, with nothing clickable.
        write_page(tmp_path / "saved", before, live=False)
        saved = browser.new_page()
        saved.goto(f"{url}saved/index.html")
        saved.wait_for_function("window.ready === true")
        assert saved.locator(".ja-option.ja-recorded").count() == 1
        assert saved.locator(".ja-recorded-line").count() == 1
        # A damaged view (an option the card lacks, a string) marks nothing and says nothing.
        for bad in (9, 0, "2", None):
            hostile = copy.deepcopy(before)
            hostile["ask"]["recorded_option"] = bad
            page.evaluate("(v) => window.renderRun(v)", hostile)
            assert page.locator(".ja-recorded, .ja-recorded-line").count() == 0
            assert page.locator(".ja-ask-pending .ja-option:enabled").count() == 3
        browser.close()

    # The recorded option goes on, and the mark is gone with the question.
    done = resume(run.run_id, Answer("option", option_index=2), run=run,
                  expected_call_id=call_id)
    assert done.status == "done" and done.view["ask"] is None
    # The answered card keeps the question and the answer, not the replay-only notes.
    asks = [it for it in done.view["items"] if it["kind"] == "ask"]
    assert [a["answered"]["option_index"] for a in asks] == [2]
    assert "recorded_option" not in asks[0] and "refused" not in asks[0]


def test_live_mode_marks_nothing(server: ScriptedOpenAI) -> None:
    server.enqueue(tool_calls([call("ask_agent", ASK)]))
    run = plan(TASK)
    assert run.status == "ask" and "recorded_option" not in run.view["ask"]
    _on_click(run, {"type": "answer", "call_id": "not-this-card", "how": "option",
                    "option_index": 1, "answer": "Markdown"})
    # A click naming another card is no refusal of this one: a warning, the card untouched.
    assert "refused" not in run.view["ask"]
    assert run.view["items"][-1]["kind"] == "warning"
