"""What a card shows of a notebook tool's result, as events: figures, proposed cells.

The tool runners call :func:`call_events` after each call; the events follow the call's
``tool_returned`` in the run's stream, so the live card, the store and the saved output all
see them. Figures are capped here (count and size), so a run that draws a hundred large plots
cannot make the saved notebook grow without bound: the model still reads every description.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from ...base.events import BaseEvent, CellProposed, ToolFigures

if TYPE_CHECKING:
    from .run_python import PythonRun

__all__ = ["MAX_CARD_FIGURES", "MAX_FIGURE_CHARS", "call_events", "figure_images"]

MAX_CARD_FIGURES = 4
"""Figures of one call shown on its card (the others are described only)."""
MAX_FIGURE_CHARS = 400_000
"""Base64 characters of one figure kept for the card (about 300 KB of PNG)."""


def _kept(value: PythonRun) -> list[dict[str, Any]]:
    out = []
    for i, fig in enumerate(value.figures):
        png = fig.png_base64 if i < MAX_CARD_FIGURES and len(fig.png_base64) <= MAX_FIGURE_CHARS \
            else ""
        out.append({"index": fig.index, "png": png, "width": fig.width, "height": fig.height,
                    "description": fig.description})
    return out


def _loaded(module: str, name: str) -> type[Any] | None:
    """The class ``name`` of this package's ``module`` if that module is loaded, else ``None``.

    A value cannot be an instance of a class that was never loaded, so the runners check a
    result against the notebook tools' classes without importing them: a run without
    notebook tools never loads them (docs/architecture.md, "The first run").
    """
    cls = getattr(sys.modules.get(f"{__package__}.{module}"), name, None)
    return cls if isinstance(cls, type) else None


def _python_run(value: Any) -> PythonRun | None:
    if not isinstance(value, BaseModel):  # most results: no lookup at all (once per call)
        return None
    cls = _loaded("run_python", "PythonRun")
    return value if cls is not None and isinstance(value, cls) else None


def call_events(call_id: str, value: Any) -> list[BaseEvent]:
    """The events a card needs for one call's ``value``: ``tool_figures`` for a
    ``run_python`` that drew, ``cell_proposed`` for an ``insert_cell``, ``workspace_changed``
    for a sandboxed command (``bash``, ``sandbox_python``) that changed the workspace; else
    none."""
    record = getattr(value, "record", None)  # bash's ChangedText, sandbox_python's result
    if record is not None:
        from ...sandbox import Record, changes_event  # only for a sandboxed command's result

        if isinstance(record, Record):
            changed = changes_event(call_id, record)
            return [changed] if changed is not None else []
    if not isinstance(value, BaseModel):  # both kinds are models; most results are not
        return []
    run = _python_run(value)
    if run is not None and run.figures:
        return [ToolFigures(call_id=call_id, figures=_kept(run))]
    proposal = _loaded("proposals", "CellProposal")
    if proposal is not None and isinstance(value, proposal):
        return [CellProposed(call_id=call_id, proposal=value.model_dump(mode="json"))]
    return []


def figure_images(value: Any) -> list[str]:
    """The PNGs (base64) of the figures a ``run_python`` call drew and a card keeps: what a
    model that accepts images is sent."""
    run = _python_run(value)
    if run is None:
        return []
    return [f["png"] for f in _kept(run) if f["png"]]
