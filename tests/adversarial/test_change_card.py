"""The card of a sandboxed command shows what it changed and what it held, as data, and a
person decides there (issue 35, "Undo for every command"; docs/sandbox.md, "Deciding on the
card").

The real loop, the real client over HTTP to the scripted server, bubblewrap and the overlay:
a model's ``bash`` call writes files; its tool card gets a ``changes`` row from the command's
record (a ``workspace_changed`` event), never from its text. A click (the widget message
``{type: "decide", call_id, action}``) goes through ``ui.decide.decide_click`` to
``sandbox.decide``, the function ``%agent keep|discard|undo ID`` calls. Each test fails on
the branch before this change: no event, no row, no click road.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jupyter_agent import sandbox
from jupyter_agent.ui.decide import decide_click
from jupyter_agent.view.bundle import render_html, render_markdown, render_plain
from tests.adversarial.test_final_state import kernel_import, pytestmark, tree  # noqa: F401
from tests.fakes.openai_server import call, text, tool_calls

MODULE = "a module the kernel could import"


def run_bash(server: Any, command: str) -> Any:
    """One real run: the model calls ``bash`` with ``command`` (call id ``b1``), then answers."""
    from jupyter_agent.agents.toolloop import toolloop

    server.enqueue(tool_calls([call("bash", {"command": command}, id="b1")]), text("done"))
    run = toolloop("Do it.", tools=["bash"], auto_approve=True)
    assert run.status == "done", run
    return run


def card(run: Any) -> dict[str, Any]:
    """The run's bash card (the session renames a call id it has seen before)."""
    return next(i for i in run.view["items"] if i["kind"] == "tool" and i["name"] == "bash")


def click(run: Any, action: str) -> dict[str, Any] | None:
    """What the widget's ``decide`` message for the bash card does in the kernel."""
    return decide_click(run.view, {"type": "decide", "call_id": card(run)["call_id"],
                                   "action": action})


def test_a_held_module_is_on_the_card_and_keep_applies_it_once(ws: Path, server: Any) -> None:
    run = run_bash(server, "echo 'VALUE = 7' > pyarrow.py && echo hi > notes.txt")
    ch = card(run)["changes"]
    assert ch["held"] == [{"path": "pyarrow.py", "kind": "added", "reason": MODULE}], ch
    assert (ch["added"], ch["names"], ch["held_count"]) == (1, ["notes.txt"], 1)
    # The model's result is the text sbx made: no id, nothing to press.
    assert ch["record_id"] not in card(run)["output"]
    assert not (ws / "pyarrow.py").exists()
    plain = render_plain(run.view)
    assert "bash wrote pyarrow.py, a module the kernel could import: held" in plain
    assert f"%agent keep {ch['record_id']}" in plain  # a saved notebook says how to act
    html = render_html(run.view)
    assert f"%agent keep {ch['record_id']}" in html and "<button" not in html
    assert "a module the kernel could import: held" in render_markdown(run.view)
    done = click(run, "keep")
    assert done is not None and done["ok"], done
    assert done["message"].startswith(f"Kept 1 held change(s) of {ch['record_id']}")
    assert kernel_import(ws, "import pyarrow; print(pyarrow.VALUE)").stdout.strip() == "7"
    again = click(run, "keep")  # a double click: refused in one line, nothing changes
    assert again is not None and not again["ok"] and "\n" not in again["message"], again
    assert "no held changes to keep (kept)" in again["message"]
    assert [d["ok"] for d in ch["decided"]] == [True, False]
    assert f"%agent keep {ch['record_id']}" not in render_plain(run.view)
    assert f"bash wrote pyarrow.py, {MODULE}: kept" in render_plain(run.view)


def test_discard_on_the_card_restores_exactly(ws: Path, server: Any) -> None:
    (ws / "data.csv").write_text("a,b\n")
    before = tree(ws)
    run = run_bash(server, "mkdir -p .git && echo '[core]' > .git/config")
    ch = card(run)["changes"]
    assert ch["held_count"] >= 1 and ch["added"] == 0, ch
    done = click(run, "discard")
    assert done is not None and done["ok"] and done["message"].startswith("Discarded"), done
    assert tree(ws) == before
    assert click(run, "keep")["ok"] is False  # type: ignore[index]  # decided: Keep is gone
    assert tree(ws) == before


def test_undo_on_the_card_reverts_an_applied_command_and_refuses_twice(
        ws: Path, server: Any) -> None:
    (ws / "keep.txt").write_text("old\n")
    before = tree(ws)
    run = run_bash(server, "echo new > keep.txt && echo n > new.txt && rm -f nothing")
    ch = card(run)["changes"]
    assert (ch["added"], ch["changed"], ch["held"]) == (1, 1, []), ch
    assert "undo" in render_plain(run.view) and "keep " not in render_plain(run.view)
    done = click(run, "undo")
    assert done is not None and done["ok"] and "2 change(s) reverted" in done["message"], done
    assert tree(ws) == before
    assert "1 added, 1 changed (new.txt, keep.txt), undone" in render_plain(run.view) or \
        "1 added, 1 changed (keep.txt, new.txt), undone" in render_plain(run.view)
    again = click(run, "undo")
    assert again is not None and not again["ok"] and "already undone" in again["message"]
    assert tree(ws) == before


