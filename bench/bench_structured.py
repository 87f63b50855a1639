"""Typed answers and the answer cache, against their baselines in the same run.

1. Typed against text: N ``chat`` items (default 1,000) at concurrency 1 with no store, once
   asking for text and once with ``output=Ticket`` (a 3-field schema), from the same scripted
   server answering the same JSON, in interleaved batches of 100 (median batch, best of
   ``--repeat``). Reported: the extra milliseconds per item (the goal: at most 1 ms) and the
   ratio typed / text.
2. A cache hit: ``CachedClient.complete`` answering from disk (the goal: at most 2 ms, and no
   request reaches the server), against the same request sent to the server; and a whole
   ``chat()`` run answered from the cache against one sent.

Run: ``python bench/bench_structured.py [--items 1000] [--quick]``. Nothing asserts a time.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Literal

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench._server import serve, stop  # noqa: E402
from tests.fakes.openai_server import text  # noqa: E402

MODEL = "gpt-4.1-mini"
KEY = "sk-bench-not-a-secret"
ANSWER = '{"label": "billing", "urgency": 2, "summary": "Invoice charged twice."}'


def _ticket() -> Any:
    from pydantic import BaseModel

    class Ticket(BaseModel):
        label: Literal["billing", "technical", "other"]
        urgency: int
        summary: str

    return Ticket


def _batch(n: int, output: Any) -> float:
    import jupyter_agent

    rows = [{"t": f"ticket {i}"} for i in range(n)]
    opts = {"output": output} if output is not None else {}
    t0 = time.perf_counter()
    res = jupyter_agent.batch("Classify: {t}", rows, kind="chat", model=MODEL, concurrency=1,
                              store=None, **opts)
    seconds = time.perf_counter() - t0
    bad = [s for s in res.results["status"] if s != "done"]
    if bad:
        raise RuntimeError(f"{len(bad)} items did not finish: {bad[:3]}")
    return seconds


def typed_vs_text(n: int, repeat: int, block: int = 100) -> dict[str, float]:
    """N items per contender, in interleaved batches of ``block`` (the machine is shared: a
    burst of load then hits both alike); the median block, and the best of ``repeat``."""
    proc, url = serve(text(ANSWER))
    os.environ.update(OPENAI_BASE_URL=url, OPENAI_API_KEY=KEY)
    ticket = _ticket()
    size = max(1, min(block, n))
    blocks = max(1, n // size)
    try:
        _batch(min(n, 50), ticket)  # warm: imports, connections, the schema's model
        _batch(min(n, 50), None)
        plain: list[float] = []
        typed: list[float] = []
        for _ in range(repeat):
            p_times: list[float] = []
            t_times: list[float] = []
            for b in range(blocks):
                if b % 2:
                    t_times.append(_batch(size, ticket))
                    p_times.append(_batch(size, None))
                else:
                    p_times.append(_batch(size, None))
                    t_times.append(_batch(size, ticket))
            plain.append(sorted(p_times)[len(p_times) // 2] / size)
            typed.append(sorted(t_times)[len(t_times) // 2] / size)
    finally:
        stop(proc)
    p, t = min(plain), min(typed)
    return {"items": blocks * size, "text_ms_per_item": p * 1e3, "typed_ms_per_item": t * 1e3,
            "extra_ms_per_item": (t - p) * 1e3, "ratio": t / p}


def cache_hit(calls: int) -> dict[str, float]:
    from jupyter_agent import chat
    from jupyter_agent.clients.cache import CachedClient
    from jupyter_agent.clients.factory import make_client
    from jupyter_agent.llm.types import ChatRequest

    proc, url = serve(text(ANSWER))
    os.environ.update(OPENAI_BASE_URL=url, OPENAI_API_KEY=KEY)
    try:
        base: Any = make_client(MODEL)
        cached = CachedClient(base, base.cache_scope, base.cache_secret)
        req = ChatRequest(model=MODEL, messages=[{"role": "user", "content": "cache me"}],
                          stream=False)
        cached.complete(req)  # the miss that fills the entry
        base.complete(req)
        t0 = time.perf_counter()
        for _ in range(calls):
            hit = cached.complete(req)
        hit_s = (time.perf_counter() - t0) / calls
        assert hit.cached
        t0 = time.perf_counter()
        for _ in range(calls):
            base.complete(req)
        sent_s = (time.perf_counter() - t0) / calls
        # Whole runs: chat() answered from the cache against chat() sent.
        runs = max(20, calls // 10)
        chat("A whole run.", model=MODEL, store=None, cache=True)
        t0 = time.perf_counter()
        for _ in range(runs):
            chat("A whole run.", model=MODEL, store=None, cache=True)
        run_hit = (time.perf_counter() - t0) / runs
        t0 = time.perf_counter()
        for _ in range(runs):
            chat("A whole run.", model=MODEL, store=None)
        run_sent = (time.perf_counter() - t0) / runs
    finally:
        stop(proc)
    return {"hit_ms": hit_s * 1e3, "sent_ms": sent_s * 1e3, "hit_vs_sent": hit_s / sent_s,
            "run_hit_ms": run_hit * 1e3, "run_sent_ms": run_sent * 1e3,
            "run_ratio": run_hit / run_sent}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--items", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--quick", action="store_true", help="200 items, best of 2, 300 calls.")
    ap.add_argument("--json", action="store_true", help="print the numbers as JSON")
    args = ap.parse_args(argv)
    if args.quick:
        args.items, args.repeat, args.calls = 200, 2, 300
    home = tempfile.mkdtemp(prefix="bench-structured-")
    os.environ["JUPYTER_AGENT_HOME"] = home  # a cache and store of its own
    typed = typed_vs_text(args.items, args.repeat)
    cache = cache_hit(args.calls)
    if args.json:
        print(json.dumps({"typed": typed, "cache": cache}))
        return 0
    print("Typed answers and the answer cache")
    print(f"  typed vs text, {typed['items']} chat items each (batches of 100, interleaved), "
          f"concurrency 1, best of {args.repeat}:")
    print(f"    text  {typed['text_ms_per_item']:.3f} ms/item   typed "
          f"{typed['typed_ms_per_item']:.3f} ms/item")
    print(f"    extra {typed['extra_ms_per_item']:+.3f} ms/item (goal <= 1 ms), "
          f"ratio typed/text {typed['ratio']:.3f}")
    print(f"  cache hit ({args.calls} calls): {cache['hit_ms']:.3f} ms (goal <= 2 ms) vs "
          f"{cache['sent_ms']:.3f} ms sent: ratio {cache['hit_vs_sent']:.3f}")
    print(f"  whole chat() run: cached {cache['run_hit_ms']:.3f} ms vs sent "
          f"{cache['run_sent_ms']:.3f} ms: ratio {cache['run_ratio']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
