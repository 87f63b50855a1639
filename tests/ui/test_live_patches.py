"""The live widget sends changes, not the whole view: patches rebuild the view exactly, a long
run sends about its view once, the front end's resync requests are safe, and the saved output
stays close to the view's size.

The widget's comm is a recording stub (``tests/fakes/comms.py``): the bytes counted are the JSON
the kernel would send. Applying patches in the browser is checked in
``tests/browser/test_live_patch.py``; here a reference applier (the ops of ``view/diff.py``)
replays them in Python.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from jupyter_agent.agents.toolloop import toolloop
from jupyter_agent.base.events import RUN_MIME_TYPE, PlanUpdated, TextDelta
from jupyter_agent.ui import widget as widget_module
from jupyter_agent.ui.widget import RECOVERY_AGES, RunWidget
from jupyter_agent.view import diff as diff_module
from jupyter_agent.view.bundle import build_bundle
from jupyter_agent.view.diff import ViewDiffer
from jupyter_agent.view.reduce import new_view, reduce_event
from tests.fakes.comms import RecordingComm, recording_comms, run_widget_comm, widget_listener
from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls
from tests.fakes.run_stream import run_stream
from tests.ui.conftest import FakeClock


def _size(obj: Any) -> int:
    return len(json.dumps(obj, ensure_ascii=False).encode("utf-8"))


def apply_ops(view: dict[str, Any], ops: list[dict[str, Any]]) -> None:
    """The ops of view/diff.py, as ui/static/patch.js applies them."""
    for op in ops:
        kind = op["op"]
        if kind == "truncate":
            del view["items"][op["length"]:]
        elif kind == "push":
            view["items"].append(copy.deepcopy(op["item"]))
        elif kind == "update":
            item = view["items"][op["index"]]
            item.update(copy.deepcopy(op.get("set", {})))
            for key, tail in op.get("append", {}).items():
                item[key] = item.get(key, "") + tail
            for key in op.get("delete", []):
                item.pop(key, None)
        elif kind == "set":
            view[op["key"]] = copy.deepcopy(op["value"])
        elif kind == "delete":
            view.pop(op["key"], None)
        elif kind == "merge":
            view[op["key"]].update(op["value"])
        else:
            raise AssertionError(f"unknown op {kind}")


_wire = run_widget_comm


def _sent(comm: RecordingComm, start: int = 0) -> list[dict[str, Any]]:
    return [data for kind, data in comm.messages[start:] if kind == "comm_msg"]


def test_patches_rebuild_the_view_after_every_update(monkeypatch: pytest.MonkeyPatch) -> None:
    # No unasked snapshot on a slow machine (a widget half a second old sends one): only
    # patches are under test here.
    monkeypatch.setattr(widget_module, "RECOVERY_AGES", ())
    view = new_view()
    with recording_comms() as comms:
        widget = RunWidget(view)
    wire = _wire(comms)
    front = copy.deepcopy(wire.messages[0][1]["state"]["view"])  # what comm_open carried
    seq = 0
    for event in run_stream():
        reduce_event(view, event)
        before = len(wire.messages)
        widget.push()
        for msg in _sent(wire, before):
            assert msg["method"] == "custom" and msg["content"]["type"] == "patch"
            seq += 1
            assert msg["content"]["seq"] == seq  # in order, none skipped
            apply_ops(front, msg["content"]["ops"])
        assert front == view, f"after {event.type}"
    ops = [op["op"] for m in _sent(wire) for op in m["content"]["ops"]]
    # Every kind of change went out as what it is, not as a whole view.
    assert {"truncate", "push", "update", "set", "merge"} <= set(ops)
    assert view["items"][-1]["text"] == "All parts read."


def test_a_pushed_item_is_a_copy_later_changes_do_not_leak_into_sent_patches() -> None:
    view = new_view()
    differ = ViewDiffer(view)
    reduce_event(view, TextDelta(round=1, text="a"))
    (push,) = differ.diff(view)
    reduce_event(view, TextDelta(round=1, text="b"))
    assert push["item"]["text"] == "a"  # the patch already built does not change under us
    assert differ.diff(view) == [{"op": "update", "index": 0, "append": {"text": "b"}}]
    assert differ.diff(view) == []  # nothing changed: nothing to send


def test_plan_updates_are_sent_without_copying_the_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reducer replaces the plan whole with the event's (read-only) plan: the differ keeps
    it by reference, so a 100-step plan is never copied at a push, an unchanged one costs an
    identity check, and an equal plan in a new object sends nothing."""
    steps = [{"id": str(i), "title": f"Item {i}", "status": "pending"} for i in range(100)]
    view = new_view()
    differ = ViewDiffer(view)
    front = copy.deepcopy(view)

    def no_copy(value: Any, memo: Any = None) -> Any:
        raise AssertionError("the plan was copied")

    monkeypatch.setattr(diff_module, "copy", SimpleNamespace(deepcopy=no_copy))
    for n in range(3):
        steps = [*steps[:n], {**steps[n], "status": "done"}, *steps[n + 1:]]
        reduce_event(view, PlanUpdated(plan={"planId": "p", "task": "T", "steps": steps}))
        ops = differ.diff(view)
        assert [op["op"] for op in ops] == ["set"] and ops[0]["key"] == "plan"
        apply_ops(front, ops)
        assert differ.diff(view) == []  # the same plan object: nothing to send
    reduce_event(view, PlanUpdated(plan={"planId": "p", "task": "T", "steps": list(steps)}))
    assert differ.diff(view) == []  # an equal plan in a new object: nothing either
    assert front == view and front["plan"]["steps"][2]["status"] == "done"


