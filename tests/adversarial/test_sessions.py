"""Sessions under hostile conditions: odd notebook paths, an old store file, half turns."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from jupyter_agent.base.config import Settings, default_session
from jupyter_agent.session._migrations import MIGRATIONS
from jupyter_agent.session.store import Store


@pytest.mark.parametrize(("path", "session"), [
    ("report.ipynb", "notebook:report.ipynb"),
    ("  dir/with spaces/a.ipynb \n", "notebook:dir/with spaces/a.ipynb"),
    ("evil\nname\r\t.ipynb", "notebook:evil name .ipynb"),
    ("", "default"),
    ("   ", "default"),
])
def test_the_notebook_session_is_one_line_and_never_empty(
        monkeypatch: pytest.MonkeyPatch, path: str, session: str) -> None:
    monkeypatch.setenv("JPY_SESSION_NAME", path)
    assert default_session() == session
    assert Settings().session == session


def test_a_script_uses_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    assert Settings().session == "default"


def test_an_old_store_keeps_its_default_history_readable(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    conn = sqlite3.connect(path)
    for script in MIGRATIONS[:2]:  # a file of the release before runs had an origin
        conn.executescript(script)
    conn.execute("PRAGMA user_version = 2")
    conn.execute("INSERT INTO sessions VALUES ('default', NULL, NULL, NULL, NULL, 1, 1)")
    conn.execute("INSERT INTO runs (run_id, session, kind, status, created, updated, pending,"
                 " pending_call_id) VALUES ('r1', 'default', 'plan', 'ask', 1, 1, '{}', 'c1')")
    conn.execute("INSERT INTO turns (id, session, run_id, mode, started, status) VALUES"
                 " ('t1', 'default', 'r1', 'agent', 1, 'ask')")
    conn.execute("INSERT INTO messages VALUES ('default', 1, 'user', "
                 "'{\"role\": \"user\", \"content\": \"old question\"}', 't1', 1)")
    conn.execute("INSERT INTO messages VALUES ('default', 2, 'user', "
                 "'{\"role\": \"user\", \"content\": \"no turn\"}', NULL, 2)")
    conn.commit()
    conn.close()

    with Store(path) as store:
        run = store.get_run("r1")
        assert run is not None and run.origin is None and run.status == "ask"
        # Readable as before; the waiting run's half turn stays out of the model's history.
        assert [e["text"] for e in store.session_transcript("default")] == ["old question",
                                                                           "no turn"]
        assert store.history_messages("default") == [{"role": "user", "content": "no turn"}]
        # A run of no origin is never superseded by a new turn implicitly.
        assert store.supersede_pending("default", origin="cell:x") == []
        assert store.claim_pending("r1", "c1") == {}


def test_a_superseded_half_turn_never_reaches_the_model(tmp_path: Path) -> None:
    with Store(tmp_path / "s.sqlite3") as store:
        store.create_run("asked", "s", "plan", origin="cell:1")
        turn = store.start_turn("s", mode="agent", run_id="asked")
        call = {"id": "a1", "type": "function",
                "function": {"name": "ask_agent", "arguments": "{}"}}
        store.append_messages("s", turn, [{"role": "user", "content": "plan it"},
                                          {"role": "assistant", "content": "",
                                           "tool_calls": [call]}])
        store.suspend("asked", {"n": 1}, call_id="a1")
        store.finish_turn(turn, status="ask")
        assert store.supersede_pending("s", origin="cell:1") == ["asked"]
        # A dangling tool call (no result) would make the provider refuse every later request.
        assert store.history_messages("s") == []
        assert [t.status for t in store.list_turns("s")] == ["superseded"]
        assert store.history_messages("s", 0) == [] and store.history_messages("s", -3) == []
