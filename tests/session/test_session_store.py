"""Sessions, history, turns, permissions and transcripts in the SQLite store."""

from __future__ import annotations

import sqlite3
import sys
import threading
from pathlib import Path

import pytest

from jupyter_agent.session import (
    Store,
    default_data_dir,
    default_store,
    register_secret,
    reset_default_store,
)
from jupyter_agent.session._migrations import SCHEMA_VERSION
from tests.stored import stored_messages


def test_simplest_use(store: Store) -> None:
    turn = store.start_turn("notes", mode="ask")
    store.append_messages(
        "notes",
        turn,
        [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi there"}],
    )
    store.finish_turn(turn, input_tokens=12, output_tokens=3, cost=0.5, model="gpt-x")

    assert stored_messages(store, "notes") == [
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": "hi there"},
    ]
    assert store.usage("notes").output_tokens == 3


def test_history_survives_reopen(db_path: Path) -> None:
    with Store(db_path) as first:
        first.append_messages("s", None, [{"role": "user", "content": "kept"}])
    with Store(db_path) as second:
        assert stored_messages(second, "s") == [{"role": "user", "content": "kept"}]


# -- sessions -------------------------------------------------------------------------------


def test_ensure_session_creates_once_and_keeps_group(store: Store) -> None:
    created = store.ensure_session("a", group="work")
    again = store.ensure_session("a", group="other")
    assert created.group == again.group == "work"
    assert again.created == created.created
    assert store.get_session("missing") is None
    with pytest.raises(ValueError):
        store.ensure_session("")


def test_list_sessions_by_group(store: Store) -> None:
    store.ensure_session("a", group="g1")
    store.ensure_session("b", group="g2")
    store.ensure_session("c", group="g1")
    assert {s.name for s in store.list_sessions()} == {"a", "b", "c"}
    assert sorted(s.name for s in store.list_sessions("g1")) == ["a", "c"]
    store.append_messages("a", None, [{"role": "user", "content": "x"}])
    assert store.list_sessions()[0].name == "a"  # most recently updated first


def test_bind_agent_and_model(store: Store, tmp_path: Path) -> None:
    bound = store.bind_agent("s", "writer", tmp_path / "ws")
    assert (bound.agent, bound.workspace) == ("writer", str(tmp_path / "ws"))
    assert store.bind_model("s", "deepseek").model == "deepseek"
    unbound = store.bind_agent("s", None)
    assert (unbound.agent, unbound.workspace, unbound.model) == (None, None, "deepseek")
    assert store.bind_model("s", None).model is None


def test_reset_session_keeps_record_and_bindings(store: Store) -> None:
    store.bind_agent("s", "coder", "/tmp/ws")
    turn = store.start_turn("s", mode="agent", run_id="r1")
    store.append_messages("s", turn, [{"role": "user", "content": "x"}])
    store.create_run("r1", "s", "plan")
    store.suspend("r1", {"call_id": "c1"})

    store.reset_session("s")

    record = store.get_session("s")
    assert record is not None and record.agent == "coder"
    assert stored_messages(store, "s") == []
    assert store.list_turns("s") == []
    assert store.claim_pending("r1") is None
    run = store.get_run("r1")
    assert run is not None and run.status == "superseded"


# -- messages -------------------------------------------------------------------------------


def test_messages_keep_full_openai_dicts(store: Store) -> None:
    call = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "ünïcode ✓"}]},
        {"role": "assistant", "content": None, "tool_calls": [call], "reasoning_content": "hm"},
        {"role": "tool", "tool_call_id": "call_1", "content": "42"},
    ]
    assert store.append_messages("s", None, messages) == [1, 2, 3]
    assert store.append_messages("s", None, [{"role": "assistant", "content": "ok"}]) == [4]
    assert stored_messages(store, "s") == [*messages, {"role": "assistant", "content": "ok"}]


def test_history_messages_counts_rounds_from_user_messages(store: Store) -> None:
    rounds = [
        [{"role": "user", "content": f"q{i}"}, {"role": "assistant", "content": f"a{i}"}]
        for i in range(3)
    ]
    store.append_messages("s", None, [{"role": "system", "content": "sys"}])
    for messages in rounds:
        store.append_messages("s", None, messages)

    assert store.history_messages("s", 1) == rounds[2]
    assert store.history_messages("s", 2) == rounds[1] + rounds[2]
    assert len(store.history_messages("s", 10)) == 7  # everything, system included
    assert store.history_messages("s", None) == stored_messages(store, "s")
    assert store.history_messages("s", 0) == []
    assert store.history_messages("empty", 3) == []


# -- turns ----------------------------------------------------------------------------------


