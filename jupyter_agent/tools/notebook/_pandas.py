"""pandas DataFrames and Series as :class:`FrameInfo`, fast on tens of millions of rows.

Only cheap facts are exact on a long frame: shape, dtypes, memory, the head and tail rows,
and the null count of dtypes that cannot hold nulls. Statistics and other null counts come
from a random sample of :data:`SAMPLE_ROWS` rows (fixed seed, so the text is stable), and
the summary says so. A full ``describe()`` or ``isna().sum()`` reads every value of every
column: seconds on a 10-million-row frame, which the model does not need to pick its next step.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING

from typing_extensions import TypeIs

from ._frame_text import (
    SHOW_COLUMNS,
    ColumnInfo,
    FrameInfo,
    fmt_bytes,
    render_frame,
    sample_note,
    sample_positions,
    shown_positions,
)
from ._modules import loaded
from ._text import cell_text as _cell
from ._text import fmt_num, one_line

if TYPE_CHECKING:
    import numpy
    import pandas
    from numpy.typing import NDArray

__all__ = ["summarize_pandas", "pandas_line"]


def _is_series(obj: pandas.DataFrame | pandas.Series) -> TypeIs[pandas.Series]:
    return isinstance(obj, loaded("pandas").Series)


def _median(values: NDArray[numpy.float64], exact: bool) -> float:
    np = loaded("numpy")

    # A sample's median needs no more than 25,000 of its values (partitioning is the cost).
    if not exact and values.size > 25_000:
        values = values[:: values.size // 25_000]
    return float(np.median(values))


def _column(name: Hashable, col: pandas.Series, picks: NDArray[numpy.int64] | None
            ) -> ColumnInfo:
    """Describe one column; ``picks`` are the sampled row positions (None: every row)."""
    np = loaded("numpy")
    pd = loaded("pandas")
    pt = loaded("pandas.api.types")

    dtype = col.dtype
    exact = picks is None
    if picks is None:
        sample = col
    elif isinstance(dtype, np.dtype):  # a view's fancy indexing: no pandas overhead
        sample = pd.Series(col.to_numpy()[picks], copy=False)
    else:
        sample = col.take(picks)
    info = ColumnInfo(name=one_line(str(name), 40), dtype=str(dtype))
    if isinstance(dtype, np.dtype) and dtype.kind in "iub":
        info.nulls = "0"  # these dtypes cannot hold a null: exact without reading a value
    elif exact:
        info.nulls = f"{int(col.isna().sum()):,}"
    else:
        share = float(sample.isna().mean()) if len(sample) else 0.0
        info.nulls = "~0%" if share == 0 else f"~{share:.1%}"
    st = info.stats
    try:
        if pt.is_bool_dtype(dtype):
            st["mean"] = fmt_num(float(sample.mean()))
        elif pt.is_numeric_dtype(dtype) and not pt.is_complex_dtype(dtype):
            arr = sample.to_numpy(dtype="float64", na_value=np.nan)
            arr = arr[~np.isnan(arr)]
            if arr.size:
                st.update(min=fmt_num(arr.min()), p50=fmt_num(_median(arr, exact)),
                          max=fmt_num(arr.max()), mean=fmt_num(arr.mean()),
                          std=fmt_num(arr.std(ddof=1) if arr.size > 1 else 0.0))
        elif pt.is_datetime64_any_dtype(dtype) or isinstance(dtype, pd.PeriodDtype):
            st.update(min=str(sample.min()), max=str(sample.max()))
        else:
            counts = sample.value_counts(dropna=True)
            if isinstance(dtype, pd.CategoricalDtype):  # known exactly, whatever the sample
                st["distinct"] = f"{len(dtype.categories):,} categories"
            else:
                st["distinct"] = f"{len(counts):,}" + ("" if exact else "+")
            if len(counts):
                st["top"] = f"{_cell(counts.index[0])} ({counts.iloc[0]:,}×)"
    except (TypeError, ValueError):  # unhashable or mixed objects: no statistics, no failure
        st["top"] = "(mixed objects)"
    return info


def _index_text(index: pandas.Index) -> str:
    pd = loaded("pandas")

    name = f" {index.name!r}" if index.name is not None else ""
    if isinstance(index, pd.RangeIndex):
        return f"RangeIndex{name} {index.start}..{index.stop - 1}" + (
            f" step {index.step}" if index.step != 1 else "")
    if isinstance(index, pd.MultiIndex):
        return f"MultiIndex {list(index.names)}, {index.nlevels} levels"
    if len(index) == 0:
        return f"{type(index).__name__}{name} (empty)"
    return (f"{type(index).__name__}{name} dtype {index.dtype}, "
            f"{_cell(index[0])} … {_cell(index[-1])}")


def _memory(obj: pandas.DataFrame | pandas.Series) -> str:
    try:
        usage = obj.memory_usage(index=True, deep=False)
        total = float(usage.sum()) if hasattr(usage, "sum") else float(usage)
    except Exception:  # an exotic extension array: memory is a nicety
        return ""
    pd = loaded("pandas")

    shallow = list(obj.dtypes) if isinstance(obj, pd.DataFrame) else [obj.dtype]
    note = " (object values not counted)" if any(str(d) == "object" for d in shallow) else ""
    return fmt_bytes(total) + " in memory" + note


def summarize_pandas(obj: pandas.DataFrame | pandas.Series, *, rows: int = 3,
                     columns: list[str] | None = None, max_chars: int = 3800) -> str:
    """The summary text of a pandas DataFrame or Series (see the module docstring)."""
    is_series = _is_series(obj)
    if _is_series(obj):
        frame = obj.to_frame(name=obj.name if obj.name is not None else "value")
    else:
        frame = obj
    n_rows, n_cols = frame.shape
    if columns:
        missing = [c for c in columns if c not in frame.columns]
        if missing:
            known = ", ".join(map(str, list(frame.columns[:30])))
            raise KeyError(f"No column {missing[0]!r}. Columns: {known}"
                           + (" …" if n_cols > 30 else ""))
        locs = [frame.columns.get_loc(c) for c in columns]
        positions = [p for p in locs if isinstance(p, int)][:SHOW_COLUMNS]
    else:
        positions = shown_positions(n_cols)
    kind = "pandas.Series" if is_series else "pandas.DataFrame"
    info = FrameInfo(kind=kind, rows=n_rows, cols=None if is_series else n_cols,
                     memory=_memory(obj), index=_index_text(frame.index))
    if is_series:
        info.kind += f" {obj.name!r}" if obj.name is not None else ""
    else:
        counts = frame.dtypes.astype(str).value_counts()
        if n_cols > len(positions):
            info.dtype_counts = ", ".join(f"{d} ×{c:,}" for d, c in counts.items())
        info.hidden_columns = n_cols - len(positions)
    # Column by column: selecting several columns at once may copy the whole frame.
    picks = sample_positions(n_rows)
    for p in positions:
        info.columns.append(_column(frame.columns[p], frame.iloc[:, p], picks))
    if picks is not None:
        info.notes.append(sample_note(len(picks), n_rows) + "; ~nulls estimated from it.")
    head_positions = positions if len(positions) <= 14 else positions[:12] + positions[-2:]
    rows = max(0, min(rows, 20))
    info.head_names = [one_line(str(frame.columns[p]), 30) for p in head_positions]

    def cells(part: pandas.DataFrame) -> list[list[str]]:
        return [[_cell(v) for v in r] for r in part.iloc[:, head_positions].itertuples(
            index=False)]

    if n_rows > 2 * rows:
        info.head, info.tail = cells(frame.iloc[:rows]), cells(frame.iloc[n_rows - rows:])
    else:
        info.head = cells(frame)
    return render_frame(info, max_chars=max_chars, rows=max(rows, len(info.head)))


def pandas_line(obj: pandas.DataFrame | pandas.Series) -> str:
    """One line: shape and the first dtypes."""
    if _is_series(obj):
        name = f" {obj.name!r}" if obj.name is not None else ""
        return f"Series{name}: {len(obj):,} values, dtype {obj.dtype}"
    cols = ", ".join(f"{one_line(str(c), 20)}:{d}" for c, d in
                     zip(obj.columns[:6], obj.dtypes.iloc[:6]))
    more = ", …" if obj.shape[1] > 6 else ""
    return f"DataFrame: {obj.shape[0]:,} rows × {obj.shape[1]:,} columns ({cols}{more})"