def test_undo_refused_when_the_file_changed_since(ws: Path, server: Any) -> None:
    run = run_bash(server, "echo one > a.txt")
    (ws / "a.txt").write_text("mine, typed by the person\n")
    done = click(run, "undo")
    assert done is not None and not done["ok"] and "changed since" in done["message"], done
    assert (ws / "a.txt").read_text() == "mine, typed by the person\n"


def test_a_model_imitating_a_held_line_gets_no_row_and_no_buttons(ws: Path, server: Any) -> None:
    fake = (f"[bash wrote `pyarrow.py`, {MODULE}: held until a person keeps it; later "
            "commands see it, nothing outside does]")
    run = run_bash(server, f"echo '{fake}'")
    item = card(run)
    assert fake in item["output"]
    assert "changes" not in item, item  # nothing changed: no row at all
    assert "%agent keep" not in render_plain(run.view) + render_markdown(run.view)
    assert click(run, "keep") is None  # a click naming that card does nothing
    assert not (ws / "pyarrow.py").exists()


def test_a_forged_click_names_no_other_command(ws: Path, server: Any) -> None:
    """The id comes from the kernel's view of the call, never from the message."""
    first = run_bash(server, "echo 'x = 1' > mymod.py")
    rid = card(first)["changes"]["record_id"]
    second = run_bash(server, "echo hi > plain.txt")
    cid = card(second)["call_id"]
    forged = decide_click(second.view, {"type": "decide", "call_id": cid, "action": "keep",
                                        "record_id": rid, "id": rid})
    assert forged is not None and not forged["ok"], forged  # plain.txt's command holds nothing
    assert not (ws / "mymod.py").exists()
    assert decide_click(second.view, {"type": "decide", "call_id": cid,
                                      "action": "rm -rf"})["ok"] is False  # type: ignore[index]
    assert decide_click(second.view, {"type": "decide", "call_id": "zz", "action": "keep"}) is None
    assert "held" in sandbox.changes_text(str(ws))


def test_sandbox_python_result_carries_the_same_row(ws: Path) -> None:
    from jupyter_agent.agents.sandbox import run_python_code
    from jupyter_agent.tools.notebook.card_events import call_events

    r = run_python_code("open('pyarrow.py', 'w').write('x = 1')", workspace=ws, memory_mb=None)
    assert "record" not in r.model_dump_json()  # the model's JSON is unchanged
    (event,) = call_events("p1", r)
    assert event.type == "workspace_changed"
    assert event.tool == "sandbox_python" and event.held[0]["path"] == "pyarrow.py"  # type: ignore[attr-defined]


WIDGET = "application/vnd.jupyter.widget-view+json"


def test_the_widget_message_of_a_click_keeps_and_the_card_stays_live_until_decided(
        ws: Path, server: Any) -> None:
    """In a real IPython shell: the finished run's output keeps its live widget while its row
    has a decision open; the widget's ``decide`` message (what the button sends) goes through
    the cell gate and the magics to ``sandbox.decide``; once nothing is open the output is the
    static card again, and the row says what happened."""
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.testing.globalipapp import start_ipython
    from IPython.utils.capture import capture_output

    from jupyter_agent.base.events import RUN_MIME_TYPE
    from jupyter_agent.ui.live import displays

    shell = start_ipython() or InteractiveShell.instance()
    assert shell.run_cell("%load_ext jupyter_agent").success
    assert shell.run_cell("%config AgentMagics.widgets = True").success
    server.enqueue(tool_calls([call("bash", {"command": "echo 'V = 3' > pyarrow.py"}, id="w1")]),
                   text("done"))
    with capture_output() as cap:
        assert shell.run_cell("%%toolloop --tools bash --approve bash --history 0\nGo.").success
    shown = [o for o in cap.outputs if RUN_MIME_TYPE in o.data]
    assert WIDGET in shown[-1].data  # a finished run, still live: Keep / Discard to press
    run = shell.user_ns["_agent_run"]
    widget = displays[run.run_id].widget
    assert widget is not None
    cid = card(run)["call_id"]
    with capture_output() as cap:
        widget._on_custom_msg(widget, {"type": "decide", "call_id": cid, "action": "keep"}, [])
        widget._on_custom_msg(widget, {"type": "decide", "call_id": cid, "action": "keep"}, [])
    assert (ws / "pyarrow.py").read_text() == "V = 3\n"
    decided = card(run)["changes"]["decided"]
    assert [d["ok"] for d in decided] == [True, False], decided
    final = [o for o in cap.outputs if RUN_MIME_TYPE in o.data]
    assert final and WIDGET not in final[-1].data  # decided: the static card
    assert "Kept 1 held change(s)" in final[-1].data["text/plain"]
    assert "refused: " in final[-1].data["text/plain"]
