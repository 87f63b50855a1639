"""``read_notebook`` and ``read_cells``: the notebook's cells as the agent reads them.

The cells come from the live front end when it pushed them (the JupyterLab extension sends the
notebook before each execution, unsaved edits included: :mod:`.live`), else from the saved
notebook file when the kernel knows it (a Jupyter server puts the notebook's path in
``JPY_SESSION_NAME``), else from IPython's history: the cells this kernel executed (``In``) and
their values (``Out``). The header names the source. Sources have secret-looking assignments
masked and every text passes through :func:`jupyter_agent.base.secrets.mask`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from enum import Enum
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from ...base.events import RUN_MIME_TYPE
from ...base.jsontypes import as_object, list_field, object_field
from ...base.secrets import mask
from ._text import cap, one_line, redact_source, safe_repr
from .live_cells import LIVE, LiveSnapshot, current_client, origin_of, output_dicts
from .variables import Shell, VariableError

__all__ = ["Cell", "NotebookCells", "load_cells", "notebook_path", "outline", "cells_text"]

MAX_NOTEBOOK_BYTES = 50_000_000


class Cell(BaseModel):
    """One cell: 1-based index, kind, source and one line per output."""

    index: int
    kind: str
    source: str
    execution_count: int | None = None
    outputs: list[str] = Field(default_factory=list)


class NotebookCells(BaseModel):
    """The cells and where they came from."""

    origin: str
    """``live notebook <name> (unsaved edits included)``, ``file <name> (as last saved)`` or
    ``kernel history (...)``."""
    cells: list[Cell]


def notebook_path() -> Path | None:
    """The notebook file of this kernel (``JPY_SESSION_NAME``), when it exists."""
    name = os.environ.get("JPY_SESSION_NAME", "")
    if not name.endswith(".ipynb"):
        return None
    candidates = [Path(name), Path.cwd() / name, Path.cwd() / Path(name).name]
    return next((p for p in candidates if p.is_file()), None)


def _joined(value: object) -> str:
    """nbformat's multi-line text: a string, or a list of lines (each made a string: a
    malformed file's numbers or nulls must not end the read)."""
    return "".join(map(str, value)) if isinstance(value, list) else str(value)


def _output_line(out: Mapping[str, object]) -> str:
    kind = out.get("output_type", "")
    if kind == "stream":
        text = _joined(out.get("text", ""))
        lines = text.count("\n") + (0 if text.endswith("\n") else 1)
        return f"{out.get('name', 'stream')}: {one_line(text, 160)}" + (
            f" ({lines} lines)" if lines > 1 else "")
    if kind == "error":
        return f"error: {out.get('ename', '')}: {one_line(str(out.get('evalue', '')), 200)}"
    data = object_field(out, "data")
    if RUN_MIME_TYPE in data:
        plain = _joined(data.get("text/plain", ""))
        return f"[jupyter-agent run] {one_line(plain, 160)}"
    plain = _joined(data.get("text/plain", ""))
    rich = [k for k in data if k != "text/plain"]
    label = "result" if kind == "execute_result" else "display"
    text = f"{label}: {one_line(plain, 200)}" if plain else label
    return text + (f" [{', '.join(rich)}]" if rich else "")


def _from_file(path: Path) -> NotebookCells:
    if path.stat().st_size > MAX_NOTEBOOK_BYTES:
        raise VariableError(f"The notebook file is larger than {MAX_NOTEBOOK_BYTES:,} bytes.")
    try:
        nb = as_object(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError) as exc:
        raise VariableError(f"Could not read the notebook {path.name}: {exc}") from None
    if nb is None:
        raise VariableError(f"Could not read the notebook {path.name}: not a JSON object")
    cells = []
    for i, item in enumerate(list_field(nb, "cells"), start=1):
        c = as_object(item) or {}
        src = _joined(c.get("source", ""))
        outputs = [_output_line(o) for o in list_field(c, "outputs") if isinstance(o, dict)]
        count = c.get("execution_count")
        cells.append(Cell(index=i, kind=str(c.get("cell_type", "code")), source=src,
                          execution_count=count if isinstance(count, int) else None,
                          outputs=outputs))
    return NotebookCells(origin=f"file {path.name} (as last saved)", cells=cells)