def test_a_long_stream_sends_each_token_once() -> None:
    view = new_view()
    with recording_comms() as comms:
        widget = RunWidget(view)
    wire = _wire(comms)
    opened = wire.bytes
    for _ in range(5000):  # pushed after every token: the worst case, no throttle
        reduce_event(view, TextDelta(round=1, text="token "))
        widget.push()
    patches = wire.bytes - opened
    whole_view = _size(view)
    # A fixed envelope per update (about 120 bytes: the live display sends at most 30 a
    # second) plus each token once: linear in the stream, where the whole-view sync was
    # quadratic (5,000 views of growing size).
    assert patches < 160 * 5000 + 2 * whole_view
    assert patches < whole_view * 5000 / 100  # the whole-view sync sent O(n^2): 5,000 views


def test_resync_requests_are_answered_with_one_consistent_snapshot() -> None:
    view = new_view()
    with recording_comms() as comms:
        widget = RunWidget(view)
    wire = _wire(comms)
    stream = run_stream(rounds=4)
    for event in stream[:20]:
        reduce_event(view, event)
        widget.push()
    for event in stream[20:30]:  # changed, not pushed yet
        reduce_event(view, event)
    start = len(wire.messages)
    widget._on_custom_msg(widget, {"type": "sync", "seq": 3}, [])
    snap, answer = _sent(wire, start)
    assert answer["content"] == {"type": "synced", "seq": widget._seq}  # after the snapshot
    assert snap["method"] == "update"
    assert snap["state"]["view"] == view  # includes what was not pushed yet
    assert snap["state"]["view_seq"] == widget._seq  # the last patch it includes
    assert widget.view is not view  # a copy: the live dict changes under it
    # A front end that keeps asking (or a hostile one) gets no view again while nothing
    # changed: each sync only its small answer, and junk nothing.
    start = len(wire.messages)
    for junk in ({"type": "sync"}, {"type": "sync", "seq": "x"}, "sync", None, [1],
                 {"type": "patch", "seq": 99, "ops": [{"op": "truncate", "length": 0}]}):
        widget._on_custom_msg(widget, junk, [])
    answers = [m["content"] for m in _sent(wire, start)]
    assert answers == [{"type": "synced", "seq": widget._seq}] * 2
    assert view["items"]  # the kernel's view is untouched
    start = len(wire.messages)
    widget.push()
    assert _sent(wire, start) == []  # the snapshot counted as sent: no duplicate patch
    # After the snapshot, patches continue from its seq.
    for event in stream[30:]:
        reduce_event(view, event)
    widget.push()
    (patch,) = _sent(wire, start)
    assert patch["content"]["seq"] == snap["state"]["view_seq"] + 1
    front = copy.deepcopy(snap["state"]["view"])
    apply_ops(front, patch["content"]["ops"])
    assert front == view


def read_part(part: int) -> str:
    """Read one part of the archive."""
    return (f"part {part}\n" + "x" * 63 + "\n") * 32  # 2 KB


