"""What a card shows of a notebook tool's result, as events: figures, proposed cells.

The tool runners call :func:`call_events` after each call; the events follow the call's
``tool_returned`` in the run's stream, so the live card, the store and the saved output all
see them. Figures are capped here (count and size), so a run that draws a hundred large plots
cannot make the saved notebook grow without bound: the model still reads every description.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from pydantic import BaseModel

from ...base.events import BaseEvent, CellProposed, ToolFigures
from ...base.jsontypes import JSONObject

if TYPE_CHECKING:
    from .run_python import PythonRun

__all__ = ["MAX_CARD_FIGURES", "MAX_FIGURE_CHARS", "call_events", "figure_images"]

MAX_CARD_FIGURES = 4
"""Figures of one call shown on its card (the others are described only)."""
MAX_FIGURE_CHARS = 400_000
"""Base64 characters of one figure kept for the card (about 300 KB of PNG)."""


def _kept_pngs(value: PythonRun) -> list[str]:
    """Each figure's PNG as the card keeps it: ``""`` past the count or the size cap."""
    return [fig.png_base64 if i < MAX_CARD_FIGURES and len(fig.png_base64) <= MAX_FIGURE_CHARS
            else "" for i, fig in enumerate(value.figures)]


def _kept(value: PythonRun) -> list[JSONObject]:
    return [{"index": fig.index, "png": png, "width": fig.width, "height": fig.height,
             "description": fig.description}
            for fig, png in zip(value.figures, _kept_pngs(value))]


def _loaded(module: str) -> bool:
    """Whether this package's ``module`` is loaded.

    A value cannot be an instance of a class that was never loaded, so the runners check a
    result against the notebook tools' classes only once their module is loaded (importing it
    then costs a lookup): a run without notebook tools never loads them
    (docs/architecture.md, "The first run").
    """
    return f"{__package__}.{module}" in sys.modules


def _python_run(value: object) -> PythonRun | None:
    if not isinstance(value, BaseModel) or not _loaded("run_python"):  # most results
        return None
    from .run_python import PythonRun  # loaded: see _loaded

    return value if isinstance(value, PythonRun) else None


def call_events(call_id: str, value: object) -> list[BaseEvent]:
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
    if not _loaded("proposals"):
        return []
    from .proposals import CellProposal  # loaded: see _loaded

    if isinstance(value, CellProposal):
        return [CellProposed(call_id=call_id, proposal=value.model_dump(mode="json"))]
    return []


def figure_images(value: object) -> list[str]:
    """The PNGs (base64) of the figures a ``run_python`` call drew and a card keeps: what a
    model that accepts images is sent."""
    run = _python_run(value)
    if run is None:
        return []
    return [png for png in _kept_pngs(run) if png]
