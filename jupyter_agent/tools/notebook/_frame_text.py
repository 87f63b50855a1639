"""The library-neutral shape of a table summary, and its text within a character budget.

pandas and polars fill a :class:`FrameInfo` (``_pandas.py``, ``_polars.py``); this module
writes it. The budget is kept by dropping detail in a fixed order (tail rows, head rows, head
columns, stat columns), so a summary of any frame fits, however wide or long.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ...base.secrets import MASK, is_secret_name, mask
from ._modules import loaded
from ._text import cap, table

if TYPE_CHECKING:
    import numpy
    from numpy.typing import NDArray

__all__ = ["SAMPLE_ROWS", "SAMPLE_RUN", "SHOW_COLUMNS", "ColumnInfo", "FrameInfo",
           "fmt_bytes", "render_frame", "sample_positions", "sample_runs", "shown_positions",
           "sample_note"]

SAMPLE_ROWS = 50_000
"""Statistics of longer tables come from a random sample of this many rows (seed 0)."""
SHOW_COLUMNS = 40
"""At most this many columns are described one by one (the first ones and the last 5)."""
HEAD_COLUMNS = 12
"""At most this many columns appear in the head/tail rows."""
SAMPLE_RUN = 250
"""Rows per contiguous run of the sample: 200 runs of 250 rows read memory several times
faster than 50,000 scattered rows, and 200 runs spread over the whole table still see its
beginning, middle and end."""
STAT_KEYS = ("min", "p50", "max", "mean", "std", "distinct", "top")


@dataclass
class ColumnInfo:
    """One described column: its name, dtype, nulls and summary statistics as text."""

    name: str
    dtype: str
    nulls: str = ""
    stats: dict[str, str] = field(default_factory=dict)


@dataclass
class FrameInfo:
    """Everything a table summary says, already as text."""

    kind: str
    rows: int
    cols: int | None
    memory: str = ""
    index: str = ""
    columns: list[ColumnInfo] = field(default_factory=list)
    hidden_columns: int = 0
    dtype_counts: str = ""
    notes: list[str] = field(default_factory=list)
    head_names: list[str] = field(default_factory=list)
    head: list[list[str]] = field(default_factory=list)
    tail: list[list[str]] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)


def fmt_bytes(n: float) -> str:
    """``1.5 GB``, ``12 KB``, ``100 B``."""
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1024 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TB"


def sample_runs(n: int, size: int = SAMPLE_ROWS) -> list[int] | None:
    """Start rows of the sample's runs in an ``n``-row table (None: take every row).

    The table is cut into ``size // SAMPLE_RUN`` equal strata and one run of
    :data:`SAMPLE_RUN` rows starts at a random offset in each (seed 0: the same rows every
    time, so the text is stable).
    """
    if n <= size:
        return None
    runs = size // SAMPLE_RUN
    stride = n // runs
    rng = random.Random(0)
    return [i * stride + rng.randrange(stride - SAMPLE_RUN + 1) for i in range(runs)]


def sample_positions(n: int, size: int = SAMPLE_ROWS) -> NDArray[numpy.int64] | None:
    """The sampled row positions of :func:`sample_runs` as a sorted numpy array (or None)."""
    starts = sample_runs(n, size)
    if starts is None:
        return None
    np = loaded("numpy")

    positions: NDArray[numpy.int64] = (np.asarray(starts, dtype=np.int64)[:, None]
                                       + np.arange(SAMPLE_RUN)).ravel()
    return positions


def sample_note(sampled: int, n: int) -> str:
    """How the statistics were sampled, for the summary's notes."""
    return (f"Statistics from a sample of {sampled:,} of {n:,} rows "
            f"({sampled // SAMPLE_RUN} random runs of {SAMPLE_RUN} rows)")


def shown_positions(n: int, limit: int = SHOW_COLUMNS, tail: int = 5) -> list[int]:
    """Positions of the columns to describe: all when they fit, else the first and last few."""
    if n <= limit:
        return list(range(n))
    return list(range(limit - tail)) + list(range(n - tail, n))


def _rows_text(info: FrameInfo, n_head: int, n_tail: int, n_cols: int) -> str:
    names = info.head_names
    if not names or not (info.head or info.tail):
        return ""
    keep = list(range(len(names)))
    if len(names) > n_cols:
        keep = list(range(max(n_cols - 2, 1))) + list(range(len(names) - 2, len(names)))

    def pick(row: list[str]) -> list[str]:
        cells = [row[i] for i in keep]
        if len(keep) < len(names):
            cells.insert(len(keep) - 2, "…")
        return cells

    header = pick(names)
    head = [pick(r) for r in info.head[:n_head]]
    tail = [pick(r) for r in info.tail[:n_tail]] if n_tail else []
    parts = []
    if head:
        parts.append(f"First {len(head)} rows:\n" + table(header, head, width=14))
    if tail:
        parts.append(f"Last {len(tail)} rows:\n" + table(header, tail, width=14))
    return "\n".join(parts)


def _columns_text(info: FrameInfo, keys: tuple[str, ...]) -> str:
    if not info.columns:
        return ""
    used = [k for k in keys if any(k in c.stats for c in info.columns)]
    header = ["column", "dtype", "nulls", *used]
    rows = [[c.name, c.dtype, c.nulls, *(c.stats.get(k, "") for k in used)]
            for c in info.columns]
    text = table(header, rows, width=26)
    if info.hidden_columns:
        text += f"\n… {info.hidden_columns:,} more columns not described (pass columns=[...])"
    return text


def _hide_secret_columns(info: FrameInfo) -> None:
    """Values of columns named like secrets (``password``, ``api_key``) are never shown."""
    for col in info.columns:
        if is_secret_name(col.name):
            col.stats = {k: MASK for k in col.stats if k in ("top", "min", "max")}
    hidden = [i for i, name in enumerate(info.head_names) if is_secret_name(name)]
    for row in (*info.head, *info.tail):
        for i in hidden:
            row[i] = MASK


def render_frame(info: FrameInfo, max_chars: int = 3800, rows: int = 3) -> str:
    """The summary text of ``info`` in at most ``max_chars`` characters (secrets masked)."""
    shape = f"{info.rows:,} rows" + (f" × {info.cols:,} columns" if info.cols is not None else "")
    top = [f"{info.kind}: {shape}" + (f", {info.memory}" if info.memory else "")]
    if info.index:
        top.append(f"index: {info.index}")
    if info.dtype_counts:
        top.append(f"dtypes: {info.dtype_counts}")
    _hide_secret_columns(info)
    head_text = "\n".join(top)
    notes = "\n".join(info.notes)
    extra = "\n".join(info.extra)
    keys = STAT_KEYS
    # Cheapest detail first to go: tail rows, head rows, head columns, then stat columns.
    plans = [(rows, rows, HEAD_COLUMNS), (rows, 0, HEAD_COLUMNS), (rows, 0, 6), (2, 0, 6),
             (1, 0, 4), (0, 0, 0)]
    text = ""
    for drop in range(len(keys) + 1):
        cols = _columns_text(info, keys[: len(keys) - drop])
        for n_head, n_tail, n_cols in plans:
            body = [head_text, cols, extra, notes, _rows_text(info, n_head, n_tail, n_cols)]
            text = "\n".join(p for p in body if p)
            if len(text) <= max_chars:
                return mask(text)
    return mask(cap(text, max_chars))
