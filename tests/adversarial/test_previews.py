"""Limits of what is shown and kept (docs/behaviour.md §12): the stream preview of a tool result
(5000 + 5000) in events, the node preview (500 + 500) and the history preview (10000) in turn
records, and at most 20 attachments. The model always gets the whole result."""

from __future__ import annotations

from pathlib import Path

import pytest

from jupyter_agent import attach_files, chat, tool, toolloop
from jupyter_agent.base.errors import ConfigError
from jupyter_agent.base.secrets import register_secret
from jupyter_agent.session import default_store
from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls

pytestmark = pytest.mark.timeout(60)

BIG = "HEAD" + "x" * 29_992 + "TAIL"  # 30000 characters, recognisable ends


def _big_tool() -> None:
    @tool
    def dump() -> str:
        """Return a long text."""
        return BIG


def test_a_long_tool_result_is_a_preview_in_events_and_whole_for_the_model(
        server: ScriptedOpenAI) -> None:
    _big_tool()
    server.enqueue(tool_calls([call("dump", {}, id="d1")]), text("read it"))
    run = toolloop("Dump.")
    assert run.status == "done"
    # The model got every character.
    assert server.requests[1]["messages"][-1]["content"] == BIG
    assert run.tool_calls[0]["output"] == BIG
    # The event (live card, store, notebook) keeps 5000 + 5000.
    returned = [e for e in run.events if e.type == "tool_returned"][0]
    assert returned.output == BIG[:5000] + "\n\n...[hide 20000 chars]...\n\n" + BIG[-5000:]
    assert run.view["items"][-2]["output"] == returned.output
    stored = [e for e in default_store().get_events(run.run_id) if e["type"] == "tool_returned"]
    assert stored[0]["output"] == returned.output
    # The session history (what the next turn sends) keeps it whole.
    saved = default_store().history_messages("default", 6)
    assert any(m.get("content") == BIG for m in saved)


def test_a_result_at_the_limit_is_not_cut(server: ScriptedOpenAI) -> None:
    exact = "y" * 10_000

    @tool
    def edge() -> str:
        """Return exactly 10000 characters."""
        return exact

    server.enqueue(tool_calls([call("edge", {}, id="e1")]), text("ok"))
    run = toolloop("Edge.")
    assert [e.output for e in run.events if e.type == "tool_returned"] == [exact]


def test_the_turn_record_keeps_node_and_history_previews(server: ScriptedOpenAI) -> None:
    _big_tool()
    server.enqueue(tool_calls([call("dump", {}, id="d1")]), text("read it"))
    run = toolloop("Dump.")
    turn = default_store().list_turns("default")[-1]
    assert turn.run_id == run.run_id
    assert turn.tools == [{"call_id": "d1", "name": "dump", "error": None,
                           "output": BIG[:500] + "\n\n...[hide 29000 chars]...\n\n"
                           + BIG[-500:]}]
    preview = turn.history_preview or ""
    assert "user: Dump." in preview
    assert "...[hide " in preview and preview.endswith("assistant: read it")
    assert len(preview) <= 10_000 + len("\n\n...[hide 99999 chars]...\n\n")


def test_a_short_chat_turn_keeps_its_whole_history_and_no_tools(server: ScriptedOpenAI) -> None:
    server.enqueue(text("Hello there."))
    chat("Hi!")
    turn = default_store().list_turns("default")[-1]
    assert turn.tools == []
    assert turn.history_preview is not None and turn.history_preview.endswith(
        "user: Hi!\nassistant: Hello there.")


def test_a_secret_is_masked_before_the_previews_cut(server: ScriptedOpenAI) -> None:
    """Hostile: a key at the very edge of the 500-character cut never survives in half."""
    secret = "sk-" + "S" * 40
    register_secret(secret)
    edge = "a" * 480 + secret + "b" * 2000

    @tool
    def leak() -> str:
        """Return a text with a key in it."""
        return edge

    server.enqueue(tool_calls([call("leak", {}, id="l1")]), text("done"))
    toolloop("Leak.")
    turn = default_store().list_turns("default")[-1]
    kept = turn.tools[0]["output"]
    assert "SSSSS" not in kept and secret[:10] not in kept
    assert "SSSSS" not in (turn.history_preview or "")


def test_at_most_20_attachments(tmp_path: Path) -> None:
    files = []
    for i in range(21):
        f = tmp_path / f"f{i}.txt"
        f.write_text(str(i))
        files.append(f)
    reader = attach_files(files[:20])
    assert "file_20" in reader.description
    with pytest.raises(ConfigError) as info:
        attach_files(files)
    message = str(info.value)
    assert "\n" not in message and "at most 20 files, not 21" in message
    assert all(f.exists() for f in files)  # nothing lost