def test_a_long_run_sends_its_view_about_once_and_saves_it_about_once(
        server: ScriptedOpenAI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    # Patches only: the few early snapshots a young widget sends have their own test below.
    monkeypatch.setattr(widget_module, "RECOVERY_AGES", ())
    rounds = 80
    server.enqueue(*[tool_calls([call("read_part", {"part": i}, id=f"call_{i}")],
                                text=f"Reading part {i}.") for i in range(1, rounds + 1)],
                   text("All parts read."))
    shown, listener = widget_listener()
    with recording_comms() as comms:
        run = toolloop("Read every part.", tools=[read_part], max_rounds=rounds + 1,
                       listeners=[listener])
    assert run.status == "done" and run.rounds == rounds + 1
    cards = [i for i in run.view["items"] if i["kind"] == "tool"]
    assert len(cards) == rounds and all(len(c["output"]) > 2000 and not c["error"] for c in cards)
    wire = _wire(comms)
    view_bytes = _size(run.view)
    opened = _size(wire.messages[0][1])  # the comm_open: widget code + the first view
    live = wire.bytes - opened
    # Updates were sent all along (throttled: the fake server is faster than the eye)...
    assert shown[0].updates > 1 and len(wire.messages) > 2
    assert live < 1.5 * view_bytes  # ...but each part of the view about once
    assert all(kind == "comm_msg" and data["method"] == "custom"
               for kind, data in wire.messages[1:])  # no whole-view state syncs
    saved = build_bundle(run.view)
    assert saved[RUN_MIME_TYPE]["view"] == run.view
    assert _size(saved) < 1.5 * view_bytes


@pytest.fixture
def young(monkeypatch: pytest.MonkeyPatch) -> tuple[FakeClock, dict[str, Any], RunWidget, RecordingComm]:
    """A new run widget whose clock the test moves: (clock, view, widget, its comm)."""
    clock = FakeClock()
    monkeypatch.setattr(widget_module.time, "monotonic", clock.monotonic)
    view = new_view()
    with recording_comms() as comms:
        widget = RunWidget(view)
    return clock, view, widget, _wire(comms)


def test_a_front_end_that_attached_late_catches_up_from_an_unasked_snapshot(
        young: tuple[FakeClock, dict[str, Any], RunWidget, RecordingComm]) -> None:
    """anywidget attaches the page's patch listener only once the widget's module has loaded;
    patches sent before are lost, and its request for a snapshot waits until the busy kernel
    ends the cell. The young widget's unasked snapshots bring it back within the run."""
    clock, view, widget, wire = young
    stream = run_stream(rounds=6)
    for event in stream[:30]:  # the page is still loading the module: all of these are lost
        reduce_event(view, event)
        widget.push()
        clock.now += 0.01
    # The page attaches now: it starts from the state it holds (the opening snapshot) and
    # sees only what comes next.
    front, seq, waiting = copy.deepcopy(wire.messages[0][1]["state"]["view"]), 0, False
    start = len(wire.messages)
    clock.now += RECOVERY_AGES[0]
    for event in stream[30:]:
        reduce_event(view, event)
        widget.push()
        clock.now += 0.01
    for kind, data in wire.messages[start:]:
        assert kind == "comm_msg"
        if data["method"] == "update":  # a snapshot: the traits view and view_seq
            front, seq, waiting = copy.deepcopy(data["state"]["view"]), data["state"]["view_seq"], False
        elif data["content"]["seq"] == seq + 1 and not waiting:
            apply_ops(front, data["content"]["ops"])
            seq += 1
        elif data["content"]["seq"] > seq:
            waiting = True  # a gap: patch.js asks for a snapshot and waits
    assert not waiting and front == view  # caught up, and current, before the run ended


def test_unasked_snapshots_stop_once_the_widget_is_a_few_seconds_old(
        young: tuple[FakeClock, dict[str, Any], RunWidget, RecordingComm]) -> None:
    """The snapshots are few (one per age in RECOVERY_AGES, however many pushes), and none
    after the last age: a long run's traffic stays patches."""
    clock, view, widget, wire = young
    for event in run_stream(rounds=40):
        reduce_event(view, event)
        widget.push()
        clock.now += 0.05
    assert clock.now - 1000.0 > 2 * RECOVERY_AGES[-1]
    updates = [d for k, d in wire.messages[1:] if d["method"] == "update"]
    assert 1 <= len(updates) <= len(RECOVERY_AGES)


def test_a_view_already_large_is_not_sent_again_unasked(
        young: tuple[FakeClock, dict[str, Any], RunWidget, RecordingComm],
        monkeypatch: pytest.MonkeyPatch) -> None:
    clock, view, widget, wire = young
    monkeypatch.setattr(widget_module, "RECOVERY_MAX_BYTES", 2_000)
    for event in run_stream(rounds=10, output_chars=600):
        reduce_event(view, event)
        widget.push()
        clock.now += 0.05
    assert _size(view) > 5 * 2_000
    updates = [d["state"]["view"] for k, d in wire.messages[1:] if d["method"] == "update"]
    assert updates and all(_size(v) <= 2_000 for v in updates)
