"""The notebook tools: ``inspect_variable`` on a big DataFrame, and ``run_python``'s overhead.

(1) ``inspect_variable`` (the whole tool call: JSON arguments, namespace, summary, masking)
    on a 10,000,000-row, 20-column pandas DataFrame of mixed dtypes, against ``repr(df)`` and
    ``df.info()`` measured in the same run (and the same frame in polars against its repr).
    Targets: under 200 ms and under 4 KB of text. ``df.describe()``, which a naive summary
    would call, is timed once for scale.
(2) ``run_python`` (the tool call) against running the same code directly in an IPython
    shell (``run_cell``, what a cell costs without the messaging) and against bare ``exec``.
    Target: under 5 ms of overhead.

The runs of each comparison are interleaved, so a noisy neighbour slows all of them alike;
medians are reported. Run: ``python bench/bench_notebook.py [--quick]``.
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def interleaved(cases: dict[str, Callable[[], Any]], repeat: int) -> dict[str, float]:
    """Median milliseconds of each case, the cases run in turn ``repeat`` times."""
    times: dict[str, list[float]] = {k: [] for k in cases}
    for _ in range(repeat):
        for name, fn in cases.items():
            start = time.perf_counter()
            fn()
            times[name].append((time.perf_counter() - start) * 1000)
    return {k: statistics.median(v) for k, v in times.items()}


def big_frame(rows: int) -> Any:
    """12 float, 4 int, 1 bool, 1 datetime, 1 categorical and 1 string column."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(1)
    data: dict[str, Any] = {f"f{i}": rng.standard_normal(rows) for i in range(12)}
    data.update({f"i{i}": rng.integers(0, 1000, rows) for i in range(4)})
    data["flag"] = rng.integers(0, 2, rows).astype(bool)
    data["when"] = pd.date_range("2020-01-01", periods=rows, freq="s")
    data["grade"] = pd.Categorical.from_codes(rng.integers(0, 5, rows), list("abcde"))
    data["name"] = np.array(["alice", "bob", "carol", "dave"], dtype=object)[
        rng.integers(0, 4, rows)]
    df = pd.DataFrame(data)
    df.loc[::1000, "f0"] = np.nan
    return df


def bench_inspect(rows: int, repeat: int) -> dict[str, float]:
    import polars as pl

    from jupyter_agent.tools.notebook import notebook_tools

    print(f"Building a {rows:,} x 20 DataFrame ...", flush=True)
    df = big_frame(rows)
    pdf = pl.from_pandas(df.drop(columns=["grade", "name"]))
    ns = {"df": df, "pdf": pdf}
    inspect = {t.name: t for t in notebook_tools(ns)}["inspect_variable"]
    sizes: dict[str, int] = {}

    def tool(name: str) -> Callable[[], None]:
        def call() -> None:
            sizes[name] = len(inspect.invoke(json.dumps({"name": name})).output)
        return call

    def info() -> None:
        buf = io.StringIO()
        df.info(buf=buf)
        sizes["df.info()"] = len(buf.getvalue())

    def rep() -> None:
        sizes["repr(df)"] = len(repr(df))

    def prep() -> None:
        sizes["repr(polars df)"] = len(repr(pdf))

    tool("df")()  # the first call imports pandas' helpers: not what a second call pays
    ms = interleaved({"inspect_variable(df)": tool("df"), "repr(df)": rep, "df.info()": info,
                      "inspect_variable(polars df)": tool("pdf"), "repr(polars df)": prep},
                     repeat)
    sizes["inspect_variable(df)"] = sizes.pop("df")
    sizes["inspect_variable(polars df)"] = sizes.pop("pdf")
    start = time.perf_counter()
    df.describe()
    ms["df.describe() (once)"] = (time.perf_counter() - start) * 1000
    print(f"\ninspect_variable on {rows:,} rows x 20 columns (median of {repeat}, interleaved)")
    for name, value in ms.items():
        size = f"{sizes[name]:>6,} chars" if name in sizes else ""
        print(f"  {name:<30}{value:>9.1f} ms  {size}")
    ours, size = ms["inspect_variable(df)"], sizes["inspect_variable(df)"]
    print(f"  ratio inspect/repr {ours / ms['repr(df)']:.1f}x, inspect/info "
          f"{ours / ms['df.info()']:.1f}x, describe/inspect "
          f"{ms['df.describe() (once)'] / ours:.0f}x")
    print(f"  target < 200 ms and < 4 KB: {ours:.0f} ms, {size:,} chars -> "
          f"{'OK' if ours < 200 and size < 4096 else 'MISSED'}")
    return ms


CODES = {
    "assignment": "x = 1",
    "loop + expression": "s = 0\nfor i in range(1000):\n    s += i\ns",
    "100 prints": "for i in range(100):\n    print(i)",
}


def bench_run_python(repeat: int) -> dict[str, float]:
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    from jupyter_agent.tools.notebook import notebook_tools

    shell = InteractiveShell.instance()
    run = {t.name: t for t in notebook_tools(shell)}["run_python"]
    worst = 0.0
    results: dict[str, float] = {}
    print(f"\nrun_python overhead (median of {repeat}, interleaved)")
    print(f"  {'code':<20}{'exec':>9}{'run_cell':>10}{'run_python':>12}{'overhead':>10}")
    for label, code in CODES.items():
        args = json.dumps({"code": code})

        def direct(code: str = code) -> None:
            with capture_output():  # a cell's prints go to the front end, not to us
                exec(compile(code, "<cell>", "exec"), shell.user_ns)

        def cell(code: str = code) -> None:
            with capture_output():
                shell.run_cell(code, store_history=False, silent=True)

        def tool(args: str = args) -> None:
            run.invoke(args)

        ms = interleaved({"exec": direct, "run_cell": cell, "run_python": tool}, repeat)
        over = ms["run_python"] - ms["run_cell"]
        worst = max(worst, over)
        results[label] = over
        print(f"  {label:<20}{ms['exec']:>8.3f} {ms['run_cell']:>9.3f} {ms['run_python']:>11.3f}"
              f"{over:>+9.3f} ms")
    print(f"  target: run_python - run_cell < 5 ms -> {'OK' if worst < 5 else 'MISSED'} "
          f"(worst {worst:+.2f} ms)")
    return results


def main(argv: list[str] | None = None) -> None:
    """Run both benchmarks and print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1M rows, fewer repeats.")
    parser.add_argument("--rows", type=int, default=None)
    args = parser.parse_args(argv)
    rows = args.rows or (1_000_000 if args.quick else 10_000_000)
    bench_inspect(rows, 3 if args.quick else 7)
    bench_run_python(50 if args.quick else 300)


if __name__ == "__main__":
    main()
