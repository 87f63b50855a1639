"""Run every benchmark: ``python -m bench [--quick]`` (also ``make bench``).

Each benchmark measures its own baseline in the same run and prints ratios against it; nothing
here asserts a time, the numbers are for the reader (and the issue's closing note).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import (  # noqa: E402
    bench_acp,
    bench_batch,
    bench_cold,
    bench_history,
    bench_import,
    bench_live,
    bench_loop,
    bench_notebook,
    bench_plan,
    bench_sandbox,
    bench_saved,
    bench_stream,
    bench_structured,
    bench_trace,
)


def main(argv: list[str] | None = None) -> None:
    """Run the import, loop, streaming, planning, notebook-tool, live-view, batch,
    typed-answer/cache, trace and sandbox benchmarks."""
    parser = argparse.ArgumentParser(description="jupyter_agent benchmarks")
    parser.add_argument("--quick", action="store_true", help="Fewer repeats, fewer tokens.")
    args = parser.parse_args(argv)
    print("=" * 78)
    bench_import.main([])
    print("=" * 78)
    bench_cold.main(["--runs", "3", "--kernel-runs", "1"] if args.quick else [])
    print("=" * 78)
    bench_loop.main(["--quick"] if args.quick else [])
    print("=" * 78)
    bench_stream.main(["--tokens", "5000", "--runs", "1"] if args.quick else [])
    print("=" * 78)
    bench_plan.main(["--repeat", "2"] if args.quick else [])
    print("=" * 78)
    bench_notebook.main(["--quick"] if args.quick else [])
    print("=" * 78)
    bench_live.main(["--rounds", "60"] if args.quick else [])
    print("=" * 78)
    bench_history.main(["--quick"] if args.quick else [])
    print("=" * 78)
    bench_batch.main(["--quick"] if args.quick else [])
    print("=" * 78)
    bench_structured.main(["--quick"] if args.quick else [])
    print("=" * 78)
    bench_trace.main(["--quick"] if args.quick else [])
    print("=" * 78)
    bench_acp.main(["--quick"] if args.quick else [])
    print("=" * 78)
    bench_sandbox.main(["--files", "20000", "--runs", "5"] if args.quick else [])
    print("=" * 78)
    bench_saved.main(["--cards", "5"] if args.quick else [])


if __name__ == "__main__":
    main()
