"""A stored plan is a patch of the run's previous one (session/_plan_patch.py): a round writes
the step that changed, whatever the plan's size, and every reader gets whole plans back."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.base.events import event_to_json, merge_deltas
from jupyter_agent.base.frozen_json import FrozenList, freeze
from jupyter_agent.session import Store
from jupyter_agent.session._plan_patch import PATCH_KEY
from tests.test_frozen_json import _rounds


def _stored_plans(store: Store, run_id: str) -> list[str]:
    """The raw text of each stored ``plan_updated`` row."""
    with sqlite3.connect(store.path) as conn:
        rows = conn.execute("SELECT event FROM run_events WHERE run_id = ? ORDER BY seq",
                            (run_id,)).fetchall()
    return [text for (text,) in rows if '"type":"plan_updated"' in text]


@pytest.mark.parametrize("steps", [100, 1000])
def test_a_round_writes_the_changed_step_and_reads_back_whole(
        steps: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _, store, run = _rounds(steps, tmp_path, monkeypatch)
    first, *later = _stored_plans(store, run.run_id)
    assert len(first) > 100 * steps  # the plan as it was set: whole
    assert all(PATCH_KEY in t and len(t) < 800 for t in later), [len(t) for t in later]
    # Every reader sees what the run emitted, plan by plan.
    live = merge_deltas([event_to_json(e) for e in run.events])
    assert json.dumps(store.get_events(run.run_id)) == json.dumps(live)
    # A read that starts after the whole plan still gets whole plans.
    tail = store.get_events(run.run_id, after=5)
    assert json.dumps(tail) == json.dumps(live[5:])
    store.close()


def test_plans_read_back_share_only_frozen_steps(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    _, store, run = _rounds(100, tmp_path, monkeypatch)
    plans = [e["plan"] for e in store.get_events(run.run_id) if e["type"] == "plan_updated"]
    assert plans[3]["steps"][50] is plans[2]["steps"][50]  # shared, so it must be read-only
    with pytest.raises(TypeError, match="read-only"):
        plans[3]["steps"][50]["status"] = "done"
    with pytest.raises(TypeError, match="read-only"):
        plans[3]["steps"].append({})
    store.close()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    """A store holding one plan run, ``r1``."""
    opened = Store(tmp_path / "s.sqlite3")
    opened.create_run("r1", None, "plan")
    yield opened
    opened.close()


def _plain(*plans: list[Any]) -> list[Any]:
    """Each plan's steps as JSON gives them back."""
    return [json.loads(json.dumps(steps)) for steps in plans]


def _done(steps: list[Any], i: int) -> list[Any]:
    """``steps`` with step ``i`` replaced by a new one marked done."""
    return [*steps[:i], _step(i, "done"), *steps[i + 1:]]


def _plan(steps: list[Any]) -> dict[str, Any]:
    return {"type": "plan_updated", "t": 1.0,
            "plan": {"planId": "p1", "task": "t", "steps": FrozenList(steps)}}


def _step(i: int, status: str = "pending") -> Any:
    return freeze({"id": str(i), "title": f"Step {i}", "status": status})


def _round_trip(store: Store, run_id: str) -> list[list[dict[str, Any]]]:
    return [json.loads(json.dumps(e["plan"]["steps"])) for e in store.get_events(run_id)
            if e["type"] == "plan_updated"]


def test_a_rolled_back_plan_is_never_a_base(store: Store) -> None:
    """The writer learns a plan's place only when it is committed: a patch never names an
    event that a rollback took away (or that another event took over)."""
    steps = [_step(i) for i in range(20)]
    store.append_events("r1", [_plan(steps)])
    rolled = _done(steps, 5)
    with pytest.raises(RuntimeError), store.transaction():
        store.append_events("r1", [_plan(rolled)])
        raise RuntimeError("the round failed after writing")
    store.append_events("r1", [{"type": "warning", "t": 1.0, "message": "takes seq 2"}])
    again = _done(steps, 7)
    store.append_events("r1", [_plan(again)])
    assert _round_trip(store, "r1") == _plain(steps, again)
    assert PATCH_KEY in _stored_plans(store, "r1")[1]  # a patch of the committed plan


def test_a_rolled_back_savepoint_is_never_a_base(store: Store) -> None:
    steps = [_step(i) for i in range(20)]
    changed = _done(steps, 3)
    with store.transaction():
        store.append_events("r1", [_plan(steps)])
        with pytest.raises(RuntimeError), store.transaction():
            store.append_events("r1", [_plan(changed)])
            raise RuntimeError("inner part failed")
        store.append_events("r1", [{"type": "warning", "t": 1.0, "message": "takes seq 2"}])
    later = _done(changed, 9)
    store.append_events("r1", [_plan(later)])
    assert _round_trip(store, "r1") == _plain(steps, later)


