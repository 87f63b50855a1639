"""The cost of one sandboxed ``bash`` call, and whether it grows with the workspace.

Three figures, each the median of ``--runs`` calls in this process (after one warm-up call):

* ``bash true`` in an empty workspace, through the tool (bubblewrap, the overlay, the final-
  state check of what changed);
* the same in a workspace of ``--files`` files (200,000 by default: 200 folders of 1,000, and
  a git repository at the top);
* a bare ``bwrap --ro-bind /usr /usr ... true``, the floor of any bubblewrap sandbox.

Targets (issue 35): big/empty <= 1.2x; empty/bare toward 2x. Run:
``python bench/bench_sandbox.py [--files N] [--runs N]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _fill(ws: Path, files: int) -> None:
    per = 1000
    for d in range(max(1, files // per)):
        folder = ws / f"d{d:04d}"
        folder.mkdir()
        for i in range(min(per, files - d * per)):
            (folder / f"f{i}.txt").write_bytes(b"x")
    subprocess.run(["git", "init", "-q", str(ws)], check=False)


def _time(fn: object, runs: int) -> float:
    call = fn  # a callable taking no arguments
    call()  # type: ignore[operator]
    samples = []
    for _ in range(runs):
        t = time.perf_counter()
        call()  # type: ignore[operator]
        samples.append((time.perf_counter() - t) * 1000)
    return statistics.median(samples)


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Print the three medians and the two ratios; returns the medians (ms)."""
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--files", type=int, default=200_000)
    p.add_argument("--runs", type=int, default=15)
    args = p.parse_args(argv)
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        print("Sandbox cost: skipped (bubblewrap is not installed)")
        return {}
    tmp = Path(tempfile.mkdtemp(prefix="bench-sandbox-"))
    old_home = os.environ.get("JUPYTER_AGENT_HOME")
    os.environ["JUPYTER_AGENT_HOME"] = str(tmp / "agent-home")
    try:
        from jupyter_agent.sandbox import OverlayRun
        from jupyter_agent.tools.builtin import Workspace, make_builtin_functions

        empty, big = tmp / "empty", tmp / "big"
        empty.mkdir()
        big.mkdir()
        _fill(big, args.files)
        res: dict[str, float] = {}
        for label, ws in (("empty", empty), ("big", big)):
            tool = make_builtin_functions(Workspace(ws))["bash"]
            res[label] = _time(lambda tool=tool: tool("true"), args.runs)
        checked = OverlayRun.why_not(str(empty.resolve())) or "yes"
        bare = [bwrap, "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin",
                "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
                "--unshare-pid", "--unshare-user", "--proc", "/proc", "--dev", "/dev", "true"]
        res["bare"] = _time(lambda: subprocess.run(bare, check=True), args.runs)
        print(f"Sandbox cost (median of {args.runs} calls; changes checked: {checked})")
        print(f"  bash true, empty workspace      {res['empty']:>8.1f} ms")
        print(f"  bash true, {args.files:,} files    {res['big']:>8.1f} ms")
        print(f"  bare bwrap true                 {res['bare']:>8.1f} ms")
        print(f"  big / empty  = {res['big'] / res['empty']:.2f}x (target <= 1.2x)")
        print(f"  empty / bare = {res['empty'] / res['bare']:.2f}x (target toward 2x)")
        return res
    finally:
        if old_home is None:
            os.environ.pop("JUPYTER_AGENT_HOME", None)
        else:
            os.environ["JUPYTER_AGENT_HOME"] = old_home
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
