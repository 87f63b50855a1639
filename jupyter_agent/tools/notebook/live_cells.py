"""The live notebook: the cells the front end pushes to the kernel before each execution.

A running cell keeps the kernel's shell channel busy, so the kernel cannot ask the front end
for the notebook and wait for the answer. Shell messages are handled in order, though: the
JupyterLab extension (``labextension/src/liveCells.ts``) sends the notebook's cells on a comm
*before* each execute request it sends, so by the time a cell runs the kernel holds the
notebook as the user sees it, unsaved edits included (see ``docs/notebook-tools.md``).

At ``%load_ext jupyter_agent`` the kernel registers the comm target
(:mod:`jupyter_agent.edge.live_comm`, which hands each message to :meth:`LiveStore.receive`). Each
snapshot is validated (strict pydantic types), capped (cells, source and output lengths) and
kept per client session (the ``session`` of the message header, one per front-end kernel
connection), so the snapshot of another notebook attached to the same kernel is never read as
this one's: the tools read the snapshot of the client whose request is running. Without the
extension (classic Notebook, nbclient, VS Code) nothing is pushed and the tools read the file.
"""

from __future__ import annotations

import logging
import re
import threading
from collections import OrderedDict
from pathlib import PurePosixPath
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ...base.jsontypes import JSONObject
from ...base.state import STATE
from ._text import one_line

__all__ = ["LiveCell", "LiveOutput", "LiveSnapshot", "LiveStore", "LIVE",
           "current_client"]

log = logging.getLogger(__name__)


MAX_CELLS = 2_000
"""A snapshot with more cells is refused (the tools read the file instead)."""
MAX_SOURCE_CHARS = 20_000
"""A longer source is cut (the extension cuts at the same length before sending)."""
MAX_TOTAL_CHARS = 2_000_000
"""A snapshot whose sources add up to more (after cutting) is refused."""
MAX_OUTPUTS = 20
"""Output summaries kept per cell."""
MAX_TEXT_CHARS = 300
"""Characters kept of an output's text head, an error value, a stream's text."""
MAX_CLIENTS = 8
"""Client sessions whose latest snapshot is kept (the oldest is dropped)."""

_MIME = re.compile(r"[\w.+-]{1,60}/[\w.+-]{1,60}")


class _Strict(BaseModel):
    # Strict: a number where a string belongs is refused, not coerced. Unknown keys are ignored
    # so a newer extension can add fields.
    model_config = ConfigDict(strict=True, extra="ignore")


class LiveOutput(_Strict):
    """A short summary of one output, as the extension sends it (never the full data)."""

    output_type: Literal["stream", "execute_result", "display_data", "error"]
    name: str = Field(default="", max_length=40)
    text: str = ""
    """The head of a stream's text or of ``text/plain``."""
    mimes: list[str] = Field(default_factory=list, max_length=20)
    ename: str = Field(default="", max_length=200)
    evalue: str = ""


class LiveCell(_Strict):
    """One cell of the live notebook."""

    kind: Literal["code", "markdown", "raw"]
    source: str
    execution_count: int | None = None
    outputs: list[LiveOutput] = Field(default_factory=list)


class LiveSnapshot(_Strict):
    """The notebook as the front end holds it."""

    version: Literal[1]
    path: str = Field(default="", max_length=4096)
    cells: list[LiveCell]


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"… [{len(text) - limit:,} chars cut]"


def _as_nbformat(out: LiveOutput) -> JSONObject:
    """The summary as an nbformat-like output, for the file reader's one-line renderer."""
    text = _cut(out.text, MAX_TEXT_CHARS)
    if out.output_type == "stream":
        return {"output_type": "stream", "name": out.name or "stream", "text": text}
    if out.output_type == "error":
        return {"output_type": "error", "ename": out.ename,
                "evalue": _cut(out.evalue, MAX_TEXT_CHARS)}
    # Only MIME-type-shaped names: a name is shown to the model, so no markup rides on it.
    data: JSONObject = {m: "" for m in out.mimes[:20] if _MIME.fullmatch(m)}
    if text:
        data["text/plain"] = text
    return {"output_type": out.output_type, "data": data}


def parse(data: object) -> tuple[LiveSnapshot | None, str]:
    """The snapshot in ``data``, capped; or ``None`` and a one-line reason it was refused."""
    if not isinstance(data, dict):
        return None, "live cells refused: the message is not an object"
    cells = data.get("cells")
    if isinstance(cells, list) and len(cells) > MAX_CELLS:
        return None, f"live cells refused: {len(cells):,} cells (at most {MAX_CELLS:,})"
    try:
        snap = LiveSnapshot.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors()
        if not errors:
            return None, one_line(f"live cells refused: {exc}", 200)
        where = ".".join(str(p) for p in errors[0]["loc"])
        return None, one_line(f"live cells refused: {where}: {errors[0]['msg']}", 200)
    total = 0
    for cell in snap.cells:
        cell.source = _cut(cell.source, MAX_SOURCE_CHARS)
        cell.outputs = cell.outputs[:MAX_OUTPUTS]
        total += len(cell.source)
    if total > MAX_TOTAL_CHARS:
        return None, f"live cells refused: {total:,} characters of source " \
                     f"(at most {MAX_TOTAL_CHARS:,})"
    return snap, ""


class LiveStore:
    """The latest snapshot of each client session (a few at most), thread-safe."""

    def __init__(self) -> None:
        """An empty store."""
        self._lock = threading.Lock()
        self._snapshots: OrderedDict[str, LiveSnapshot] = OrderedDict()

    def receive(self, client: str, data: object) -> str:
        """Keep ``data`` as ``client``'s notebook; return "" or why it was refused.

        A refused snapshot also drops the client's previous one: it no longer shows the
        notebook, and the file is the better source.
        """
        snap, error = parse(data)
        with self._lock:
            self._snapshots.pop(client, None)
            if snap is not None and client:
                self._snapshots[client] = snap
                while len(self._snapshots) > MAX_CLIENTS:
                    self._snapshots.popitem(last=False)
        return error

    def get(self, client: str | None) -> LiveSnapshot | None:
        """``client``'s latest snapshot, if it sent one."""
        if not client:
            return None
        with self._lock:
            return self._snapshots.get(client)

    def clear(self) -> None:
        """Forget every snapshot."""
        with self._lock:
            self._snapshots.clear()


LIVE: LiveStore = STATE.slot("tools.live_cells", LiveStore)


def origin_of(snap: LiveSnapshot) -> str:
    """Where the cells came from, for the tools' header."""
    name = one_line(PurePosixPath(snap.path).name, 120) if snap.path else ""
    return f"live notebook {name} (unsaved edits included)".replace("  ", " ")


def output_dicts(cell: LiveCell) -> list[JSONObject]:
    """The cell's output summaries as nbformat-like dicts."""
    return [_as_nbformat(o) for o in cell.outputs]


def current_client(shell: object) -> str | None:
    """The client session of the request the kernel is handling (None outside a kernel)."""
    kernel = getattr(shell, "kernel", None)
    get_parent = getattr(kernel, "get_parent", None)
    if get_parent is None:
        return None
    try:
        parent = get_parent("shell") or {}
        session = (parent.get("header") or {}).get("session")
    except Exception:  # noqa: BLE001 - a kernel without a parent: no live notebook
        return None
    return session if isinstance(session, str) and session else None
