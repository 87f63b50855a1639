"""``python -m jupyter_agent.edge.demo`` (what ``make demo`` runs): execute every tutorial headless.

Each notebook of ``notebooks/`` is copied into ``demo-output/`` and executed there (nbclient,
a kernel of this Python): ``01-chat-basics`` live against the embedded model when the ``local``
extra is installed, every other tutorial (and 01 without the extra) from its cassette, so no
API key and no network are needed. The executed notebooks (signed, so Jupyter trusts them
as it trusts a notebook its user ran) and an HTML export of each are written next to each other; the command that opens them in JupyterLab is printed last. The
exit status is 1 when a notebook failed (its partly executed copy is still written).
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

if TYPE_CHECKING:
    from nbformat.notebooknode import NotebookNode

__all__ = ["DemoResult", "main", "run_demo", "trust", "tutorials", "LIVE_LOCAL", "LIVE_NOTE"]

LIVE_LOCAL = ("01-chat-basics.ipynb",)
"""Tutorials run live against the embedded model when it is installed."""
LIVE_NOTE = ("> **This copy ran live.** The embedded model is installed, so `make demo` ran "
             "the cells below against it (`%agent live`, model `local`) instead of replaying "
             "the cassette the note above describes: its answers are this run's, not the "
             "recorded ones.")
"""The note a tutorial of :data:`LIVE_LOCAL` gets when the demo runs it live."""
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


class DemoResult(TypedDict):
    """How one tutorial ran (:func:`run_demo`)."""

    name: str
    mode: str
    """How it ran: replayed from its cassette, executed as saved, or live."""
    ok: bool
    error: str | None
    """The last line of the failing cell's error; ``None`` when every cell ran."""
    seconds: float
    notebook: Path
    html: Path


def tutorials(folder: Path) -> list[Path]:
    """The tutorial notebooks of ``folder`` (``NN-name.ipynb``), in order."""
    return sorted(folder.glob("[0-9][0-9]-*.ipynb"))


def _notebooks_folder() -> Path:
    for candidate in (Path.cwd() / "notebooks", Path(__file__).resolve().parents[1] / "notebooks"):
        if tutorials(candidate):
            return candidate
    raise SystemExit("No tutorials found: run the demo from the jupyter-agent source folder "
                     "(the one holding notebooks/).")


def _local_available() -> bool:
    try:
        from ..clients.embedded import local_available
    except ImportError:
        return False
    return local_available()


def run_demo(source: Path, output: Path, *, live_local: bool | None = None,
             only: list[str] | None = None, timeout: int = 900) -> list[DemoResult]:
    """Execute the tutorials of ``source`` into ``output``; one result dict per notebook
    (``name``, ``mode``, ``ok``, ``error``, ``seconds``, ``notebook``, ``html``)."""
    import nbformat
    from nbclient.exceptions import CellExecutionError

    from ..replay.notebooks import (
        cassette_of,
        execute_notebook,
        find_cassette_line,
        scrub_folder,
        set_cassette_line,
    )

    if live_local is None:
        live_local = _local_available()
    output.mkdir(parents=True, exist_ok=True)
    results: list[DemoResult] = []
    for path in tutorials(source):
        if only and not any(path.name.startswith(o) for o in only):
            continue
        target = output / path.name
        shutil.copy(path, target)  # the copy carries the cassette its replay line reads...
        nb = nbformat.read(str(target), as_version=4)
        beside = cassette_of(nb, path)
        if beside is not None and beside.resolve() != path.resolve() and beside.exists():
            copied = output / beside.relative_to(path.parent)  # ...or one beside the notebook
            copied.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(beside, copied)
        env: dict[str, str] = {}
        mode = "replayed from its cassette" if find_cassette_line(nb) else "executed as saved"
        if live_local and path.name in LIVE_LOCAL:
            set_cassette_line(nb, "%agent live")
            env["JUPYTER_AGENT_MODEL"] = "local"
            mode = "live, embedded model"
            # Its text says it replays a cassette: the copy says it did not.
            nb.cells.insert(1, nbformat.v4.new_markdown_cell(LIVE_NOTE))
        start = time.perf_counter()
        error = None
        try:
            execute_notebook(nb, output, env=env, timeout=timeout)
        except CellExecutionError as exc:
            lines = _ANSI.sub("", str(exc)).strip().splitlines()
            error = lines[-1] if lines else repr(exc)
        scrub_folder(nb, output)  # no path of this machine in a saved output
        nb.metadata.pop("widgets", None)  # widget state would need the kernel: runs have MIME
        trust(nb)
        nbformat.write(nb, str(target))
        html = target.with_suffix(".html")
        html.write_text(export_html(nb), encoding="utf-8")
        results.append({"name": path.name, "mode": mode, "ok": error is None, "error": error,
                        "seconds": time.perf_counter() - start, "notebook": target,
                        "html": html})
        status = "ok" if error is None else f"FAILED: {error}"
        print(f"  {path.name:<42} {mode:<28} {results[-1]['seconds']:6.1f} s  {status}",
              flush=True)
    return results


