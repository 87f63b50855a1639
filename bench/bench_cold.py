"""Cold start: a fresh process imports and finishes a one-round ``toolloop``, against the raw
``openai`` client making the same request in a fresh process.

Each figure is timed inside the child, from before its first import to the answer (interpreter
start-up excluded), against the scripted server in another process; the two kinds of child
alternate, median of ``--runs`` each. Each ``toolloop`` child gets an empty data directory (its
first run creates the store, as a new user's does). Both kinds of child read compiled bytecode
from one cache the warm-up runs fill, as an installed package does (``pip`` compiles it); with
``PYTHONDONTWRITEBYTECODE`` set, our modules would be compiled from source in every child while
the SDK's come precompiled from site-packages. Goal: no slower than the raw client.
Also, where users meet it: the first cell in a fresh kernel (after ``%load_ext``), a
``%%toolloop`` cell against a cell making the raw client's request, timed inside the kernel
around the cell's work, median of ``--kernel-runs`` kernels each; and the cost of each further
client (another model, a judge, a fallback) in a warm process, ours (one shared TLS context,
``llm/tls.py``) against the raw client's constructor.
Run: ``python bench/bench_cold.py [--runs 7] [--kernel-runs 5]``. Nothing asserts a time.
"""

from __future__ import annotations

import argparse
import json
import os
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

MODEL = "gpt-4.1-mini"
KEY = "sk-bench-not-a-secret"

RAW = """
import time, json
t = time.perf_counter()
import openai
client = openai.OpenAI()
resp = client.chat.completions.create(model="gpt-4.1-mini", messages=[
    {"role": "user", "content": "Say hello."}])
assert resp.choices[0].message.content
print(json.dumps({"ms": (time.perf_counter() - t) * 1000}))
"""

OURS = """
import time, json
t = time.perf_counter()
from jupyter_agent import toolloop
run = toolloop("Say hello.", model="gpt-4.1-mini")
assert run.status == "done", run.status
print(json.dumps({"ms": (time.perf_counter() - t) * 1000}))
"""


def _child_env(url: str, pycache: str) -> dict[str, str]:
    """A fresh process's environment: the scripted server, an empty data directory, the shared
    bytecode cache (see the module doc)."""
    env = {**os.environ, "OPENAI_BASE_URL": url, "OPENAI_API_KEY": KEY,
           "JUPYTER_AGENT_HOME": tempfile.mkdtemp(prefix="jupyter-agent-bench-cold-"),
           "PYTHONPYCACHEPREFIX": pycache,
           "PYTHONPATH": os.pathsep.join(
               p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _once(code: str, url: str, pycache: str) -> float:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=tempfile.gettempdir(), env=_child_env(url, pycache), check=True)
    return float(json.loads(out.stdout.strip().splitlines()[-1])["ms"])


RAW_CELL = """
import openai
_client = openai.OpenAI()
_client.chat.completions.create(model="gpt-4.1-mini", messages=[
    {"role": "user", "content": "Say hello."}])
"""


def _in_kernel(cell: str, url: str, pycache: str) -> float:
    """Milliseconds of ``cell`` as the first cell of a fresh kernel (after ``%load_ext``)."""
    from jupyter_client.manager import start_new_kernel

    km, kc = start_new_kernel(kernel_name="python3", startup_timeout=120,
                              env=_child_env(url, pycache),
                              stderr=subprocess.DEVNULL)  # its start-up warnings
    out: list[str] = []

    def run(code: str) -> None:
        reply = kc.execute_interactive(code, timeout=120, output_hook=lambda m: out.append(
            m["content"].get("text", "")) if m["msg_type"] == "stream" else None)
        assert reply["content"]["status"] == "ok", reply["content"]

    try:
        run("%load_ext jupyter_agent")
        # The cell's work, timed in the kernel: the same frames above it on both sides.
        run(f"import time as _t\n_t0 = _t.perf_counter()\nget_ipython().run_cell({cell!r})\n"
            "print('ms', (_t.perf_counter() - _t0) * 1000)")
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    return float("".join(out).split("ms ")[-1].split()[0])


def notebook_ms(url: str, pycache: str, runs: int) -> tuple[float, float]:
    """Median ms of the first cell of a fresh kernel, (ours ``%%toolloop``, the raw client),
    alternating."""
    ours: list[float] = []
    raw: list[float] = []
    for _ in range(runs):
        raw.append(_in_kernel(RAW_CELL, url, pycache))
        ours.append(_in_kernel("%%toolloop\nSay hello.", url, pycache))
    return statistics.median(ours), statistics.median(raw)


def next_client_ms(n: int = 15) -> tuple[float, float]:
    """Median ms to make one more client, (ours, raw ``openai.OpenAI``), alternating."""
    import openai

    from jupyter_agent.llm.http import HttpTransport

    HttpTransport(KEY, "http://127.0.0.1:9/v1", 5)  # the first one builds what is shared
    ours: list[float] = []
    raw: list[float] = []
    for i in range(n):
        t = time.perf_counter()
        HttpTransport(KEY, f"http://127.0.0.1:{10 + i}/v1", 5)
        ours.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        openai.OpenAI(api_key=KEY, base_url=f"http://127.0.0.1:{10 + i}/v1")
        raw.append((time.perf_counter() - t) * 1000)
    return statistics.median(ours), statistics.median(raw)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--kernel-runs", type=int, default=5)
    args = ap.parse_args(argv)
    proc, url = serve(text("Hello."))
    pycache = tempfile.mkdtemp(prefix="jupyter-agent-bench-cold-pycache-")
    raw: list[float] = []
    ours: list[float] = []
    try:
        _once(RAW, url, pycache)  # warm the file cache, fill the bytecode cache
        _once(OURS, url, pycache)
        for _ in range(args.runs):
            raw.append(_once(RAW, url, pycache))
            ours.append(_once(OURS, url, pycache))
        nb, nb_raw = notebook_ms(url, pycache, args.kernel_runs)
    finally:
        stop(proc)
    r, o = statistics.median(raw), statistics.median(ours)
    print(f"Cold start, median of {args.runs} fresh processes (imports + one request)")
    print(f"  raw openai client: {r:.0f} ms · jupyter_agent toolloop (1 round): {o:.0f} ms "
          f"-> {o / r:.2f}x (goal <= 1.00 -> {'OK' if o <= r else 'MISSED'})")
    print(f"  first cell of a fresh kernel, median of {args.kernel_runs}: raw client "
          f"{nb_raw:.0f} ms · %%toolloop (live view included) {nb:.0f} ms -> {nb / nb_raw:.2f}x")
    nxt, nxt_raw = next_client_ms()
    print(f"  one more client (another model, a judge): ours {nxt:.1f} ms · raw client "
          f"{nxt_raw:.1f} ms")
    return {"raw_ms": r, "ours_ms": o, "ratio": o / r, "notebook_ms": nb,
            "notebook_raw_ms": nb_raw, "notebook_ratio": nb / nb_raw, "next_client_ms": nxt,
            "next_client_raw_ms": nxt_raw}


if __name__ == "__main__":
    main()
