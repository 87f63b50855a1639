"""``engine="dask"``: items on a real ``LocalCluster`` of two worker processes, notebook tools
shipped by cloudpickle, runs stored back in the kernel's store, and a worker killed in the
middle of the batch losing nothing."""

from __future__ import annotations

import os
import signal
import threading
import time
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