def test_turn_records_mode_intent_model_and_tokens(store: Store) -> None:
    intent = {"category": "tool_execution", "confidence": 0.8, "keywords": ["run"]}
    turn = store.start_turn(
        "s", mode="agent", run_id="r1", agent="coder", intent=intent, model="m1", profile="p1"
    )
    running = next(t for t in store.list_turns("s") if t.id == turn)
    assert running.status == "running" and running.duration is None

    done = store.finish_turn(
        turn, status="done", input_tokens=100, output_tokens=20, cost=0.25, model="m2"
    )
    assert done.intent == intent
    assert (done.model, done.profile) == ("m2", "p1")  # failover changed the model only
    assert done.duration is not None and done.duration >= 0
    assert [t.id for t in store.list_turns("s")] == [turn]

    with pytest.raises(ValueError):
        store.start_turn("s", mode="chat")  # type: ignore[arg-type]
    with pytest.raises(KeyError):
        store.finish_turn("nope")


def test_usage_totals_and_by_model(store: Store) -> None:
    for model, tokens in [("a", 10), ("b", 20), ("a", 30)]:
        turn = store.start_turn("s", mode="ask", model=model)
        store.finish_turn(turn, input_tokens=tokens, output_tokens=1, cost=tokens / 10, duration=2)
    totals = store.usage("s")
    assert (totals.turns, totals.input_tokens, totals.output_tokens) == (3, 60, 3)
    assert totals.cost == pytest.approx(6.0)
    assert totals.seconds == pytest.approx(6.0)
    assert totals.by_model["a"]["input_tokens"] == 40
    assert store.usage("none").turns == 0


# -- transcript -----------------------------------------------------------------------------