def test_plain_steps_changed_in_place_are_written_whole(store: Store) -> None:
    """A producer that reuses one mutable dict per step (not frozen): the same object may
    hold new values, so nothing is reused and each plan is written whole."""
    steps = [{"id": str(i), "status": "pending"} for i in range(10)]
    seen = []
    for i in range(3):
        steps[i]["status"] = "done"
        store.append_events("r1", [{"type": "plan_updated", "t": 1.0,
                                    "plan": {"steps": FrozenList(steps)}}])
        seen.append(json.loads(json.dumps(steps)))
    assert _round_trip(store, "r1") == seen
    assert not any(PATCH_KEY in t for t in _stored_plans(store, "r1"))


def test_two_kernels_writing_one_run_read_back_right(tmp_path: Path) -> None:
    """A resumed run in another kernel writes its first plan whole; the first kernel's next
    patch still names its own base."""
    a, b = Store(tmp_path / "s.sqlite3"), Store(tmp_path / "s.sqlite3")
    a.create_run("r1", None, "plan")
    steps = [_step(i) for i in range(10)]
    plans = [steps, _done(steps, 1)]
    for p in plans:
        a.append_events("r1", [_plan(p)])
    other = [_step(i, "skipped") for i in range(10)]
    b.append_events("r1", [_plan(other)])
    last = _done(plans[1], 2)
    a.append_events("r1", [_plan(last)])
    expected = _plain(*plans, other, last)
    assert _round_trip(a, "r1") == expected and _round_trip(b, "r1") == expected
    assert [PATCH_KEY in t for t in _stored_plans(a, "r1")] == [False, True, False, True]
    a.close()
    b.close()


def test_steps_added_removed_and_moved_read_back_right(store: Store) -> None:
    steps = [_step(i) for i in range(30)]
    revised = [*steps[10:20], _step(99), *steps[:10], *steps[25:]]  # moved, new, dropped
    for p in (steps, revised):
        store.append_events("r1", [_plan(p)])
    assert _round_trip(store, "r1") == _plain(steps, revised)
    assert PATCH_KEY in _stored_plans(store, "r1")[1]


def test_steps_that_are_lists_or_odd_values_read_back_as_written(store: Store) -> None:
    """A part that is a list is a range: a plan whose new step is a list (through the
    public Store API; an agent's steps are dicts) is written whole, not misread."""
    base = [_step(i) for i in range(4)]
    written = [base]
    store.append_events("r1", [_plan(base)])
    for odd in ([0, 1], ["a", "b"], [], freeze([2, 4]), "text", None, 7):
        steps = [*base[:3], odd]
        store.append_events("r1", [_plan(steps)])
        written.append(steps)
    assert _round_trip(store, "r1") == _plain(*written)


def test_a_key_named_like_the_patch_is_kept_on_an_ordinary_event(store: Store) -> None:
    mine = {"type": "plan_updated", "t": 1.0, "plan": {"steps": [{"id": "1"}]},
            PATCH_KEY: {"base": 1, "parts": []}}
    store.append_events("r1", [mine])
    assert store.get_events("r1") == [mine]


def test_a_plan_no_patch_reads_from_stays_plain_and_a_finished_run_keeps_no_base(
        store: Store) -> None:
    store.append_events("r1", [_plan([_step(i) for i in range(5)])])
    (event,) = store.get_events("r1")
    event["plan"]["steps"][0]["status"] = "done"  # nothing shares it: an ordinary dict
    assert "r1" in store._plan_bases
    store.set_status("r1", "done")
    assert "r1" not in store._plan_bases  # its last plan is not kept alive any longer


def test_a_damaged_patch_range_is_named_as_such(store: Store) -> None:
    """A stored patch whose range is not two numbers (a damaged or hand-edited row) reads as
    "a damaged event log", one line, not a TypeError from deep in the slicing."""
    base = [_step(i) for i in range(4)]
    store.append_events("r1", [_plan(base)])
    store.append_events("r1", [_plan([*base[:3], _step(3, "done")])])
    with sqlite3.connect(store.path) as conn:
        (text,) = conn.execute("SELECT event FROM run_events WHERE seq = 2").fetchone()
        event = json.loads(text)
        assert event[PATCH_KEY]["parts"][0] == [0, 3]
        event[PATCH_KEY]["parts"][0] = ["0", "3"]
        conn.execute("UPDATE run_events SET event = ? WHERE seq = 2", (json.dumps(event),))
    with pytest.raises(ValueError, match="a damaged event log"):
        store.get_events("r1")
