"""polars DataFrames, Series and LazyFrames as :class:`FrameInfo`.

Null counts are exact and free in polars (Arrow keeps them per chunk). Statistics come from a
sample of :data:`SAMPLE_ROWS` rows on long frames, computed by polars itself, so numpy is not
needed. A LazyFrame is never collected: only its schema is shown.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from typing_extensions import TypeIs

from ._frame_text import (
    SAMPLE_RUN,
    SHOW_COLUMNS,
    ColumnInfo,
    FrameInfo,
    fmt_bytes,
    render_frame,
    sample_note,
    sample_runs,
    shown_positions,
)
from ._modules import loaded
from ._text import cell_text as _cell
from ._text import fmt_num, one_line

if TYPE_CHECKING:
    import polars

__all__ = ["summarize_polars", "polars_line"]


def _is_lazy(obj: object) -> TypeIs[polars.LazyFrame]:
    return isinstance(obj, loaded("polars").LazyFrame)


def _is_series(obj: object) -> TypeIs[polars.Series]:
    return isinstance(obj, loaded("polars").Series)


def _column(s: polars.Series, sample: polars.Series, exact: bool) -> ColumnInfo:
    pl = loaded("polars")

    dtype = s.dtype
    info = ColumnInfo(name=one_line(s.name, 40), dtype=str(dtype), nulls=f"{s.null_count():,}")
    st = info.stats
    try:
        if dtype == pl.Boolean:
            st["mean"] = fmt_num(sample.cast(pl.Float64).mean())
        elif dtype.is_numeric():
            values = sample.drop_nulls()
            if dtype.is_float():
                values = values.filter(values.is_not_nan())
            if len(values):
                st.update(min=fmt_num(values.min()), p50=fmt_num(values.median()),
                          max=fmt_num(values.max()), mean=fmt_num(values.mean()),
                          std=fmt_num(values.std()))
        elif dtype.is_temporal():
            st.update(min=str(sample.min()), max=str(sample.max()))
        elif dtype in (pl.String, pl.Categorical, pl.Enum) or isinstance(
                dtype, (pl.Categorical, pl.Enum)):
            counts = sample.drop_nulls().value_counts(sort=True)
            st["distinct"] = f"{counts.height:,}" + ("" if exact else "+")
            if counts.height:
                value, count = counts.row(0)
                st["top"] = f"{_cell(value)} ({count:,}×)"
    except Exception:  # an exotic dtype polars cannot aggregate: no statistics, no failure
        pass
    return info


def summarize_polars(obj: polars.DataFrame | polars.Series | polars.LazyFrame, *, rows: int = 3,
                     columns: list[str] | None = None, max_chars: int = 3800) -> str:
    """The summary text of a polars DataFrame, Series or LazyFrame."""
    pl = loaded("polars")

    if _is_lazy(obj):
        schema = obj.collect_schema()
        names = list(schema.names())
        info = FrameInfo(kind="polars.LazyFrame (not collected)", rows=0, cols=len(names))
        info.extra.append("schema: " + ", ".join(
            f"{one_line(n, 30)}: {schema[n]}" for n in names[:SHOW_COLUMNS]))
        if len(names) > SHOW_COLUMNS:
            info.extra.append(f"… {len(names) - SHOW_COLUMNS:,} more columns")
        text = render_frame(info, max_chars=max_chars)
        return text.replace("0 rows", "unknown rows", 1)
    is_series = _is_series(obj)
    frame = obj.to_frame() if _is_series(obj) else obj
    n_rows, n_cols = frame.height, frame.width
    names = frame.columns
    if columns:
        missing = [c for c in columns if c not in names]
        if missing:
            raise KeyError(f"No column {missing[0]!r}. Columns: {', '.join(names[:30])}"
                           + (" …" if n_cols > 30 else ""))
        picked = list(dict.fromkeys(columns))[:SHOW_COLUMNS]
    else:
        picked = [names[i] for i in shown_positions(n_cols)]
    shown = frame.select(picked)
    kind = "polars.Series" + (f" {obj.name!r}" if obj.name else "") if _is_series(obj) \
        else "polars.DataFrame"
    info = FrameInfo(kind=kind, rows=n_rows, cols=None if is_series else n_cols,
                     memory=fmt_bytes(frame.estimated_size()) + " in memory")
    if not is_series and n_cols > len(picked):
        counts: dict[str, int] = {}
        for dt in frame.schema.values():
            counts[str(dt)] = counts.get(str(dt), 0) + 1
        info.dtype_counts = ", ".join(f"{d} ×{c:,}" for d, c in
                                      sorted(counts.items(), key=lambda kv: -kv[1]))
        info.hidden_columns = n_cols - len(picked)
    starts = sample_runs(n_rows)
    exact = starts is None
    # Zero-copy slices, one per run: no numpy needed, memory read in order.
    sample = shown if starts is None else pl.concat([shown.slice(s, SAMPLE_RUN) for s in starts],
                                           rechunk=True)
    info.columns = [_column(shown[c], sample[c], exact) for c in picked]
    if not exact:
        info.notes.append(sample_note(sample.height, n_rows) + "; nulls are exact.")
    rows = max(0, min(rows, 20))
    info.head_names = [one_line(c, 30) for c in picked]
    if n_rows > 2 * rows:
        info.head = [[_cell(v) for v in r] for r in shown.head(rows).rows()]
        info.tail = [[_cell(v) for v in r] for r in shown.tail(rows).rows()]
    else:
        info.head = [[_cell(v) for v in r] for r in shown.rows()]
    return render_frame(info, max_chars=max_chars, rows=max(rows, len(info.head)))


def polars_line(obj: polars.DataFrame | polars.Series | polars.LazyFrame) -> str:
    """One line: shape and the first dtypes (a LazyFrame: its columns, not collected)."""
    if _is_series(obj):
        return f"polars Series {obj.name!r}: {len(obj):,} values, dtype {obj.dtype}"
    if _is_lazy(obj):
        schema = obj.collect_schema()
        return f"polars LazyFrame (not collected): {len(schema):,} columns"
    cols = ", ".join(f"{one_line(c, 20)}:{d}" for c, d in list(obj.schema.items())[:6])
    more = ", …" if obj.width > 6 else ""
    return f"polars DataFrame: {obj.height:,} rows × {obj.width:,} columns ({cols}{more})"
