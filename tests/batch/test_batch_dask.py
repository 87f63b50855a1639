"""``engine="dask"``: items on a real ``LocalCluster`` of two worker processes, notebook tools
shipped by cloudpickle, runs stored back in the kernel's store, and a worker killed in the
middle of the batch losing nothing."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from jupyter_agent import batch
from jupyter_agent.session import default_store
from tests.batch.conftest import user_texts
from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls

distributed = pytest.importorskip("distributed")

pytestmark = pytest.mark.timeout(240)


@pytest.fixture
def cluster(srv: ScriptedOpenAI) -> Iterator[Any]:
    """A 2-worker LocalCluster (started after the server, so the workers see its key) and
    its client, the active one."""
    from distributed import Client, LocalCluster

    lc = LocalCluster(n_workers=2, threads_per_worker=4, processes=True,
                      dashboard_address=None)
    client = Client(lc)
    try:
        yield client
    finally:
        client.close()
        lc.close()


def _tool_loop(body: dict[str, Any]) -> Any:
    last = body["messages"][-1]
    if last["role"] == "tool":
        return text(f"result {last['content']}")
    return tool_calls([call("where", {"n": int(last["content"].split()[-1])})])


def test_items_run_on_the_workers_with_notebook_tools(srv: ScriptedOpenAI, cluster: Any) -> None:
    factor = 7  # a notebook variable the tool reads: cloudpickle ships it along

    def where(n: int) -> str:
        """Say which process computed n times the factor."""
        return f"{n * factor}@{os.getpid()}"

    srv.default = _tool_loop
    res = batch("Compute {item}", list(range(12)), tools=[where], engine="dask", concurrency=8)
    out = res.results
    assert list(out["status"]) == ["done"] * 12
    values = [a.split()[1] for a in out["answer"]]
    assert [v.split("@")[0] for v in values] == [str(n * 7) for n in range(12)]
    pids = {int(v.split("@")[1]) for v in values}
    workers = set(cluster.run(os.getpid).values())
    assert pids <= workers and os.getpid() not in pids  # computed on the workers
    # Each run is stored in the kernel's store with its events, so its card can be shown.
    store = default_store()
    for run_id, answer in zip(out["run_id"], out["answer"]):
        assert store.get_run(run_id).status == "done"
        from jupyter_agent.batch.cards import run_card

        assert run_card(run_id).answer == answer
    assert res.view["engine"] == "dask"


def _warm_up() -> None:
    import openai  # noqa: F401

    import jupyter_agent.agents.chat  # noqa: F401


def test_a_worker_killed_mid_batch_loses_no_item(srv: ScriptedOpenAI, cluster: Any) -> None:
    killed = threading.Event()
    classify = srv.default

    def answer(body: dict[str, Any]) -> Any:
        # No answer before the worker is killed: whatever the machine's speed, every worker
        # thread is then waiting on its request (a fixed latency raced the kill under load).
        killed.wait(90)
        return classify

    srv.default = answer
    rows = [f"ticket {n} with an invoice" for n in range(24)]
    pids = cluster.run(os.getpid)  # worker address -> process id
    cluster.run(_warm_up)  # so both workers send their first requests at once
    try:
        run = batch("Classify: {item}", rows, kind="chat", engine="dask", concurrency=8,
                    wait=False)
        end = time.monotonic() + 60
        while len(srv.requests) < 8:  # every worker thread is waiting on a request
            assert time.monotonic() < end
            time.sleep(0.02)
        busy = cluster.processing()  # worker address -> keys of the items it is running
        victim = max(busy, key=lambda w: len(busy[w]))
        assert busy[victim]
        os.kill(pids[victim], signal.SIGKILL)  # that worker process dies mid-request
    finally:
        killed.set()
    res = run.wait(180)

    out = res.results
    assert len(out) == 24 and list(out["status"]) == ["done"] * 24
    assert list(out["answer"]) == ["billing"] * 24
    assert out["run_id"].is_unique
    asked = user_texts(srv)
    assert set(asked) == {f"Classify: {r}" for r in rows}
    # Asked twice: the items that were running on the dead worker (its 4 threads, each on a
    # request), run again on another worker; nothing else.
    assert len(asked) - len(set(asked)) == 4
    store = default_store()
    (record,) = store.list_batches()
    saved = store.batch_items(record.spec_key)
    assert len(saved) == 24 and {r.status for r in saved.values()} == {"done"}
    assert {r.run_id for r in saved.values()} == set(out["run_id"])
    # The card says so.
    assert res.view["lost_rerun"] == 4 and res.view["lost_held"] == 0
    from jupyter_agent.view.batch import summary_line

    assert "re-run after a worker was lost: 4" in summary_line(res.view)


def test_an_item_offered_a_tool_with_side_effects_is_not_run_twice(srv: ScriptedOpenAI,
                                                                  cluster: Any) -> None:
    """The rule: an item whose worker died is run again, unless it was offered a tool marked
    ``side_effects``: it may have called it already, so it comes back for the user to check."""
    from jupyter_agent import tool

    killed = threading.Event()

    def send_invoice(n: int) -> str:
        """Send invoice n to the customer (not something to do twice)."""
        return f"sent {n}"

    sender = tool(send_invoice, side_effects=True, register=False)

    def answer(body: dict[str, Any]) -> Any:
        killed.wait(90)  # every worker thread waits on its first request, as above
        return _tool_loop_named(body)

    srv.default = answer
    pids = cluster.run(os.getpid)
    cluster.run(_warm_up)
    try:
        run = batch("Invoice {item}", list(range(24)), tools=[sender], engine="dask",
                    concurrency=8, wait=False)
        end = time.monotonic() + 60
        while len(srv.requests) < 8:
            assert time.monotonic() < end
            time.sleep(0.02)
        busy = cluster.processing()
        victim = max(busy, key=lambda w: len(busy[w]))
        os.kill(pids[victim], signal.SIGKILL)
    finally:
        killed.set()
    res = run.wait(180)

    out = res.results
    held = out[out["status"] == "error"]
    assert len(held) == 4 and (out["status"] == "done").sum() == 20
    assert all(e.startswith("Not run again: its Dask worker was lost") and "send_invoice" in e
               for e in held["error"])
    # The held items were asked once (before the kill), never again; the others twice (a
    # tool round, then the answer).
    asked = Counter(user_texts(srv))
    held_rows = set(held.index)
    assert all(asked[f"Invoice {n}"] == (1 if n in held_rows else 2) for n in range(24))
    assert res.view["lost_held"] == 4 and res.view["lost_rerun"] == 0
    from jupyter_agent.view.batch import summary_line

    assert "not re-run (side effects), check them: 4" in summary_line(res.view)
    # Running the cell again retries only them (the user checked).
    srv.default = _tool_loop_named
    again = batch("Invoice {item}", list(range(24)), tools=[sender], engine="dask",
                  concurrency=8)
    assert list(again.results["status"]) == ["done"] * 24 and again.view["reused"] == 20


def _tool_loop_named(body: dict[str, Any]) -> Any:
    last = body["messages"][-1]
    if last["role"] == "tool":
        return text(f"done: {last['content']}")
    return tool_calls([call("send_invoice", {"n": int(last["content"].split()[-1])})])


def test_tools_are_built_once_per_worker(srv: ScriptedOpenAI, cluster: Any) -> None:
    """The batch's tools reach each worker once and are built there once, not per item."""
    from jupyter_agent.batch import ship

    def where(n: int) -> str:
        """Say n."""
        return str(n)

    srv.default = _tool_loop
    cluster.run(lambda: ship._BUILT.clear())
    res = batch("Compute {item}", list(range(16)), tools=[where], engine="dask", concurrency=8)
    assert list(res.results["status"]) == ["done"] * 16
    built = cluster.run(lambda: {k: [t.name for t in v or []] for k, v in ship._BUILT.items()})
    # One batch: one entry on each worker that ran items, holding the one tool.
    assert all(len(entries) <= 1 for entries in built.values())
    assert [v for entries in built.values() for v in entries.values()] in (
        [["where"]], [["where"], ["where"]])



