"""History read as a window: the last rounds come from the session's end, exactly as a full
read orders them, at a cost that does not grow with the session."""

from __future__ import annotations

import sqlite3
import uuid
from typing import Any

import pytest

from jupyter_agent.session import Store
from jupyter_agent.session._sessions import turn_ordered

UNFINISHED = {"ask", "running", "superseded"}


def reference(store: Store, session: str, rounds: int | None) -> list[dict[str, Any]]:
    """The window computed from a full read of the session (the order's definition)."""
    with store._db.read() as conn:
        rows = turn_ordered(conn, session)
    out = [m for _, status, m in rows if status not in UNFINISHED]
    if rounds is None:
        return out
    starts = [i for i, m in enumerate(out) if m.get("role") == "user"]
    return out[starts[-rounds] if len(starts) >= rounds else 0:]


def turn(store: Store, session: str, messages: list[dict[str, Any]],
         status: str = "done") -> str:
    run_id = uuid.uuid4().hex
    store.create_run(run_id, session, "toolloop")
    tid = store.start_turn(session, run_id=run_id)
    store.append_messages(session, tid, messages)
    if status == "ask":
        store.suspend(run_id, {"call_id": "c1"})
    elif status != "running":
        store.set_status(run_id, status)  # type: ignore[arg-type]
    return run_id


def qa(n: int) -> list[dict[str, Any]]:
    return [{"role": "user", "content": f"q{n}"}, {"role": "assistant", "content": f"a{n}"}]


def tool_round(n: int, calls: int) -> list[dict[str, Any]]:
    ids = [f"c{n}-{i}" for i in range(calls)]
    return [{"role": "user", "content": f"tools {n}"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": i, "type": "function", "function": {"name": "f", "arguments": "{}"}}
                for i in ids]},
            *({"role": "tool", "tool_call_id": i, "content": "ok"} for i in ids),
            {"role": "assistant", "content": f"done {n}"}]


def test_the_window_is_exactly_the_end_of_the_full_order(store: Store) -> None:
    s = "long"
    # A question asked early and answered 150 turns later: written in two parts, it belongs
    # at its start, so it is outside every short window and inside the long ones.
    early = uuid.uuid4().hex
    store.create_run(early, s, "toolloop")
    first = store.start_turn(s, run_id=early)
    store.append_messages(s, first, [{"role": "user", "content": "early question"},
                                     {"role": "assistant", "content": None, "tool_calls": [
                                         {"id": "e1", "type": "function",
                                          "function": {"name": "ask", "arguments": "{}"}}]}])
    store.suspend(early, {"call_id": "e1"})
    for n in range(150):
        turn(store, s, qa(n))
    store.claim_pending(early, 1)
    again = store.start_turn(s, run_id=early)
    store.append_messages(s, again, [{"role": "tool", "tool_call_id": "e1", "content": "yes"},
                                     {"role": "assistant", "content": "early answer"}])
    store.set_status(early, "done")
    # A long tool round (more messages than the first read from the end), a waiting ask, a
    # superseded question, messages of no turn, then short turns again.
    turn(store, s, tool_round(1, 80))
    turn(store, s, qa(1000), status="ask")
    turn(store, s, qa(1001), status="superseded")
    store.append_messages(s, None, [{"role": "user", "content": "no turn"}])
    for n in range(200, 205):
        turn(store, s, qa(n))
    turn(store, s, qa(300), status="running")  # still running: half a turn

    for rounds in (1, 2, 5, 6, 7, 8, 40, 154, 155, 156, 157, 300, None):
        got = store.history_messages(s, rounds)
        assert got == reference(store, s, rounds), rounds
    assert store.history_messages(s, 7)[0] == {"role": "user", "content": "tools 1"}
    assert {"role": "assistant", "content": "early answer"} in store.history_messages(s, 1000)
    assert {"role": "user", "content": "q1000"} not in store.history_messages(s, 1000)


def test_a_run_whose_row_is_gone_still_reads_in_order(store: Store) -> None:
    s = "orphan"
    gone = turn(store, s, qa(0))
    for n in range(1, 60):
        turn(store, s, qa(n))
    store._db.connection().execute("DELETE FROM runs WHERE run_id = ?", (gone,))
    store._db.connection().commit()
    for rounds in (1, 6, 59, 60, 61):
        assert store.history_messages(s, rounds) == reference(store, s, rounds)


def steps(store: Store, call: Any) -> int:
    """SQLite virtual-machine steps (in thousands) the call costs: a count, not a time."""
    conn: sqlite3.Connection = store._db.connection()
    count = [0]

    def tick() -> int:
        count[0] += 1
        return 0

    conn.set_progress_handler(tick, 1000)
    try:
        call()
    finally:
        conn.set_progress_handler(None, 0)
    return count[0]


@pytest.mark.parametrize("what", ["history", "transcript"])
def test_reading_the_last_rounds_costs_the_same_at_turn_3000(store: Store, what: str) -> None:
    for n in range(10):
        turn(store, "short", qa(n))
    for n in range(3000):
        turn(store, "long", qa(n))

    def read(session: str) -> Any:
        if what == "history":
            return lambda: store.history_messages(session, 6)
        return lambda: store.session_transcript(session, last=50)

    short, long = steps(store, read("short")), steps(store, read("long"))
    assert long <= 2 * short + 20, (short, long)  # a full read is hundreds of times more
    full = steps(store, lambda: store.history_messages("long", None))
    assert full > 10 * long


def test_transcript_pages_match_the_full_transcript(store: Store) -> None:
    turn(store, "t", tool_round(0, 3))
    for n in range(120):
        turn(store, "t", qa(n))
    turn(store, "t", tool_round(1, 70))  # its calls fall before a page of its last results
    everything = store.session_transcript("t")
    for last in (1, 5, 50, 71, 72, 73, 400):
        page = store.session_transcript("t", last=last)
        assert page == everything[-last:], last
    assert store.session_transcript("t", last=0) == []
    page = store.session_transcript("t", last=70)
    assert [e["tool_name"] for e in page if e["role"] == "tool"] == ["f"] * 69


def test_sessions_come_a_page_at_a_time(store: Store) -> None:
    for n in range(7):
        store.ensure_session(f"s{n}", "g" if n % 2 else None)
    newest = [r.name for r in store.list_sessions()]
    assert [r.name for r in store.list_sessions(limit=3)] == newest[:3]
    assert [r.name for r in store.list_sessions(limit=3, offset=6)] == newest[6:]
    assert store.list_sessions(limit=3, offset=9) == []
    assert [r.name for r in store.list_sessions("g", limit=2, offset=1)] == ["s3", "s1"]
    assert (store.count_sessions(), store.count_sessions("g")) == (7, 3)
