"""Batch throughput and overhead, against the ideal and hand-written loops in the same run.

Every item is a two-round tool loop (the scripted model calls ``lookup``, then answers) served
by the scripted server in a child process.

1. Throughput: N items (default 400) at ``--concurrency`` 32, with 200 ms of latency per
   request. Reported against the ideal (requests x latency / concurrency) and against a
   hand-written ``ThreadPoolExecutor`` loop over the raw ``openai`` client (same requests, no
   store, no events); the two run interleaved, best of ``--repeat`` each.
2. Overhead per item at concurrency 1, no latency: ``jupyter_agent.batch`` against a plain
   ``for`` loop of ``toolloop(...)`` calls (both store their runs), interleaved, best of each.
3. Dask: the same items on a 2-worker ``LocalCluster`` against the thread engine, alternating,
   best of ``--repeat`` each (goal: at most 1.2x). The batch runs on a cluster already started
   and warmed (8 items); the cluster's start and that first batch are reported apart.
4. CPU bound: 2,000 and 10,000 items at concurrency 64 with 50 ms of latency (on two cores the
   interpreter, not the model, is the limit), against the hand-written thread pool, alternating.
   Goal: at most 1.15x (the I/O-bound ratio of 1.: at most 1.01x).

Run: ``python bench/bench_batch.py [--items 400] [--no-dask] [--quick]``; ``--quick`` (160 items,
best of 2, no Dask: about 30 s) is what ``python -m bench --quick`` runs. Nothing asserts a
time.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench._server import serve, stop  # noqa: E402
from tests.fakes.openai_server import call, match, rule, text, tool_calls  # noqa: E402

MODEL = "gpt-4.1-mini"
KEY = "sk-bench-not-a-secret"
TEMPLATE = "Look up order {order} and say whether it is paid."


def lookup(order: str) -> str:
    """The status of an order."""
    return f"order {order}: paid"


def script() -> Any:
    """Round 1: a call to ``lookup``; round 2 (after the tool result): the answer."""
    return match(rule(text("The order is paid."), last_role="tool"),
                 otherwise=tool_calls([call("lookup", {"order": "42"})]))


def rows(n: int) -> list[dict[str, str]]:
    return [{"order": str(1000 + i)} for i in range(n)]


# ------------------------------------------------------------------------- the contenders
def run_ours(n: int, concurrency: int, engine: str = "thread") -> float:
    import jupyter_agent

    t0 = time.perf_counter()
    res = jupyter_agent.batch(TEMPLATE, rows(n), tools=[lookup], model=MODEL,
                              concurrency=concurrency, engine=engine, rerun=True)
    seconds = time.perf_counter() - t0
    done = int((res.results["status"] == "done").sum())
    assert done == n, res.results["error"].dropna().head()
    return seconds


def run_handwritten(base_url: str, n: int, concurrency: int) -> float:
    """The loop a user writes: a thread pool, the raw client, two requests per item."""
    import openai

    client = openai.OpenAI(base_url=base_url, api_key=KEY, max_retries=0)
    schema = [{"type": "function", "function": {
        "name": "lookup", "description": "The status of an order.",
        "parameters": {"type": "object", "properties": {"order": {"type": "string"}},
                       "required": ["order"], "additionalProperties": False}}}]

    def one(row: dict[str, str]) -> str:
        messages: list[dict[str, Any]] = [
            {"role": "user", "content": TEMPLATE.format(**row)}]
        for _ in range(5):
            resp = client.chat.completions.create(model=MODEL, messages=messages, tools=schema)
            msg = resp.choices[0].message
            if not msg.tool_calls:
                return msg.content or ""
            messages.append(msg.model_dump(exclude_none=True))
            for tc in msg.tool_calls:
                out = lookup(**json.loads(tc.function.arguments))
                messages.append({"role": "tool", "tool_call_id": tc.id, "content": out})
        return ""

    t0 = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(concurrency) as ex:
        answers = list(ex.map(one, rows(n)))
    seconds = time.perf_counter() - t0
    assert all(answers), "the hand-written loop got no answer"
    return seconds


def run_plain_loop(n: int) -> float:
    """A ``for`` loop of ``toolloop(...)`` calls (as unbatched code would do)."""
    from jupyter_agent import toolloop

    t0 = time.perf_counter()
    for row in rows(n):
        run = toolloop(TEMPLATE.format(**row), tools=[lookup], model=MODEL, session=None,
                       history=0, stream=False)
        assert run.status == "done"
    return time.perf_counter() - t0


# ------------------------------------------------------------------------------- the runs
def _env(base_url: str) -> None:
    os.environ["OPENAI_BASE_URL"] = base_url
    os.environ["OPENAI_API_KEY"] = KEY
    from jupyter_agent.clients.factory import clear_client_cache

    clear_client_cache()


def throughput(n: int, concurrency: int, latency: float, repeat: int) -> dict[str, float]:
    proc, url = serve(script(), latency=latency)
    ours_times: list[float] = []
    hand_times: list[float] = []
    try:
        _env(url)
        run_ours(8, 8)  # warm up: imports, connections
        run_handwritten(url, 8, 8)
        for _ in range(repeat):  # interleaved, best of each: the machine is shared and noisy
            ours_times.append(run_ours(n, concurrency))
            hand_times.append(run_handwritten(url, n, concurrency))
    finally:
        stop(proc)
    ours, hand = min(ours_times), min(hand_times)
    ideal = 2 * n * latency / concurrency
    return {"items": n, "concurrency": concurrency, "latency": latency, "ideal_s": ideal,
            "ours_s": ours, "handwritten_s": hand, "ours_vs_ideal": ours / ideal,
            "ours_vs_handwritten": ours / hand, "handwritten_vs_ideal": hand / ideal}


def overhead(n: int, repeat: int) -> dict[str, float]:
    proc, url = serve(script())
    loops: list[float] = []
    ours: list[float] = []
    try:
        _env(url)
        run_ours(5, 1)
        run_plain_loop(5)
        for _ in range(repeat):  # interleaved, best of each
            loops.append(run_plain_loop(n))
            ours.append(run_ours(n, 1))
    finally:
        stop(proc)
    loop_s, ours_s = min(loops), min(ours)
    return {"items": n, "plain_loop_s": loop_s, "batch_s": ours_s,
            "overhead_ms_per_item": (ours_s - loop_s) / n * 1000}


def _timed(fn: Any, *args: Any) -> tuple[float, float]:
    """(wall seconds, this process's CPU seconds) of ``fn(*args)``."""
    c0 = time.process_time()
    wall = fn(*args)
    return wall, time.process_time() - c0


def cpu_bound(sizes: list[int], concurrency: int, latency: float, repeat: int
              ) -> list[dict[str, float]]:
    """Wall time, best of ``repeat``, and this process's CPU time (the server runs in its own
    process, so it is not counted), median of ``repeat``: the CPU ratio is what to read when
    the machine is shared, since one stall of a neighbour moves a wall time by seconds."""
    proc, url = serve(script(), latency=latency)
    out = []
    try:
        _env(url)
        run_ours(8, 8)
        run_handwritten(url, 8, 8)
        for n in sizes:
            ours_runs: list[tuple[float, float]] = []
            hand_runs: list[tuple[float, float]] = []
            for i in range(repeat):  # alternating which goes first
                if i % 2:
                    hand_runs.append(_timed(run_handwritten, url, n, concurrency))
                    ours_runs.append(_timed(run_ours, n, concurrency))
                else:
                    ours_runs.append(_timed(run_ours, n, concurrency))
                    hand_runs.append(_timed(run_handwritten, url, n, concurrency))
            ours, hand = min(w for w, _ in ours_runs), min(w for w, _ in hand_runs)
            ours_cpu = statistics.median(c for _, c in ours_runs)
            hand_cpu = statistics.median(c for _, c in hand_runs)
            out.append({"items": n, "ours_s": ours, "handwritten_s": hand,
                        "ours_vs_handwritten": ours / hand, "ours_cpu_s": ours_cpu,
                        "handwritten_cpu_s": hand_cpu, "cpu_ratio": ours_cpu / hand_cpu,
                        "wall_ratios": [o / h for (o, _), (h, _) in zip(ours_runs, hand_runs)]})
    finally:
        stop(proc)
    return out


def dask_vs_threads(n: int, concurrency: int, latency: float, repeat: int) -> dict[str, Any]:
    """The batch on an already started cluster against the thread engine, alternating which
    goes first; the cluster's start (and its workers' first imports) is timed apart."""
    from distributed import Client, LocalCluster

    proc, url = serve(script(), latency=latency)
    try:
        _env(url)
        run_ours(8, 8)
        t0 = time.perf_counter()
        cluster = LocalCluster(n_workers=2, threads_per_worker=concurrency // 2,
                               processes=True, dashboard_address=None)
        client = Client(cluster)
        start_s = time.perf_counter() - t0
        threads: list[float] = []
        dask: list[float] = []
        try:
            t0 = time.perf_counter()
            run_ours(8, 8, engine="dask")  # the workers' first imports and connections
            warm_s = time.perf_counter() - t0
            for i in range(repeat):
                if i % 2:
                    dask.append(run_ours(n, concurrency, engine="dask"))
                    threads.append(run_ours(n, concurrency))
                else:
                    threads.append(run_ours(n, concurrency))
                    dask.append(run_ours(n, concurrency, engine="dask"))
        finally:
            client.close()
            cluster.close()
    finally:
        stop(proc)
    ratios = [d / t for d, t in zip(dask, threads, strict=True)]
    return {"items": n, "threads_s": min(threads), "dask_s": min(dask),
            "dask_vs_threads": min(dask) / min(threads), "ratios": ratios,
            "cluster_start_s": start_s, "first_batch_s": warm_s}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=400)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--overhead-items", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3, help="best of this many runs each")
    ap.add_argument("--no-dask", action="store_true")
    ap.add_argument("--cpu-items", default="2000,10000",
                    help="item counts of the CPU-bound comparison (empty: skip it)")
    ap.add_argument("--cpu-repeat", type=int, default=2)
    ap.add_argument("--json", action="store_true", help="print the numbers as JSON")
    ap.add_argument("--quick", action="store_true",
                    help="160 items, best of 2, 40 overhead items, no Dask")
    args = ap.parse_args(argv)
    if args.quick:
        args.items, args.repeat, args.overhead_items, args.no_dask = 160, 2, 40, True
        args.cpu_items, args.cpu_repeat = "2000", 1
    if not args.no_dask:
        try:
            import distributed  # noqa: F401
        except ImportError:
            print("(no dask.distributed: the Dask comparison is skipped)")
            args.no_dask = True
    home = tempfile.mkdtemp(prefix="jupyter-agent-bench-")
    os.environ["JUPYTER_AGENT_HOME"] = home  # a scratch store, not the user's

    out: dict[str, Any] = {"throughput": throughput(args.items, args.concurrency, args.latency,
                                                    args.repeat),
                           "overhead": overhead(args.overhead_items, args.repeat + 2)}
    sizes = [int(x) for x in args.cpu_items.split(",") if x.strip()]
    if sizes:
        out["cpu"] = cpu_bound(sizes, 64, 0.05, args.cpu_repeat)
    if not args.no_dask:
        out["dask"] = dask_vs_threads(args.items, args.concurrency, args.latency,
                                      args.repeat)
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    t = out["throughput"]
    print(f"Throughput: {t['items']} items x 2 rounds, {t['latency'] * 1000:.0f} ms per request, "
          f"concurrency {t['concurrency']}")
    print(f"  ideal {t['ideal_s']:.2f} s · jupyter_agent.batch {t['ours_s']:.2f} s "
          f"({t['ours_vs_ideal']:.2f}x ideal) · hand-written ThreadPoolExecutor "
          f"{t['handwritten_s']:.2f} s ({t['handwritten_vs_ideal']:.2f}x ideal)")
    print(f"  batch / hand-written: {t['ours_vs_handwritten']:.2f} (goal <= 1.01 -> "
          f"{'OK' if t['ours_vs_handwritten'] <= 1.01 else 'MISSED'})")
    for c in out.get("cpu", []):
        print(f"CPU bound: {c['items']:,} items, concurrency 64, 50 ms: batch {c['ours_s']:.2f} s, "
              f"hand-written {c['handwritten_s']:.2f} s -> {c['ours_vs_handwritten']:.2f}x "
              f"(goal <= 1.15 -> {'OK' if c['ours_vs_handwritten'] <= 1.15 else 'MISSED'}); "
              f"each pair {', '.join(f'{r:.2f}' for r in c['wall_ratios'])}")
        print(f"  CPU time of the process (median): batch {c['ours_cpu_s']:.2f} s, hand-written "
              f"{c['handwritten_cpu_s']:.2f} s -> {c['cpu_ratio']:.2f}x")
    o = out["overhead"]
    print(f"Overhead at concurrency 1 ({o['items']} items, no latency): plain toolloop loop "
          f"{o['plain_loop_s']:.2f} s, batch {o['batch_s']:.2f} s -> "
          f"{o['overhead_ms_per_item']:.2f} ms per item")
    if "dask" in out:
        d = out["dask"]
        print(f"Dask (2-worker LocalCluster) vs threads, {d['items']} items: threads "
              f"{d['threads_s']:.2f} s, dask {d['dask_s']:.2f} s ({d['dask_vs_threads']:.2f}x; "
              f"goal <= 1.2 -> {'OK' if d['dask_vs_threads'] <= 1.2 else 'MISSED'}); "
              f"each run: {', '.join(f'{r:.2f}' for r in d['ratios'])}")
        print(f"  (on a started cluster: its start, {d['cluster_start_s']:.1f} s, and its "
              f"workers' first batch, {d['first_batch_s']:.1f} s, are not in the ratio)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