# ------------------------------------------------------------------------------ the lanes
def _after_stop(stopped: threading.Event, then: Any) -> Any:
    """A first round that answers only once the test stopped the batch, and a margin more
    (the stop reaches the workers' lanes on their next look at their inbox)."""

    def answer(body: dict[str, Any]) -> Any:
        stopped.wait(90)
        time.sleep(1.5)
        return then(body) if callable(then) else then

    return answer


def _wait_for(cond: Any, seconds: float = 60) -> None:
    end = time.monotonic() + seconds
    while not cond():
        assert time.monotonic() < end
        time.sleep(0.02)


def test_items_run_in_one_lane_per_worker_not_a_task_each(srv: ScriptedOpenAI,
                                                         cluster: Any) -> None:
    """Forty items are two tasks on the cluster (a lane per worker, each running items on its
    own threads), not forty: no round trip through the scheduler between two items."""
    from distributed import get_task_stream

    with get_task_stream(cluster) as ts:
        res = batch("Classify: {item}", [f"invoice {n}" for n in range(40)], kind="chat",
                    engine="dask", concurrency=8)
    assert list(res.results["status"]) == ["done"] * 40
    keys = [str(t["key"]) for t in ts.data]
    assert len([k for k in keys if "jupyter-agent" in k]) == 2, keys
    # Both workers ran items (the items are split between the lanes, not all sent to one).
    assert len({t["worker"] for t in ts.data}) == 2


