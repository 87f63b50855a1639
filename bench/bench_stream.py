"""Streaming cost: 20,000 tokens through ``%%chat`` in a real kernel vs the raw client.

A scripted server (child process) streams an answer of 20,000 one-token chunks. We run
``%%chat`` in an IPython kernel (jupyter_client, no front end) and measure the kernel's CPU
time for the cell (``psutil``), and the display traffic it sends (``comm_msg`` widget updates
and ``update_display_data``/``display_data`` messages on iopub). The baseline is the raw
``openai`` client consuming the same stream (``chat.completions.create(stream=True)``) in a
child process, timed with ``time.process_time`` around the request.

Targets: kernel CPU at most 1.5 times the raw client's; at most 30 display updates a second,
counted in the busiest one-second window of the cell (the kernel's message timestamps; a cell
shorter than a second is one window). The cell's average (messages / wall time) is printed too:
for a cell of a fraction of a second it is dominated by the output's first draw and its final
bundle, which any cell sends once.
Run: ``python bench/bench_stream.py [--tokens N]``.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench._server import serve, stop  # noqa: E402
from tests.fakes.openai_server import text  # noqa: E402

KEY = "sk-bench-not-a-secret"
TOKEN = "tok "
DISPLAY_MSGS = ("comm_msg", "update_display_data", "display_data")

_RAW = """
import json, sys, time
import openai
client = openai.OpenAI(base_url=sys.argv[1], api_key=sys.argv[2], max_retries=0)
def consume():
    parts = []
    for chunk in client.chat.completions.create(
            model="gpt-4.1-mini", messages=[{"role": "user", "content": "go"}], stream=True,
            stream_options={"include_usage": True}):
        for choice in chunk.choices:
            if choice.delta.content:
                parts.append(choice.delta.content)
    return "".join(parts)
consume()  # warm-up: imports and the connection
cpu, wall = time.process_time(), time.perf_counter()
answer = consume()
print(json.dumps({"cpu": time.process_time() - cpu, "wall": time.perf_counter() - wall,
                  "chars": len(answer)}))
"""


def _env(base_url: str, home: str) -> dict[str, str]:
    env = {**os.environ, "OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": KEY,
           "JUPYTER_AGENT_HOME": home,
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH"))
                                         if p)}
    env.pop("JUPYTER_AGENT_MODEL", None)
    return env


def raw_client(base_url: str, home: str) -> dict[str, float]:
    """CPU seconds of the bare SDK consuming the stream (best of 3 child processes)."""
    runs = []
    for _ in range(3):
        out = subprocess.run([sys.executable, "-c", _RAW, base_url, KEY], capture_output=True,
                             text=True, check=True, env=_env(base_url, home), cwd=ROOT)
        runs.append(json.loads(out.stdout))
    return min(runs, key=lambda r: r["cpu"])


def busiest_second(stamps: list[float]) -> int:
    """The most timestamps (seconds) in any one-second window."""
    stamps = sorted(stamps)
    best, start = 0, 0
    for end, t in enumerate(stamps):
        while t - stamps[start] >= 1.0:
            start += 1
        best = max(best, end - start + 1)
    return best


def _execute(kc: Any, code: str, timeout: float = 300) -> tuple[dict[str, int], float, str,
                                                                 list[float]]:
    """Run ``code``; returns iopub message counts, wall seconds, any error text and the
    kernel's timestamps of the display messages."""
    counts: dict[str, int] = {}
    stamps: list[float] = []
    error = ""
    start = time.perf_counter()
    msg_id = kc.execute(code)
    while True:
        try:
            msg = kc.get_iopub_msg(timeout=timeout)
        except queue.Empty:
            raise TimeoutError("the kernel did not finish the cell") from None
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        kind = msg["msg_type"]
        counts[kind] = counts.get(kind, 0) + 1
        if kind in DISPLAY_MSGS:
            date = msg["header"].get("date")
            stamps.append(date.timestamp() if hasattr(date, "timestamp") else time.time())
        if kind == "error":
            error = "\n".join(msg["content"]["traceback"])[-2000:]
        if kind == "status" and msg["content"]["execution_state"] == "idle":
            return counts, time.perf_counter() - start, error, stamps


def kernel_chat(base_url: str, home: str, runs: int) -> list[dict[str, Any]]:
    """Kernel CPU seconds and display traffic of ``%%chat`` cells streaming the answer."""
    import psutil
    from jupyter_client.manager import KernelManager

    km = KernelManager(kernel_name="python3")
    km.start_kernel(env=_env(base_url, home), cwd=str(ROOT))
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
        proc = psutil.Process(km.provisioner.process.pid)  # type: ignore[union-attr]
        for setup in ("%load_ext jupyter_agent", "%%chat --no-history\nwarm up"):
            _, _, err, _ = _execute(kc, setup)
            if err:
                raise RuntimeError(err)
        out = []
        for _ in range(runs):
            before = proc.cpu_times()
            counts, wall, err, stamps = _execute(kc, "%%chat --no-history --out answer\ngo")
            after = proc.cpu_times()
            if err:
                raise RuntimeError(err)
            cpu = (after.user - before.user) + (after.system - before.system)
            updates = sum(counts.get(k, 0) for k in DISPLAY_MSGS)
            out.append({"cpu": cpu, "wall": wall, "updates": updates, "counts": counts,
                        "busiest_second": busiest_second(stamps)})
        _, _, err, _ = _execute(kc, "assert len(answer) > 0, 'no answer'")
        if err:
            raise RuntimeError(err)
        return out
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Print the comparison; returns the numbers."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    answer = text(TOKEN * args.tokens, chunk_size=len(TOKEN))  # one token per chunk
    proc, base_url = serve(answer)
    try:
        with tempfile.TemporaryDirectory() as home:
            raw = raw_client(base_url, home)
            kernel = kernel_chat(base_url, home, args.runs)
    finally:
        stop(proc)
    cpu = statistics.median(r["cpu"] for r in kernel)
    wall = statistics.median(r["wall"] for r in kernel)
    updates = statistics.median(r["updates"] for r in kernel)
    average = max(r["updates"] / r["wall"] for r in kernel)
    rate = max(r["busiest_second"] for r in kernel)
    ratio = cpu / raw["cpu"]
    print(f"Streaming {args.tokens:,} tokens (one per chunk)")
    print(f"  raw openai client : cpu {raw['cpu']:.3f} s, wall {raw['wall']:.3f} s")
    print(f"  %%chat in a kernel: cpu {cpu:.3f} s, wall {wall:.3f} s (median of {args.runs})")
    print(f"  kernel CPU / raw client CPU = {ratio:.2f} (target <= 1.5 -> "
          f"{'OK' if ratio <= 1.5 else 'MISSED'})")
    print(f"  display messages per cell: {updates:.0f} "
          f"({', '.join(f'{k}={v}' for k, v in kernel[0]['counts'].items() if k in DISPLAY_MSGS)})"
          f"; busiest second {rate} (target <= 30 -> {'OK' if rate <= 30 else 'MISSED'})"
          f"; cell average {average:.1f}/s")
    return {"raw": raw, "kernel": kernel, "ratio": ratio, "updates_per_second": rate,
            "average_updates_per_second": average}


if __name__ == "__main__":
    main()
