"""Import cost: what ``%load_ext jupyter_agent`` pays, against ``import IPython``.

Each figure is the median of 7 fresh interpreters, timed inside the process around the import
(interpreter start-up excluded). Target: ``import jupyter_agent`` at most 100 ms above
``import IPython``. Run: ``python bench/bench_import.py``.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RUNS = 7

CASES = {
    "import IPython": ("", "import IPython"),
    "import jupyter_agent": ("", "import jupyter_agent"),
    # What a kernel pays on %load_ext: the shell exists already; the extension loads now.
    "%load_ext jupyter_agent": (
        "from IPython.core.interactiveshell import InteractiveShell\n"
        "shell = InteractiveShell.instance()",
        "shell.run_line_magic('load_ext', 'jupyter_agent')"),
    "import openai (for scale)": ("", "import openai"),
}

_PROBE = """
import sys, time, json
{setup}
t = time.perf_counter()
{stmt}
dt = time.perf_counter() - t
heavy = [m for m in ("openai", "httpx", "httpx2", "ipywidgets", "anywidget", "pydantic")
         if m in sys.modules]
print(json.dumps({{"ms": dt * 1000, "loaded": heavy}}))
"""


def _once(setup: str, stmt: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    out = subprocess.run([sys.executable, "-c", _PROBE.format(setup=setup, stmt=stmt)],
                         capture_output=True, text=True, cwd=ROOT, env=env, check=True)
    return json.loads(out.stdout)


def measure(setup: str, stmt: str) -> tuple[float, list[str]]:
    """Median milliseconds over ``RUNS`` fresh processes, and the heavy modules it loaded."""
    runs = [_once(setup, stmt) for _ in range(RUNS)]
    return statistics.median(r["ms"] for r in runs), runs[-1]["loaded"]


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Print the table; returns the medians."""
    results: dict[str, float] = {}
    print(f"Import cost (median of {RUNS} fresh processes)")
    for label, (setup, stmt) in CASES.items():
        ms, loaded = measure(setup, stmt)
        results[label] = ms
        print(f"  {label:<28}{ms:>8.1f} ms   loads: {', '.join(loaded) or '-'}")
    over = results["import jupyter_agent"] - results["import IPython"]
    print(f"\nimport jupyter_agent - import IPython = {over:+.1f} ms "
          f"(ratio {results['import jupyter_agent'] / results['import IPython']:.2f}); "
          f"target <= +100 ms -> {'OK' if over <= 100 else 'MISSED'}")
    print(f"%load_ext jupyter_agent in a running shell: {results['%load_ext jupyter_agent']:.1f} ms "
          f"(target <= 100 ms -> {'OK' if results['%load_ext jupyter_agent'] <= 100 else 'MISSED'})")
    return results


if __name__ == "__main__":
    main()
