"""The results table (the input columns plus one column per outcome field) and the
comparison of models (accuracy, cost, latency percentiles, tokens), with an optional chart.

A pandas input gives a pandas table (its index kept, repeated once per model), a polars input
a polars table; a list gives a pandas table when pandas is installed, else a list of dicts.
An input column that has the name of a result column is kept as ``input_<name>``.
"""

from __future__ import annotations

import io
import math
from collections.abc import Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, TypeVar, Union, cast

from ..base.jsontypes import JSONObject, float_field
from .inputs import VALUE_FIELD, Inputs
from .item import FINISHED, OUTCOME_FIELDS, Outcome
from .spec import Item

if TYPE_CHECKING:
    import pandas as pd
    import polars as pl
    from matplotlib.axes import Axes

__all__ = ["Table", "results_table", "board_rows", "as_table", "chart_png", "percentile"]

_K = TypeVar("_K", bound=Hashable)
"""The column names of a table: text, or a DataFrame's (any hashable)."""

Table = Union["pd.DataFrame", "pl.DataFrame", Sequence[Mapping[Hashable, object]]]
"""The results: a pandas table, a polars table (for a polars input), or the rows as dicts
(no pandas installed)."""


def _columns(outcomes: Sequence[Outcome], items: list[Item], models: list[str],
             scores: list[float | None] | None,
             extra: dict[str, list[object]] | None = None) -> dict[str, list[object]]:
    cols: dict[str, list[object]] = {}
    if len(models) > 1:
        cols["model"] = [i.model for i in items]
    for f in OUTCOME_FIELDS:
        cols[f] = [o.get(f) for o in outcomes]
    if scores is not None:
        cols["score"] = list(scores)
    for name, values in (extra or {}).items():  # typed fields, judge columns
        cols[name if name not in cols else f"output_{name}"] = values
    return cols


def _renamed(name: Hashable, taken: set[str]) -> Hashable:
    return f"input_{name}" if isinstance(name, str) and name in taken else name


def results_table(inputs: Inputs, items: list[Item], outcomes: Sequence[Outcome],
                  models: list[str], scores: list[float | None] | None = None,
                  extra: dict[str, list[object]] | None = None) -> Table:
    """The results, one row per item (row by row, models in order); ``extra``: more columns
    (a typed batch's fields and ``errors``, the judge's)."""
    cols = _columns(outcomes, items, models, scores, extra)
    taken = set(cols)
    rows = [i.row for i in items]
    source = inputs.source
    if inputs.kind == "pandas":
        # load_inputs calls a pandas DataFrame "pandas"; pandas is no dependency of ours, so
        # it is not imported here (the frame's own methods build the result).
        frame: pd.DataFrame = cast("pd.DataFrame", source).iloc[rows].copy()
        frame.columns = [_renamed(c, taken) for c in frame.columns]
        for name, values in cols.items():
            # pandas takes a list of any values (and infers the dtype); its stubs do not.
            frame[name] = values  # type: ignore[assignment]
        return frame
    if inputs.kind == "polars":
        # The frame's own class builds the new columns: polars is there (the input is a polars
        # frame) but is no dependency of this package, so it is not imported by name.
        polars_frame = cast("pl.DataFrame", source)  # what load_inputs calls "polars"
        frame_pl = polars_frame[rows] if rows else polars_frame.clear()
        frame_pl = frame_pl.rename({c: str(_renamed(c, taken)) for c in frame_pl.columns
                                    if c in taken})
        return frame_pl.hstack(type(frame_pl)(cols, strict=False))
    records: list[dict[Hashable, object]] = []
    for n, item in enumerate(items):
        src = inputs.rows[item.row]
        rec = {_renamed(k, taken): v for k, v in src.items()}
        if inputs.kind == "values":
            rec = {_renamed(VALUE_FIELD, taken): src[VALUE_FIELD]}
        rec.update({name: values[n] for name, values in cols.items()})
        records.append(rec)
    return as_table(records, columns=None if records else [VALUE_FIELD, *cols])


def as_table(records: Sequence[Mapping[_K, object]], columns: list[str] | None = None
             ) -> pd.DataFrame | Sequence[Mapping[_K, object]]:
    """A pandas DataFrame of ``records`` when pandas is installed, else the list itself."""
    try:
        import pandas as pd
    except ImportError:
        return records
    table: pd.DataFrame = pd.DataFrame.from_records(records, columns=columns)
    return table


