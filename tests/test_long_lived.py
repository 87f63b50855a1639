"""``_long_lived.long_lived``, the road every ``preimport`` takes: what a large import makes goes
to the collector's oldest generation unexamined, and the user's collector settings, a failed
import and a fork during the import are left as they should be (docs/architecture.md, "The
first run").

Each case runs in a fresh interpreter: a module of 60,000 tracked objects is imported with
``preimport``, and the script reports what the collector did and where the objects ended.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from jupyter_agent import _long_lived

ROOT = Path(__file__).resolve().parents[1]

_MODULE = """
import builtins
ROWS = [[i, str(i)] for i in range(30_000)]
INDEX = {{i: row for i, row in enumerate(ROWS)}}
builtins.fs_rows = ROWS
{extra}
"""

_SCRIPT = """
import builtins, gc, json, weakref
from jupyter_agent._fresh_stack import preimport

threshold = gc.get_threshold()[0]
{before}
runs = []
gc.callbacks.append(lambda phase, info: runs.append(info["generation"]) if phase == "start"
                    else None)
error = None
try:
    preimport("fs_big")
except Exception as exc:
    error = type(exc).__name__
gc.callbacks.clear()
rows = builtins.fs_rows
print(json.dumps({{
    "error": error, "collections": runs, "enabled": gc.isenabled(),
    "threshold": gc.get_threshold()[0], "was": threshold, "frozen": gc.get_freeze_count(),
    "generation": next((g for g in (0, 1, 2)
                        if any(o is rows for o in gc.get_objects(generation=g))), None),
    "referrers": any(r is rows for r in gc.get_referrers(rows[0])),
    "child": getattr(builtins, "fs_child", None),
    "young_garbage": None if "probe" not in globals() else probe() is not None,
}}))
"""


def _import_big(tmp_path: Path, extra: str = "", before: str = "") -> dict[str, object]:
    (tmp_path / "fs_big.py").write_text(_MODULE.format(extra=textwrap.dedent(extra)))
    proc = subprocess.run(
        [sys.executable, "-c", _SCRIPT.format(before=textwrap.dedent(before))],
        capture_output=True, text=True, timeout=60,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])})
    assert proc.returncode == 0, proc.stderr
    out: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def test_the_objects_go_to_the_oldest_generation_without_young_collections(
        tmp_path: Path) -> None:
    # Left alone, the collector would run about 85 young collections over these objects.
    out = _import_big(tmp_path)
    assert out["error"] is None
    assert out["collections"] == [1]  # only the caller's young garbage, collected first
    assert out["generation"] == 2
    assert out["enabled"] is True and out["threshold"] == out["was"] and out["frozen"] == 0
    assert out["referrers"] is True  # still visible to the collector's tools


def test_the_caller_s_young_garbage_is_collected_not_moved(tmp_path: Path) -> None:
    out = _import_big(tmp_path, before="""
        class Node:
            pass
        node = Node()
        node.me = node  # a cycle: only the collector frees it
        probe = weakref.ref(node)
        del node
        """)
    assert out["young_garbage"] is False


def test_a_collector_the_user_turned_off_stays_off_and_nothing_moves(tmp_path: Path) -> None:
    out = _import_big(tmp_path, before="gc.disable()")
    assert out["enabled"] is False and out["collections"] == []
    assert out["generation"] == 0


def test_objects_the_user_froze_stay_frozen(tmp_path: Path) -> None:
    out = _import_big(tmp_path, before="keep = [[i] for i in range(100)]\ngc.freeze()")
    assert isinstance(out["frozen"], int) and out["frozen"] >= 100
    assert 0 in out["collections"]  # collected as usual: nothing of ours happened


@pytest.mark.parametrize(("meanwhile", "check"), [
    ("gc.disable()", lambda out: out["enabled"] is False),  # stays off
    ("gc.set_threshold(500)", lambda out: out["threshold"] == 500),  # kept, not ours restored
    ("gc.freeze()", lambda out: out["frozen"] > 0),  # not thawed by our unfreeze
])
def test_what_another_thread_sets_during_the_import_is_kept(tmp_path: Path, meanwhile: str,
                                                             check: object) -> None:
    # The import's own body stands for another thread acting while it runs.
    out = _import_big(tmp_path, extra=f"import gc\n{meanwhile}\n")
    assert out["error"] is None
    assert callable(check) and check(out), out


def test_a_failed_import_moves_nothing_and_restores_the_collector(tmp_path: Path) -> None:
    out = _import_big(tmp_path, extra="raise OSError('disk')")
    assert out["error"] == "OSError"
    assert out["generation"] in (0, 1)  # its leftovers stay young: collected as usual
    assert out["enabled"] is True and out["threshold"] == out["was"] and out["frozen"] == 0


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_child_forked_during_the_import_gets_its_collector_back(tmp_path: Path) -> None:
    out = _import_big(tmp_path, extra="""
        import gc, os
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.write(write, f"{gc.isenabled()} {gc.get_threshold()[0]}".encode())
            os._exit(0)
        os.waitpid(pid, 0)
        builtins.fs_child = os.read(read, 100).decode()
        """)
    assert out["child"] == f"True {out['was']}"  # not 0: collection would stay off for good


def test_a_child_forked_between_freeze_and_unfreeze_is_thawed() -> None:
    threshold = gc.get_threshold()[0]
    assert gc.get_freeze_count() == 0
    _long_lived._Pause.threshold, _long_lived._Pause.frozen = threshold, True
    gc.set_threshold(0)
    gc.freeze()
    try:
        _long_lived._resume_in_child()  # what os.register_at_fork runs in the child
        assert gc.get_freeze_count() == 0
        assert gc.get_threshold()[0] == threshold
        assert _long_lived._Pause.threshold is None and not _long_lived._Pause.frozen
    finally:
        gc.unfreeze()
        gc.set_threshold(threshold)
        _long_lived._Pause.threshold, _long_lived._Pause.frozen = None, False