def trust(nb: NotebookNode) -> None:
    """Sign ``nb`` as ``jupyter trust`` does (the signature goes to this user's Jupyter data
    folder): the demo executed it here, as a user running it in JupyterLab would, so Notebook 7
    opens it "Trusted" instead of "Not Trusted". Its outputs are the package's own bundles
    (model text inert in them, docs/security.md)."""
    from nbformat.sign import NotebookNotary

    NotebookNotary().sign(nb)


def export_html(nb: NotebookNode) -> str:
    """The notebook as standalone HTML; runs show their markdown transcript (a saved widget
    view needs a live kernel, so it is left out)."""
    from nbconvert import HTMLExporter
    from nbconvert.utils.base import NbConvertBase
    from traitlets.config import Config

    config = Config()
    config.NbConvertBase.display_data_priority = [
        m for m in NbConvertBase().display_data_priority if "widget-view" not in m]
    body, _ = HTMLExporter(config=config).from_notebook_node(nb)
    return body


def main(argv: list[str] | None = None) -> int:
    """CLI entry point."""
    parser = argparse.ArgumentParser(prog="python -m jupyter_agent.edge.demo",
                                     description="Execute every tutorial headless.")
    parser.add_argument("--output", type=Path, default=Path("demo-output"))
    parser.add_argument("--notebooks", type=Path, help="Folder of the tutorials.")
    parser.add_argument("--replay-only", action="store_true",
                        help="Replay 01 from its cassette too, even with the embedded model.")
    parser.add_argument("only", nargs="*", help="Tutorial numbers or names (default: all).")
    args = parser.parse_args(argv)
    from ..base.errors import ConfigError
    from ..replay.notebooks import require_notebook_tools

    try:
        require_notebook_tools()
    except ConfigError as exc:  # a plain install: one line, the extra to install
        raise SystemExit(str(exc)) from None
    source = args.notebooks or _notebooks_folder()
    print(f"Executing the tutorials of {source.name}/ into {args.output}/ ...", flush=True)
    results = run_demo(source, args.output, live_local=False if args.replay_only else None,
                       only=args.only)
    failed = [r for r in results if not r["ok"]]
    print()
    print(f"{len(results) - len(failed)} of {len(results)} notebooks ran. Executed notebooks "
          f"and HTML exports are in {args.output}/:")
    for r in results:
        print(f"  {r['notebook']}   {r['html']}")
    print()
    jupyter = jupyter_command()
    print(f"Open them in JupyterLab:  {jupyter} lab {args.output}/   "
          f"(Notebook 7: {jupyter} notebook {args.output}/)")
    return 1 if failed or not results else 0


def jupyter_command() -> str:
    """The ``jupyter`` beside this interpreter, as the user can type it from here: relative to
    the working folder when it is inside it (``.venv/bin/jupyter`` after ``make demo``), else
    absolute; plain ``jupyter`` when this environment has none. A fixed ``.venv/bin/jupyter``
    would be wrong for anyone who installed the package into another environment."""
    found = Path(sys.executable).parent / ("jupyter.exe" if sys.platform == "win32" else "jupyter")
    if not found.exists():
        return "jupyter"
    try:
        return str(found.relative_to(Path.cwd()))
    except ValueError:
        return str(found)


if __name__ == "__main__":
    sys.exit(main())