def test_session_transcript_joins_runs_and_tool_errors(store: Store) -> None:
    turn = store.start_turn("s", mode="agent", run_id="r1")
    store.create_run("r1", "s", "toolloop")
    call = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
    store.append_messages(
        "s",
        turn,
        [
            {"role": "user", "content": "find it"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": "Tool error: KeyError: x"},
            {"role": "assistant", "content": "not found"},
        ],
    )
    store.append_events(
        "r1",
        [
            {"type": "text_delta", "round": 1, "text": "not"},
            {"type": "tool_returned", "round": 1, "call_id": "c1", "name": "lookup",
             "output": "Tool error: KeyError: x", "error": "KeyError: x"},
        ],
    )

    entries = store.session_transcript("s")
    assert [e["role"] for e in entries] == ["user", "assistant", "tool", "assistant"]
    assert all(e["run_id"] == "r1" and e["turn_id"] == turn for e in entries)
    assert entries[1]["tool_calls"] == [{"id": "c1", "name": "lookup", "arguments": "{}"}]
    assert (entries[2]["tool_name"], entries[2]["tool_error"]) == ("lookup", "KeyError: x")
    assert entries[3]["text"] == "not found"


def test_transcript_entries_have_the_typed_shape() -> None:
    # session_transcript promises TranscriptDict: the model it dumps has the same fields.
    from typing import get_type_hints

    from jupyter_agent.session import TranscriptDict, TranscriptEntry

    assert list(get_type_hints(TranscriptDict)) == list(TranscriptEntry.model_fields)


def test_transcript_of_odd_messages_is_read_not_refused(store: Store) -> None:
    # Messages written by another client (a non-string name, arguments as an object, a call
    # that is not an object): the transcript reads what it can instead of failing whole.
    turn = store.start_turn("s", mode="agent", run_id="r1")
    store.create_run("r1", "s", "toolloop")
    call = {"id": "c1", "type": "function",
            "function": {"name": "lookup", "arguments": {"q": "x"}}}
    store.append_messages("s", turn, [
        {"role": "user", "content": "find it"},
        {"role": "assistant", "content": None, "tool_calls": [call, "not a call"]},
        {"role": "tool", "tool_call_id": "c1", "name": 7, "content": "found"},
    ])
    entries = store.session_transcript("s")
    assert entries[1]["tool_calls"] == [{"id": "c1", "name": "lookup", "arguments": '{"q": "x"}'}]
    assert entries[2]["tool_name"] == "lookup"


# -- transactions and threads ---------------------------------------------------------------


def test_transaction_is_all_or_nothing(store: Store) -> None:
    with pytest.raises(RuntimeError), store.transaction():
        store.append_messages("s", None, [{"role": "user", "content": "lost"}])
        store.bind_model("s", "gpt-4.1")
        raise RuntimeError("boom")
    assert stored_messages(store, "s") == []
    assert store.get_session("s") is None

    with store.transaction():
        store.append_messages("s", None, [{"role": "user", "content": "kept"}])
        with pytest.raises(ValueError):
            raise ValueError("an error caught inside the transaction")
    assert stored_messages(store, "s") == [{"role": "user", "content": "kept"}]


def test_worker_threads_write_concurrently(store: Store) -> None:
    errors: list[BaseException] = []

    def write(tag: int) -> None:
        try:
            for i in range(50):
                store.append_messages("s", None, [{"role": "user", "content": f"{tag}-{i}"}])
        except BaseException as exc:  # reported to the main thread below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(tag,)) for tag in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    contents = [m["content"] for m in stored_messages(store, "s")]
    assert len(contents) == 200
    for tag in range(4):
        assert [c for c in contents if c.startswith(f"{tag}-")] == [f"{tag}-{i}" for i in range(50)]


def test_write_waits_for_another_writer_instead_of_failing(store: Store, db_path: Path) -> None:
    other = sqlite3.connect(db_path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    other.execute("INSERT INTO permissions VALUES ('s', 'held', 'allow', 0)")

    def release_later() -> None:
        threading.Event().wait(0.3)  # hold the write lock while the store tries to write
        other.execute("COMMIT")

    releaser = threading.Thread(target=release_later)
    releaser.start()
    store.append_messages("s", None, [{"role": "user", "content": "after the lock"}])
    releaser.join()
    other.close()
    assert stored_messages(store, "s") == [{"role": "user", "content": "after the lock"}]
    row = store._db.connection().execute("SELECT tool FROM permissions").fetchall()
    assert row == [("held",)]


# -- file, schema and defaults --------------------------------------------------------------


def test_wal_mode_and_schema_version(store: Store, db_path: Path) -> None:
    assert store.journal_mode == "wal"
    raw = sqlite3.connect(db_path)
    try:
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert raw.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert raw.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        raw.close()


def test_closed_store_refuses_use(db_path: Path) -> None:
    store = Store(db_path)
    store.close()
    with pytest.raises(RuntimeError, match="closed"):
        store.history_messages("s")


def test_default_store_honours_jupyter_agent_home(
    _isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = default_store()
    assert first.path == _isolated_home / "store.sqlite3"
    assert first.path.exists()
    assert default_store() is first

    monkeypatch.setenv("JUPYTER_AGENT_HOME", str(tmp_path / "elsewhere"))
    assert default_store() is first  # read once, at the first call
    reset_default_store()
    assert default_store().path == tmp_path / "elsewhere" / "store.sqlite3"


@pytest.mark.skipif(sys.platform != "linux", reason="XDG layout is the Linux default")
def test_default_data_dir_without_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JUPYTER_AGENT_HOME")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_data_dir() == tmp_path / "xdg" / "jupyter-agent"
    # Without platformdirs the same XDG rule applies.
    monkeypatch.setitem(sys.modules, "platformdirs", None)
    assert default_data_dir() == tmp_path / "xdg" / "jupyter-agent"
    monkeypatch.delenv("XDG_DATA_HOME")
    assert default_data_dir() == Path.home() / ".local" / "share" / "jupyter-agent"


# -- keys never reach the file --------------------------------------------------------------


def test_api_keys_never_reach_the_file(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env_key = "sk-test-" + "q7" * 20
    profile_key = "ds-" + "k9" * 16
    code_key = "code-key-" + "z3" * 12
    monkeypatch.setenv("OPENAI_API_KEY", env_key)
    monkeypatch.setenv("DEEPSEEK_API_KEY", profile_key)
    register_secret(code_key)
    leaks = f"env={env_key} profile={profile_key} code={code_key}"

    with Store(db_path) as store:
        turn = store.start_turn("s", mode="agent", run_id="r1", intent={"text": leaks})
        store.create_run("r1", "s", "plan")
        store.append_messages("s", turn, [{"role": "tool", "tool_call_id": "c", "content": leaks}])
        store.append_events("r1", [{"type": "tool_returned", "round": 1, "call_id": "c",
                                     "name": "bash", "output": leaks}])
        store.suspend("r1", {"call_id": "c2", "messages": [{"role": "user", "content": leaks}]})
        store.finish_turn(turn, status="error", error=leaks)
        assert "[redacted]" in stored_messages(store, "s")[0]["content"]
        pending = store.claim_pending("r1")
        assert pending is not None and env_key not in str(pending)

    stored = b"".join(p.read_bytes() for p in db_path.parent.iterdir() if p.is_file())
    for key in (env_key, profile_key, code_key):
        assert key.encode() not in stored


def test_a_store_folder_made_by_another_process_meanwhile_is_used(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two processes opening a new store at once: both see no folder, one makes it first;
    the other goes on with it instead of failing with 'File exists' (seen in CI)."""
    from jupyter_agent.session._db import prepare_store_file

    folder = tmp_path / "jupyter-agent"
    real_exists = Path.exists
    folder.mkdir()  # the other process won the race
    monkeypatch.setattr(Path, "exists",
                        lambda self, *a, **k: False if self == folder else real_exists(self))
    prepare_store_file(folder / "store.sqlite3")
    assert (folder / "store.sqlite3").is_file()