def test_lanes_never_run_more_than_the_concurrency(srv: ScriptedOpenAI, cluster: Any) -> None:
    """Items wait on the workers ahead of their turn, but never run beyond ``concurrency``
    (the lanes' threads are the concurrency split between them, 3 on a 2-worker cluster)."""
    lock = threading.Lock()
    active, most = [0], [0]
    classify = srv.default

    def answer(body: dict[str, Any]) -> Any:
        with lock:
            active[0] += 1
            most[0] = max(most[0], active[0])
        time.sleep(0.2)
        with lock:
            active[0] -= 1
        return classify

    srv.default = answer
    cluster.run(_warm_up)  # so both lanes run at once (not one still importing)
    res = batch("Classify: {item}", [f"invoice {n}" for n in range(36)], kind="chat",
                engine="dask", concurrency=3)
    assert list(res.results["status"]) == ["done"] * 36
    assert most[0] == 3


def _stop_once_four_asked(srv: ScriptedOpenAI, stopped: threading.Event, run: Any,
                          how: str) -> Any:
    """Stop ``run`` (``how``) once four items reached the model; release the held answers."""
    try:
        _wait_for(lambda: len(srv.requests) == 4)
        run.stop(how)
    finally:
        stopped.set()
    return run.wait(120)


def test_stop_finish_starts_nothing_that_waits_on_the_workers(srv: ScriptedOpenAI,
                                                              cluster: Any) -> None:
    """A stop with items sent ahead to the lanes: the running ones end, the ones waiting on
    the workers or in their inboxes are not run (skipped; a re-run does them)."""
    stopped = threading.Event()
    srv.default = _after_stop(stopped, text("billing"))
    cluster.run(_warm_up)
    run = batch("Classify: {item}", [f"ticket {n} invoice" for n in range(20)], kind="chat",
                engine="dask", concurrency=4, wait=False)
    res = _stop_once_four_asked(srv, stopped, run, "finish")
    out = res.results
    assert list(out["status"]) == ["done"] * 4 + ["skipped"] * 16
    assert len(srv.requests) == 4 and res.status == "stopped"
    assert res.view["counts"]["running"] == 0 and res.view["counts"]["done"] == 4
    store = default_store()
    (record,) = store.list_batches()
    assert len(store.batch_items(record.spec_key)) == 4  # the four answered, stored


def test_stop_abort_ends_the_lanes_items_at_their_next_round(srv: ScriptedOpenAI,
                                                             cluster: Any) -> None:
    stopped = threading.Event()

    def first(body: dict[str, Any]) -> Any:
        return tool_calls([call("noop", {})])

    def answer(body: dict[str, Any]) -> Any:
        if body["messages"][-1]["role"] == "tool":
            return text("never asked")
        return _after_stop(stopped, first)(body)

    def noop() -> str:
        """Nothing."""
        return "ok"

    srv.default = answer
    cluster.run(_warm_up)
    run = batch("Task {item}", list(range(10)), concurrency=4, tools=[noop], engine="dask",
                wait=False)
    res = _stop_once_four_asked(srv, stopped, run, "abort")
    out = res.results
    assert list(out["status"]) == ["aborted"] * 4 + ["skipped"] * 6
    assert len(srv.requests) == 4  # no second round for anyone
    assert all(default_store().get_run(r).status == "aborted" for r in out["run_id"][:4])


def test_what_cannot_travel_to_a_worker_is_refused_in_one_line(srv: ScriptedOpenAI,
                                                                cluster: Any) -> None:
    """A tool that holds a lock, or an output class defined where a lock is in reach, cannot
    be pickled: refused before anything runs, naming it, instead of Dask's serializer
    traceback; the same batch on threads runs."""
    from pydantic import BaseModel

    from jupyter_agent.base.errors import ConfigError

    guard = threading.Lock()

    def look(n: int) -> str:
        """Look n up."""
        with guard:
            return str(n)

    class City(BaseModel):  # inside a function: pydantic keeps its locals (guard, srv)
        name: str

    srv.default = lambda body: text('{"name": "Lyon"}')
    with pytest.raises(ConfigError) as info:
        batch("Look up {item}", [1, 2], tools=[look], engine="dask")
    assert str(info.value).startswith("engine='dask' cannot send the tool 'look' to the "
                                      "workers (cannot pickle '_thread.lock' object)")
    with pytest.raises(ConfigError, match="cannot send the batch's output to the workers"):
        batch("Name {item}", [1, 2], output=City, engine="dask")
    assert srv.requests == []  # refused before any item ran
    res = batch("Name {item}", [1, 2], output=City, engine="thread")
    assert list(res.results["status"]) == ["done", "done"]
