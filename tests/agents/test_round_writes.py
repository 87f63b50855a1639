"""A round's end is one store write: its messages and its events, in one transaction
(agents/turn/drive.py); what a round did is on disk before the next round's tools run."""

from __future__ import annotations

from typing import Any

import pytest

from jupyter_agent import tool, toolloop
from jupyter_agent.session import Store, default_store
from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls

pytestmark = pytest.mark.timeout(60)


def _count_writes(store: Store) -> list[int]:
    """Counts the store's transactions (outermost write blocks, not savepoints)."""
    db, count = store._db, [0]
    original = db.write

    def write() -> Any:
        if not db._local.depth:
            count[0] += 1
        return original()

    db.write = write  # type: ignore[method-assign]
    return count


def _rounds(server: ScriptedOpenAI, n: int) -> None:
    server.enqueue(*[tool_calls([call("step", {"i": i})]) for i in range(1, n)],
                   text("All steps done."))


def test_each_more_round_is_one_more_write(server: ScriptedOpenAI) -> None:
    @tool
    def step(i: int) -> str:
        """Do step ``i``."""
        return f"step {i} done"

    store = default_store()
    writes = _count_writes(store)
    per_run = []
    for n in (3, 8):
        _rounds(server, n)
        before = writes[0]
        run = toolloop("Do the steps.", tools=["step"])
        assert run.status == "done" and run.rounds == n
        per_run.append(writes[0] - before)
    assert per_run[1] - per_run[0] == 5, per_run  # five more rounds: five more writes


def test_a_round_is_on_disk_before_the_next_rounds_tools_run(server: ScriptedOpenAI) -> None:
    """A crash during round k loses round k at most: rounds before it are stored whole,
    messages and events (a tool of round k reads the store as a new process would)."""
    store = default_store()
    seen: dict[int, tuple[set[int], list[str]]] = {}

    @tool
    def step(i: int) -> str:
        """Do step ``i``."""
        (rec,) = [r for r in store.list_runs() if r.status == "running"]
        events = Store(store.path).get_events(rec.run_id)  # another connection: committed only
        finished = {e["round"] for e in events if e["type"] == "round_started"}
        outputs = [e["output"] for e in events if e["type"] == "tool_returned"]
        seen[i] = (finished, outputs)
        return f"step {i} done"

    _rounds(server, 4)
    run = toolloop("Do the steps.", tools=["step"])
    assert run.status == "done"
    assert seen[1] == (set(), [])
    assert seen[2] == ({1}, ["step 1 done"])
    assert seen[3] == ({1, 2}, ["step 1 done", "step 2 done"])
    history = store.history_messages(run.session)
    assert [m["content"] for m in history if m["role"] == "tool"] == [
        "step 1 done", "step 2 done", "step 3 done"]
