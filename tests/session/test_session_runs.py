"""Runs, event logs and suspended asks: exactly one resume wins."""

from __future__ import annotations

import threading

import pytest

from jupyter_agent.base.events import AskPending, TextDelta
from jupyter_agent.session import Store


def test_simplest_use(store: Store) -> None:
    store.create_run("r1", "notes", "plan")
    store.append_events("r1", [{"type": "text_delta", "round": 1, "text": "Which?"}])
    store.suspend("r1", {"messages": [], "plan": None}, call_id="call_ask")

    assert store.claim_pending("r1", "call_ask") == {"messages": [], "plan": None}
    assert store.claim_pending("r1", "call_ask") is None  # the second click changes nothing


def test_create_and_get_run(store: Store) -> None:
    created = store.create_run("r1", "s", "toolloop")
    assert (created.status, created.kind, created.session) == ("running", "toolloop", "s")
    assert store.get_session("s") is not None
    assert store.get_run("r1") == created
    assert store.get_run("missing") is None
    with pytest.raises(ValueError):
        store.create_run("r1", "s", "toolloop")
    with pytest.raises(ValueError):
        store.create_run("r2", "s", "toolloop", status="ask")  # only suspend() enters ask
    store.create_run("loose", None, "chat")
    assert [r.run_id for r in store.list_runs("s")] == ["r1"]
    assert {r.run_id for r in store.list_runs()} == {"r1", "loose"}


def test_events_append_in_batches_and_keep_order(store: Store) -> None:
    store.create_run("r1", None, "chat")
    first = [TextDelta(round=1, text="a"), TextDelta(round=1, text="b")]
    assert store.append_events("r1", first) == 2
    assert store.append_events("r1", [{"type": "text_delta", "round": 1, "text": "c"}]) == 3
    assert store.append_events("r1", []) == 3
    events = store.get_events("r1")
    assert [e["text"] for e in events] == ["a", "b", "c"]
    assert events[0] == first[0].model_dump(mode="json")
    assert [e["text"] for e in store.get_events("r1", after=2)] == ["c"]
    with pytest.raises(KeyError):
        store.append_events("missing", [{"type": "warning", "message": "x"}])


def test_suspend_and_list_pending(store: Store) -> None:
    store.create_run("r1", "s", "plan")
    store.create_run("r2", "t", "plan")
    ask = AskPending(call_id="c1", question="Which?", options=["a", "b", "c"])
    version = store.suspend("r1", {"call_id": "c1", "ask": ask, "round": 3})
    store.suspend("r2", {"call_id": "c2"})

    run = store.get_run("r1")
    assert run is not None
    assert (run.status, run.pending_call_id, run.pending_version) == ("ask", "c1", version)
    assert run.pending is not None and run.pending["ask"]["question"] == "Which?"
    assert [r.run_id for r in store.list_pending("s")] == ["r1"]
    assert {r.run_id for r in store.list_pending()} == {"r1", "r2"}
    with pytest.raises(KeyError):
        store.suspend("missing", {})


def test_claim_refuses_wrong_call_id_without_consuming(store: Store) -> None:
    store.create_run("r1", "s", "plan")
    store.suspend("r1", {"step": 1}, call_id="c1")
    assert store.claim_pending("r1", "c-old") is None
    run = store.get_run("r1")
    assert run is not None and run.status == "ask"
    assert store.claim_pending("r1") == {"step": 1}  # no expectation: any caller may resume
    run = store.get_run("r1")
    assert run is not None and run.status == "running"
    assert store.claim_pending("missing") is None


def test_a_run_can_ask_again_after_resuming(store: Store) -> None:
    store.create_run("r1", "s", "plan")
    store.suspend("r1", {"n": 1}, call_id="c1")
    assert store.claim_pending("r1", "c1") == {"n": 1}
    store.suspend("r1", {"n": 2}, call_id="c2")
    assert store.claim_pending("r1", "c1") is None  # the first ask is over
    assert store.claim_pending("r1", "c2") == {"n": 2}


def test_final_status_drops_pending_state(store: Store) -> None:
    store.create_run("r1", "s", "plan")
    store.suspend("r1", {"n": 1}, call_id="c1")
    assert store.claim_pending("r1") is not None
    assert store.set_status("r1", "done") is True
    run = store.get_run("r1")
    assert run is not None and (run.status, run.pending, run.pending_call_id) == ("done", None, None)
    assert store.set_status("missing", "done") is False
    with pytest.raises(ValueError):
        store.set_status("r1", "ask")
    with pytest.raises(ValueError):
        store.set_status("r1", "finished")  # type: ignore[arg-type]


def test_a_rerun_cell_supersedes_only_its_own_question(store: Store) -> None:
    store.create_run("old1", "s", "plan", origin="cell:a")
    store.suspend("old1", {"n": 1}, call_id="c1")
    store.create_run("other", "s", "toolloop", origin="cell:b")
    store.suspend("other", {"n": 2}, call_id="c2")
    store.create_run("script", "s", "plan")  # no origin: a script's question
    store.suspend("script", {"n": 5}, call_id="c5")
    store.create_run("elsewhere", "t", "plan", origin="cell:a")
    store.suspend("elsewhere", {"n": 3}, call_id="c3")
    store.create_run("new", "s", "plan", origin="cell:a")
    store.suspend("new", {"n": 4}, call_id="c4")

    assert store.supersede_pending("s", origin="cell:a", keep="new") == ["old1"]

    assert store.claim_pending("old1", "c1") is None  # a late click is refused
    old = store.get_run("old1")
    assert old is not None and (old.status, old.pending, old.origin) == ("superseded", None,
                                                                        "cell:a")
    # Another cell's question, a script's and another session's stay waiting and answerable.
    assert store.claim_pending("other", "c2") == {"n": 2}
    assert store.claim_pending("script", "c5") == {"n": 5}
    assert store.claim_pending("elsewhere", "c3") == {"n": 3}
    assert store.claim_pending("new", "c4") == {"n": 4}
    # No origin (plain Python): nothing is superseded implicitly.
    store.create_run("late", "s", "plan")
    store.suspend("late", {"n": 6}, call_id="c6")
    assert store.supersede_pending("s") == []
    assert store.supersede_pending("s", every=True) == ["late"]


def test_claim_race_between_eight_threads(store: Store) -> None:
    runs = [f"run-{i}" for i in range(100)]
    for run_id in runs:
        store.create_run(run_id, "s", "plan")
        store.suspend(run_id, {"run": run_id}, call_id="c")
    barrier = threading.Barrier(8)
    wins: dict[str, list[int]] = {run_id: [] for run_id in runs}
    errors: list[BaseException] = []
    lock = threading.Lock()

    def click(worker: int) -> None:
        for run_id in runs:
            barrier.wait(timeout=60)
            try:
                pending = store.claim_pending(run_id, "c")
            except BaseException as exc:  # reported to the main thread; keep in step
                errors.append(exc)
                continue
            if pending is not None:
                with lock:
                    wins[run_id].append(worker)

    threads = [threading.Thread(target=click, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []  # no "database is locked" either
    assert {run_id: len(winners) for run_id, winners in wins.items()} == dict.fromkeys(runs, 1)
    assert all(run.status == "running" for run in store.list_runs("s"))