def _from_live(snap: LiveSnapshot) -> NotebookCells:
    cells = [Cell(index=i, kind=c.kind, source=c.source, execution_count=c.execution_count,
                  outputs=[_output_line(o) for o in output_dicts(c)])
             for i, c in enumerate(snap.cells, start=1)]
    return NotebookCells(origin=origin_of(snap), cells=cells)


def _from_history(shell: Shell | None) -> NotebookCells:
    if shell is None:
        raise VariableError("No notebook file is known (JPY_SESSION_NAME is not set) and "
                            "no IPython shell is running.")
    history = getattr(shell, "history_manager", None)
    inputs = list(getattr(history, "input_hist_raw", []) or [])
    out_cache = shell.user_ns.get("Out")
    outputs = out_cache if isinstance(out_cache, dict) else {}
    cells: list[Cell] = []
    for count, src in enumerate(inputs):
        if count == 0 or not str(src).strip():
            continue
        out = [f"result: {one_line(safe_repr(outputs[count], 300), 200)}"] \
            if count in outputs else []
        cells.append(Cell(index=len(cells) + 1, kind="code", source=str(src),
                          execution_count=count, outputs=out))
    return NotebookCells(origin="kernel history (cells executed in this kernel)", cells=cells)


class _Client(Enum):
    CURRENT = "current"
    """The front end whose request the kernel is handling."""


def load_cells(path: str | os.PathLike[str] | None = None, shell: Shell | None = None,
               client: str | None | Literal[_Client.CURRENT] = _Client.CURRENT
               ) -> NotebookCells:
    """The notebook's cells: from ``path``, else the live notebook of ``client`` (default:
    the front end whose request the kernel is handling), else the kernel's notebook file,
    else history."""
    if path is None:
        snap = LIVE.get(current_client(shell) if client is _Client.CURRENT else client)
        if snap is not None:
            return _from_live(snap)
    file = Path(path) if path is not None else notebook_path()
    if file is not None:
        return _from_file(file)
    return _from_history(shell)


def _source(cell: Cell, limit: int) -> str:
    return cap(redact_source(cell.source), limit)


def _cell_text(cell: Cell, src_limit: int, outputs: int) -> str:
    count = f", executed [{cell.execution_count}]" if cell.execution_count else ""
    lines = [f"--- cell {cell.index} ({cell.kind}{count}) ---", _source(cell, src_limit)]
    for o in cell.outputs[:outputs]:
        lines.append(f"  → {o}")
    if len(cell.outputs) > outputs:
        lines.append(f"  → … {len(cell.outputs) - outputs} more outputs")
    return "\n".join(lines)


def outline(nb: NotebookCells, max_chars: int = 8000) -> str:
    """Every cell shortly (source head, output lines) within ``max_chars``."""
    header = f"Notebook from {nb.origin}: {len(nb.cells)} cells. Read one in full with read_cells."
    if not nb.cells:
        return header
    for src_limit, outs in ((400, 3), (200, 2), (100, 1), (60, 1)):
        body = "\n".join(_cell_text(c, src_limit, outs) for c in nb.cells)
        if len(body) + len(header) < max_chars:
            return mask(f"{header}\n{body}")
    # Still too long: the first and the last cells, which frame the work.
    keep = max(1, (max_chars - len(header)) // 200)
    first, last = nb.cells[: keep // 2], nb.cells[-(keep - keep // 2):]
    skipped = len(nb.cells) - len(first) - len(last)
    body = "\n".join([*(_cell_text(c, 60, 1) for c in first),
                      f"… {skipped} cells not shown (read_cells reads any range) …",
                      *(_cell_text(c, 60, 1) for c in last)])
    return mask(cap(f"{header}\n{body}", max_chars))


def cells_text(nb: NotebookCells, start: int, end: int | None = None,
               max_chars: int = 12000) -> str:
    """Cells ``start``..``end`` (1-based, inclusive) in full, within ``max_chars``."""
    n = len(nb.cells)
    end = start if end is None else end
    if n == 0:
        return f"Notebook from {nb.origin}: no cells."
    if not (1 <= start <= n) or end < start:
        raise VariableError(f"No cells {start}..{end}: the notebook has cells 1..{n}.")
    picked = nb.cells[start - 1: min(end, n)]
    per_cell = max(500, max_chars // len(picked))
    body = "\n".join(_cell_text(c, per_cell, 20) for c in picked)
    more = f"\n(the notebook has {n} cells)" if min(end, n) < n else ""
    return mask(f"Cells from {nb.origin}:\n" + cap(body, max_chars) + more)
