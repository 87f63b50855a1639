"""Running notebooks headless (nbclient) in a kernel of this very Python, and the cassette line.

Shared by ``rerecord``, ``jupyter_agent.edge.demo``, the notebook tests and the tutorial generator.
The kernel is always ``sys.executable`` (a private kernelspec, not whatever ``python3`` means
on the machine), its working directory is the notebook's folder, and it gets a fresh,
empty ``JUPYTER_AGENT_HOME`` unless the caller gives one.

A tutorial names its cassette in one line of a code cell, ``%agent replay <cassette>``; the
tools rewrite that line in the copy they execute (``%agent record …`` to re-record,
``%agent live`` to run against a real model).
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from ..base.jsontypes import JSONValue

if TYPE_CHECKING:
    # nbformat's and jupyter_client's own types; importing nbformat costs seconds, so only
    # for the type checker.
    from jupyter_client.manager import AsyncKernelManager
    from nbformat import NotebookNode

__all__ = ["CASSETTE_LINE", "find_cassette_line", "set_cassette_line", "cassette_of",
           "execute_notebook", "require_notebook_tools",
           "kernel_manager", "run_outputs", "scrub_folder"]

CASSETTE_LINE = re.compile(r"^%agent\s+(replay|record|live)\b.*$", re.MULTILINE)
"""The line of a tutorial that chooses live, record or replay mode."""
_KERNEL_NAME = "jupyter-agent-python"


def require_notebook_tools() -> None:
    """Raise one clear ``ConfigError`` when the ``notebooks`` extra is not installed.

    Running notebooks needs nbclient, nbconvert, jupyter_client and ipykernel, which a plain
    ``pip install jupyter-agent`` does not bring (``pyproject.toml``, extra ``notebooks``).
    """
    import importlib.util

    from ..base.errors import ConfigError

    try:
        import jupyter_client  # noqa: F401
        import nbclient  # noqa: F401
        import nbconvert  # noqa: F401
    except ImportError as exc:
        raise ConfigError(f"Running notebooks needs {exc.name}: "
                          "pip install 'jupyter-agent[notebooks]'") from None
    # The kernel is started as `python -m ipykernel_launcher`: nothing here imports it.
    if importlib.util.find_spec("ipykernel") is None:
        raise ConfigError("Running notebooks needs ipykernel: "
                          "pip install 'jupyter-agent[notebooks]'")


def find_cassette_line(nb: NotebookNode) -> tuple[int, str] | None:
    """``(cell index, line)`` of the first ``%agent replay|record|live`` line, or None."""
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        m = CASSETTE_LINE.search(cell.source)
        if m:
            return i, m.group(0)
    return None


def set_cassette_line(nb: NotebookNode, line: str) -> str:
    """Replace the cassette line with ``line``; returns the line it replaced.

    Raises:
        ValueError: the notebook has no ``%agent replay`` line.
    """
    found = find_cassette_line(nb)
    if found is None:
        raise ValueError("the notebook has no `%agent replay <cassette>` line in a code cell")
    i, old = found
    nb.cells[i].source = nb.cells[i].source.replace(old, line, 1)
    return old


def cassette_of(nb: NotebookNode, notebook_path: Path) -> Path | None:
    """The cassette the notebook's ``%agent replay`` line names (relative to the notebook)."""
    found = find_cassette_line(nb)
    if found is None:
        return None
    parts = found[1].split()
    args = [a for a in parts[2:] if not a.startswith("-")]
    return notebook_path.parent / args[0] if args else None


def kernel_manager() -> AsyncKernelManager:
    """An async kernel manager whose kernel runs ``sys.executable -m ipykernel_launcher``."""
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import AsyncKernelManager

    folder = Path(tempfile.mkdtemp(prefix="jupyter-agent-kernelspec-")) / _KERNEL_NAME
    folder.mkdir(parents=True)
    spec = {"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": "Python (jupyter-agent)", "language": "python"}
    (folder / "kernel.json").write_text(json.dumps(spec), encoding="utf-8")
    ksm = KernelSpecManager(kernel_dirs=[str(folder.parent)])
    # IPC sockets: the kernel is local, and TCP without encryption makes ipykernel warn loudly.
    return AsyncKernelManager(kernel_name=_KERNEL_NAME, kernel_spec_manager=ksm, transport="ipc",
                              ip=str(folder.parent / "kernel"))


def execute_notebook(nb: NotebookNode, cwd: str | Path, *, env: dict[str, str] | None = None,
                     timeout: int = 600, allow_errors: bool = False) -> NotebookNode:
    """Execute ``nb`` in place (outputs filled in) with the working directory ``cwd``.

    ``env`` is added to this process's environment for the kernel; ``JUPYTER_AGENT_HOME``
    defaults to a new empty directory.

    Raises:
        nbclient.exceptions.CellExecutionError: a cell failed (unless ``allow_errors``).
    """
    require_notebook_tools()
    from nbclient import NotebookClient

    kernel_env = {**os.environ, **(env or {})}
    # The kernel imports this very jupyter_agent, installed or not (a source checkout).
    root = str(Path(__file__).resolve().parents[2])
    kernel_env["PYTHONPATH"] = os.pathsep.join(
        p for p in (root, kernel_env.get("PYTHONPATH")) if p)
    kernel_env.setdefault("JUPYTER_AGENT_HOME", tempfile.mkdtemp(prefix="jupyter-agent-home-"))
    kernel_env.pop("JPY_SESSION_NAME", None)  # the notebook names its cassette itself
    client = NotebookClient(nb, km=kernel_manager(), timeout=timeout, allow_errors=allow_errors,
                            record_timing=False, resources={"metadata": {"path": str(cwd)}})
    client.execute(cleanup_kc=True, env=kernel_env)
    return nb


def run_outputs(nb: NotebookNode) -> list[tuple[int, JSONValue]]:
    """Every run payload (``application/vnd.jupyter-agent.run+json``) with its cell index."""
    from ..base.events import RUN_MIME_TYPE

    found: list[tuple[int, JSONValue]] = []
    for i, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            data = out.get("data") or {}
            if RUN_MIME_TYPE in data:
                payload = data[RUN_MIME_TYPE]
                found.append((i, json.loads(payload) if isinstance(payload, str) else payload))
    return found


def scrub_folder(nb: NotebookNode, folder: str | Path) -> None:
    """Replace the absolute path of ``folder`` (where the notebook ran) by ``.`` in every
    output, so a saved notebook holds no path of the machine that executed it."""
    import nbformat

    root = json.dumps(str(Path(folder).resolve()))[1:-1]  # as it appears inside JSON
    for cell in nb.cells:
        if cell.get("cell_type") != "code" or not cell.get("outputs"):
            continue
        text = json.dumps(cell.outputs, ensure_ascii=False)
        if root in text:
            cell.outputs = [nbformat.from_dict(o) for o in json.loads(text.replace(root, "."))]
