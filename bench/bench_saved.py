"""The size of a saved notebook: N run cards, executed headless by nbclient (as the demo does).

Reports the file, what the widget code takes in it (every model's ``_esm``, ``_css`` and
``code``: ``ui/shared.py`` keeps one copy per kernel), and the bytes beyond the cards' own
views (the same notebook with the widget code taken out, measured in the same run). For scale,
what one copy of the code per card (the way anywidget ships it by default) would have added.
Target: 20 cards add at most 100 KB. Run: ``python bench/bench_saved.py [--cards N]``.
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

TARGET = 100_000
CODE_KEYS = ("_esm", "_css", "code")


def executed(cards: int, base_url: str) -> object:
    """A notebook of ``cards`` ``%%chat`` cells, executed in a python3 kernel."""
    import nbformat
    from nbclient import NotebookClient

    cells = [nbformat.v4.new_code_cell("%load_ext jupyter_agent")]
    cells += [nbformat.v4.new_code_cell(f"%%chat --no-history\nQuestion {i}?")
              for i in range(cards)]
    nb = nbformat.v4.new_notebook(cells=cells)
    env = {"OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "sk-bench-0000000000",
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH"))
                                         if p)}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        with tempfile.TemporaryDirectory() as home:
            os.environ["JUPYTER_AGENT_HOME"] = home
            NotebookClient(nb, kernel_name="python3", timeout=120).execute()
    finally:
        os.environ.pop("JUPYTER_AGENT_HOME", None)
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return nb


def measure(cards: int) -> dict[str, int]:
    """Bytes of the saved notebook, of its widget code, and beyond the cards' views."""
    import nbformat

    from bench._server import serve, stop
    from jupyter_agent.ui.shared import BUNDLE, STATIC
    from tests.fakes.openai_server import text

    proc, url = serve(text("A short answer, as a card would show it."))
    try:
        nb = executed(cards, url)
    finally:
        stop(proc)
    states = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]  # type: ignore[attr-defined]
    code = sum(len(str(e["state"].get(k, "")).encode()) for e in states.values()
               for k in CODE_KEYS)
    bare = copy.deepcopy(nb)
    for entry in bare.metadata["widgets"]["application/vnd.jupyter.widget-state+json"][  # type: ignore[attr-defined]
            "state"].values():
        for k in CODE_KEYS:
            entry["state"].pop(k, None)
    size = len(nbformat.writes(nb).encode())
    views = len(nbformat.writes(bare).encode())
    per_card = len(BUNDLE.read_bytes()) + sum(
        len((STATIC / n).read_bytes()) for n in ("run.css", "code.css"))
    return {"file": size, "views": views, "code": code, "extra": size - views,
            "per_card_copies": cards * per_card}


def main(argv: list[str] | None = None) -> None:
    """Execute the notebook and print the sizes."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cards", type=int, default=20)
    args = parser.parse_args(argv)
    m = measure(args.cards)
    print(f"Saved notebook with {args.cards} run cards (executed by nbclient)")
    print(f"  file                          {m['file']:>10,} bytes")
    print(f"  without any widget code       {m['views']:>10,} bytes  (the cards' own views)")
    print(f"  widget code (_esm/_css/code)  {m['code']:>10,} bytes")
    print(f"  beyond the views              {m['extra']:>10,} bytes  "
          f"({m['extra'] / args.cards:,.0f} per card)")
    print(f"  one copy per card would add   {m['per_card_copies']:>10,} bytes  "
          f"(ratio {m['per_card_copies'] / max(1, m['extra']):.1f}x)")
    print(f"  target <= {TARGET:,} bytes beyond the views: "
          f"{'OK' if m['extra'] <= TARGET else 'MISSED'}")


if __name__ == "__main__":
    main()