def percentile(values: list[float], q: float) -> float | None:
    """The ``q``-th percentile (0-100) by linear interpolation; ``None`` for no values."""
    if not values:
        return None
    xs = sorted(values)
    k = (len(xs) - 1) * q / 100
    lo, hi = math.floor(k), math.ceil(k)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def board_rows(items: list[Item], outcomes: Sequence[Outcome], models: list[str],
               scores: list[float | None] | None,
               unpriced: list[str] | None = None) -> list[JSONObject]:
    """One row per model: items, done, failed, accuracy (failures count as wrong), cost
    (``None`` for a model in ``unpriced``: unknown is not 0), p50/p95 seconds of the answered
    items, tokens."""
    out = []
    for model in models:
        mine = [(o, s) for i, o, s in zip(items, outcomes, scores or [None] * len(items))
                if i.model == model]
        answered = [o for o, _ in mine if o["status"] in FINISHED]
        seconds = [float(o["seconds"] or 0.0) for o in answered]
        row: JSONObject = {
            "model": model, "items": len(mine), "done": len(answered),
            "failed": sum(1 for o, _ in mine if o["status"] in ("error", "aborted")),
            "waiting": sum(1 for o, _ in mine if o["status"] in ("ask", "skipped")),
        }
        if scores is not None:
            row["accuracy"] = (sum(s or 0.0 for _, s in mine) / len(mine)) if mine else None
        row.update({
            "cost": None if model in (unpriced or ()) else
            sum(float(o["cost"] or 0.0) for o, _ in mine),
            "p50_seconds": percentile(seconds, 50), "p95_seconds": percentile(seconds, 95),
            "input_tokens": sum(int(o["input_tokens"] or 0) for o, _ in mine),
            "output_tokens": sum(int(o["output_tokens"] or 0) for o, _ in mine),
        })
        out.append(row)
    return out


_INK = "#8a8a8a"
"""Text and axes: mid-grey, legible on a white and on a near-black background."""
_BARS = ("#3b8fd9", "#e0803a")
"""Bar colours of middle lightness (blue, orange): visible on both themes."""


def _theme_neutral(ax: Axes) -> None:
    """Axes, ticks and frame in :data:`_INK` on a transparent background."""
    ax.set_facecolor("none")
    ax.tick_params(colors=_INK)
    for spine in ax.spines.values():
        spine.set_color(_INK)


def _cost(row: JSONObject) -> float | None:
    """A board row's cost, ``None`` when unknown (no price)."""
    cost = row.get("cost")
    return float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) else None


def chart_png(board: list[JSONObject]) -> bytes | None:
    """A PNG bar chart of the comparison (accuracy, cost, p50/p95 seconds), or ``None`` when
    matplotlib is not installed or there is nothing to draw. No pyplot state is touched.

    The background is transparent and text, axes and bars use mid-tone colours, so the chart
    reads on a light and a dark notebook theme alike. A model without a price gets no cost
    bar but the words "unknown: set a price in the profile" (never a bar of 0)."""
    if not board:
        return None
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        return None
    names = [str(r["model"]) for r in board]
    panels: list[tuple[str, list[float | None], list[float] | None]] = []
    if "accuracy" in board[0]:
        panels.append(("Accuracy", [float_field(r, "accuracy") for r in board], None))
    panels.append(("Cost", [_cost(r) for r in board], None))
    panels.append(("Seconds per item (p50, p95)", [float_field(r, "p50_seconds") for r in board],
                   [float_field(r, "p95_seconds") for r in board]))
    fig = Figure(figsize=(3.2 * len(panels), 2.8), dpi=100)
    fig.patch.set_alpha(0.0)
    FigureCanvasAgg(fig)
    for n, (title, values, second) in enumerate(panels, start=1):
        ax = fig.add_subplot(1, len(panels), n)
        _theme_neutral(ax)
        xs = range(len(names))
        width = 0.4 if second else 0.6
        ax.bar([x - (width / 2 if second else 0) for x in xs], [v or 0.0 for v in values],
               width=width, label="p50" if second else None, color=_BARS[0])
        if second:
            ax.bar([x + width / 2 for x in xs], second, width=width, label="p95",
                   color=_BARS[1])
            ax.legend(fontsize=7, frameon=False, labelcolor=_INK)
        for x, v in zip(xs, values):
            if v is None:  # no price known: say so where the bar would be
                ax.text(x, 0.5, "unknown:\nset a price\nin the profile", ha="center",
                        va="center", fontsize=7, color=_INK, transform=ax.get_xaxis_transform())
        ax.set_xticks(list(xs), names, rotation=20, fontsize=8)
        ax.set_title(title, fontsize=9, color=_INK)
        ax.tick_params(axis="y", labelsize=7)
        if title == "Accuracy":
            ax.set_ylim(0, 1)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", transparent=True)
    return buf.getvalue()
