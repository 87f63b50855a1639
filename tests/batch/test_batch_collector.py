"""While a batch runs, young collections are spaced out (``_short_lived.py``): its objects die
young. The user's settings win, the threshold comes back however the batch ends, and cyclic
garbage is still collected while a long batch runs (docs/architecture.md, "Batches")."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import threading
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent import _short_lived, batch, tool
from jupyter_agent._long_lived import long_lived
from jupyter_agent._short_lived import SPACED, short_lived
from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls

ROOT = Path(__file__).resolve().parents[2]


def _script(body: dict[str, Any]) -> Any:
    """Round 1: call ``probe``; round 2: answer."""
    if body["messages"][-1]["role"] == "tool":
        return text("done")
    return tool_calls([call("probe", {})])


@pytest.fixture
def threshold() -> Iterator[int]:
    """The young threshold before the test, put back after it whatever the test did."""
    before = gc.get_threshold()
    enabled = gc.isenabled()
    yield before[0]
    gc.set_threshold(*before)
    if enabled:
        gc.enable()


def _run(server: ScriptedOpenAI, probe: Any, items: int = 6) -> Any:
    server.default = _script
    return batch("Item {item}", list(range(items)), tools=[probe], concurrency=3, rerun=True)


def test_young_collections_are_spaced_while_a_batch_runs_and_restored_after(
        server: ScriptedOpenAI, threshold: int) -> None:
    seen: list[int] = []

    @tool
    def probe() -> str:
        """Report."""
        seen.append(gc.get_threshold()[0])
        return "ok"

    res = _run(server, probe)
    assert list(res.results["status"]) == ["done"] * 6
    assert seen and set(seen) == {SPACED}
    assert gc.get_threshold()[0] == threshold


def test_a_block_that_raises_restores_the_threshold(threshold: int) -> None:
    # What a batch that fails (no key, an interrupt) leaves behind.
    with pytest.raises(KeyboardInterrupt), short_lived():
        assert gc.get_threshold()[0] == SPACED
        raise KeyboardInterrupt
    assert gc.get_threshold()[0] == threshold


@pytest.mark.parametrize(("before", "during"), [
    ("gc.set_threshold(50_000)", 50_000),  # the user's higher threshold stays
    ("gc.disable()", None),  # a collector the user turned off is left as it is
])
def test_the_user_s_settings_win(server: ScriptedOpenAI, threshold: int, before: str,
                                 during: int | None) -> None:
    exec(before, {"gc": gc})
    expected = gc.get_threshold()[0] if during is None else during
    seen: list[int] = []

    @tool
    def probe() -> str:
        """Report."""
        seen.append(gc.get_threshold()[0])
        return "ok"

    _run(server, probe)
    assert set(seen) == {expected}
    assert gc.get_threshold()[0] == expected


def test_a_threshold_the_user_sets_while_the_batch_runs_is_kept(server: ScriptedOpenAI,
                                                                 threshold: int) -> None:
    @tool
    def probe() -> str:
        """Tune the collector."""
        gc.set_threshold(1_234)
        return "ok"

    _run(server, probe)
    assert gc.get_threshold()[0] == 1_234


def test_cyclic_garbage_is_still_collected_while_a_long_batch_runs(
        server: ScriptedOpenAI, threshold: int) -> None:
    # Each item leaves a cycle of 200 objects that only the collector can free. Spaced young
    # collections must still run: the first items' cycles are gone before the batch ends.
    class Node:
        pass

    early: list[weakref.ref[Node]] = []
    alive_at_the_end: list[int] = []
    calls = [0]
    lock = threading.Lock()

    @tool
    def probe() -> str:
        """Leave a cycle behind."""
        head = Node()
        node = head
        for _ in range(200):
            node.next = Node()  # type: ignore[attr-defined]
            node = node.next  # type: ignore[attr-defined]
        node.next = head  # type: ignore[attr-defined]
        with lock:
            calls[0] += 1
            if calls[0] <= 5:
                early.append(weakref.ref(head))
            if calls[0] == 150:
                alive_at_the_end.append(sum(r() is not None for r in early))
        return "ok"

    res = _run(server, probe, items=150)
    assert list(res.results["status"]).count("done") == 150
    assert alive_at_the_end == [0]  # 150 x 201 objects: collected along the way, not piled up


def test_two_batches_at_once_share_one_raise_undone_by_the_last(threshold: int) -> None:
    first_in, second_done = threading.Event(), threading.Event()
    inside: list[int] = []

    def first() -> None:
        with short_lived():
            first_in.set()
            second_done.wait(10)
            inside.append(gc.get_threshold()[0])  # the second ended: still raised for us

    worker = threading.Thread(target=first)
    worker.start()
    assert first_in.wait(10)
    with short_lived():
        assert gc.get_threshold()[0] == SPACED
    second_done.set()
    worker.join(10)
    assert inside == [SPACED]
    assert gc.get_threshold()[0] == threshold


def test_a_child_forked_during_a_batch_gets_the_threshold_back(threshold: int) -> None:
    with short_lived():
        assert gc.get_threshold()[0] == SPACED
        _short_lived._reset_in_child()  # what os.register_at_fork runs in the child
        assert gc.get_threshold()[0] == threshold
        assert _short_lived._Raise.active == 0 and _short_lived._Raise.replaced is None
        _short_lived._Raise.active = 1  # back to the parent's state for the block's end
    assert gc.get_threshold()[0] == threshold


def test_a_zero_threshold_is_left_alone(threshold: int) -> None:
    gc.set_threshold(0)
    with short_lived():
        assert gc.get_threshold()[0] == 0
    assert gc.get_threshold()[0] == 0


def test_a_batch_that_ends_during_the_sdk_s_first_import_leaves_the_user_s_threshold(
        threshold: int) -> None:
    # Another thread's first import pauses collection (threshold 0) over ours, and the batch
    # ends before the import does: the import must put back the user's value, not ours.
    batch_block, import_block = short_lived(), long_lived("fs_not_a_module_here")
    batch_block.__enter__()
    import_block.__enter__()
    assert gc.get_threshold()[0] == 0
    batch_block.__exit__(None, None, None)
    import_block.__exit__(None, None, None)
    assert gc.get_threshold()[0] == threshold


_FORKED = """
import gc, json, os
from jupyter_agent import _short_lived
from jupyter_agent._short_lived import short_lived
base = gc.get_threshold()[0]
read, write = os.pipe()
with short_lived():
    pid = os.fork()  # from inside the block, as a tool or a progress callback could
    if pid == 0:
        after_fork = gc.get_threshold()[0]
    else:
        os.waitpid(pid, 0)
if pid == 0:
    with short_lived():  # the child's own batch still spaces its collections
        inside = gc.get_threshold()[0]
    os.write(write, json.dumps([after_fork, inside, gc.get_threshold()[0],
                                _short_lived._Raise.active]).encode())
    os._exit(0)
print(json.dumps({"base": base, "child": json.loads(os.read(read, 1000)),
                  "parent": gc.get_threshold()[0]}))
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_child_forked_inside_a_batch_gets_the_threshold_back_and_its_own_count() -> None:
    proc = subprocess.run([sys.executable, "-c", _FORKED], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    base = out["base"]
    assert out["child"] == [base, SPACED, base, 0]
    assert out["parent"] == base
