"""Bounded summaries of any Python object: one line for a listing, a page for an inspection.

pandas, polars and numpy objects get a structured summary (shape, dtypes, nulls, statistics,
first and last rows); containers a preview; strings their head and tail; functions and
classes their signature; anything else its type and a capped, time-limited repr. None of
these libraries is imported here: an object can only be a DataFrame if pandas is loaded
already, so ``sys.modules`` decides which branch applies.
"""

from __future__ import annotations

import inspect
import itertools
import sys
import time
import types
from collections import Counter
from collections.abc import Callable, Sized
from typing import TYPE_CHECKING

from typing_extensions import TypeIs

from ...base.secrets import mask
from ._frame_text import SAMPLE_ROWS, fmt_bytes
from ._modules import loaded
from ._text import (
    Container,
    builtin_items,
    cap,
    fmt_num,
    head,
    one_line,
    preview,
    safe_repr,
    tail,
    type_name,
)
from ._time_limit import call_with_limit

if TYPE_CHECKING:
    import numpy
    import pandas
    import polars
    from numpy.typing import NDArray

__all__ = ["DEFAULT_MAX_CHARS", "summarize", "summary_line"]

DEFAULT_MAX_CHARS = 3800
"""Characters an inspection may take (the issue's budget is 4 KB)."""
_EXACT_NAN_VALUES = 5_000_000


def _is_pandas(obj: object) -> TypeIs[pandas.DataFrame | pandas.Series]:
    pd = sys.modules.get("pandas")
    return pd is not None and isinstance(obj, (pd.DataFrame, pd.Series))


def _is_polars(obj: object) -> TypeIs[polars.DataFrame | polars.Series | polars.LazyFrame]:
    pl = sys.modules.get("polars")
    return pl is not None and isinstance(obj, (pl.DataFrame, pl.Series, pl.LazyFrame))


def _is_ndarray(obj: object) -> TypeIs[NDArray[numpy.generic]]:
    np = sys.modules.get("numpy")
    return np is not None and isinstance(obj, np.ndarray)


# --------------------------------------------------------------------------- numpy
def _array_summary(arr: NDArray[numpy.generic], max_chars: int) -> str:
    np = loaded("numpy")

    lines = [f"numpy.ndarray: shape {arr.shape}, dtype {arr.dtype}, {fmt_bytes(arr.nbytes)}"]
    fields = arr.dtype.fields  # not None when the dtype has names
    if arr.dtype.names and fields is not None:
        lines.append("fields: " + ", ".join(f"{n}: {fields[n][0]}"
                                            for n in arr.dtype.names[:30]))
    numeric = arr.dtype.kind in "iufb" and arr.size
    if numeric:
        exact = arr.size <= SAMPLE_ROWS
        if exact:
            flat = arr.ravel()
        else:
            picks = np.unique(np.random.default_rng(0).integers(0, arr.size, SAMPLE_ROWS))
            flat = arr.flat[picks]
        values = flat.astype("float64", copy=False)
        nan = np.isnan(values)
        finite = values[~nan]
        if finite.size:
            lo, mid, hi = np.percentile(finite, [0, 50, 100])
            where = "all values" if exact else f"a random sample of {flat.size:,} of {arr.size:,} values"
            lines.append(f"stats ({where}): min {fmt_num(lo)}, p50 {fmt_num(mid)}, "
                         f"max {fmt_num(hi)}, mean {fmt_num(finite.mean())}, "
                         f"std {fmt_num(finite.std(ddof=1) if finite.size > 1 else 0.0)}")
        if arr.dtype.kind == "f":
            if arr.size <= _EXACT_NAN_VALUES:
                lines.append(f"nan: {int(np.isnan(arr).sum()):,}")
            else:
                lines.append(f"nan: ~{float(nan.mean()):.1%} (sample)")
    if arr.dtype.kind == "O" or arr.dtype.names:
        # array2string would call every element's repr: preview a few items ourselves.
        first = [arr.flat[i] for i in range(min(arr.size, 8))]
        lines.append("first items: " + preview(first, 600, depth=2))
    else:
        text = np.array2string(arr, threshold=60, edgeitems=3, max_line_width=100,
                               precision=4)
        lines.append(cap(text, max(200, max_chars // 2)))
    return mask(cap("\n".join(lines), max_chars))


def _array_line(arr: NDArray[numpy.generic]) -> str:
    return f"ndarray shape {arr.shape}, dtype {arr.dtype}"


# --------------------------------------------------------------------------- builtins
def _string_summary(s: str, max_chars: int) -> str:
    n = len(s)
    lines = s.count("\n") + 1 if s else 0
    title = f"str: {n:,} characters, {lines:,} lines"
    if n <= max_chars - 100:
        return mask(f"{title}\n{s}")
    keep_head = (max_chars - 150) * 3 // 4
    keep_tail = max_chars - 150 - keep_head
    return (f"{title}\n{head(s, keep_head)}\n[… {n - keep_head - keep_tail:,} characters "
            f"cut …]\n{tail(s, keep_tail)}")


def _type_counts(items: list[object]) -> str:
    counts = Counter(type(v).__name__ for v in items)
    return ", ".join(f"{t} ×{c:,}" for t, c in counts.most_common(5))


def _container_summary(obj: Container, max_chars: int) -> str:
    # The builtin methods, not the object's: a subclass may override __len__ or __iter__.
    members, n = builtin_items(obj)
    kind = type_name(obj)
    end = time.monotonic() + 2.0  # one repr budget for every previewed item
    many = " in the first 1,000" if n > 1000 else ""
    if isinstance(obj, dict):
        keys = list(itertools.islice(dict.keys(obj), 1000))
        lines = [f"{kind}: {n:,} keys (key types: {_type_counts(keys)}{many})"]
        items = list(itertools.islice(dict.items(obj), 30))
        budget = max(60, (max_chars - 200) // max(len(items), 1))
        for k, v in items:
            lines.append(cap(preview({k: v}, budget, deadline=end)[1:-1], budget))
        if n > len(items):
            lines.append(f"… {n - len(items):,} more keys")
        return mask(cap("\n".join(lines), max_chars))
    first = list(itertools.islice(members, 1000))
    lines = [f"{kind}: {n:,} items (types: {_type_counts(first)}{many})"]
    shown = first[:20]
    budget = max(60, (max_chars - 200) // (len(shown) + 3))
    lines.extend(f"[{i}] {preview(v, budget, deadline=end)}" for i, v in enumerate(shown))
    if isinstance(obj, (list, tuple)) and n > 23:
        last = (list.__getitem__(obj, slice(n - 3, n)) if isinstance(obj, list)
                else tuple.__getitem__(obj, slice(n - 3, n)))
        lines.append(f"… {n - 23:,} more items …")
        lines.extend(f"[{i}] {preview(v, budget, deadline=end)}"
                     for i, v in zip(range(n - 3, n), last))
    elif n > len(shown):
        lines.append(f"… {n - len(shown):,} more items")
    return mask(cap("\n".join(lines), max_chars))


def _builtin_len(obj: Container) -> int:
    return builtin_items(obj)[1]


def _callable_summary(obj: Callable[..., object], max_chars: int) -> str:
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", type_name(obj))
    try:
        sig = str(inspect.signature(obj))
    except (TypeError, ValueError):
        sig = "(…)"
    kind = "class" if isinstance(obj, type) else "function"
    lines = [f"{kind} {name}{sig}"]
    if isinstance(obj, type):
        bases = ", ".join(b.__name__ for b in obj.__bases__ if b is not object)
        if bases:
            lines.append(f"bases: {bases}")
        methods = [m for m in vars(obj) if not m.startswith("_")][:30]
        if methods:
            lines.append("public attributes: " + ", ".join(methods))
    doc = inspect.getdoc(obj) or ""
    if doc:
        lines.append(cap(doc, max(200, max_chars // 2)))
    return mask(cap("\n".join(lines), max_chars))


def _object_summary(obj: object, max_chars: int) -> str:
    lines = [f"type: {type_name(obj)}"]
    if isinstance(obj, Sized):  # its class has __len__
        sized = obj
        ok, n = call_with_limit(lambda: len(sized), 0.5)
        if ok:
            lines.append(f"len: {n:,}")
    lines.append("repr: " + safe_repr(obj, max(200, max_chars // 2)))
    attrs = inspect.getattr_static(obj, "__dict__", None)
    if isinstance(attrs, dict) and attrs:
        names = [k for k in attrs if isinstance(k, str) and not k.startswith("_")][:30]
        if names:
            lines.append("attributes: " + ", ".join(
                f"{k}: {type(attrs[k]).__name__}" for k in names))
    return mask(cap("\n".join(lines), max_chars))


# --------------------------------------------------------------------------- dispatch
def summarize(obj: object, *, rows: int = 3, columns: list[str] | None = None,
              max_chars: int = DEFAULT_MAX_CHARS) -> str:
    """A bounded, useful summary of ``obj`` (at most ``max_chars`` characters).

    Args:
        obj: An object of whatever type.
        rows: First and last rows shown for tables.
        columns: Only describe these columns of a DataFrame.
        max_chars: Upper bound of the text's length.
    """
    if _is_pandas(obj):
        from ._pandas import summarize_pandas

        return summarize_pandas(obj, rows=rows, columns=columns, max_chars=max_chars)
    if _is_polars(obj):
        from ._polars import summarize_polars

        return summarize_polars(obj, rows=rows, columns=columns, max_chars=max_chars)
    if _is_ndarray(obj):
        return _array_summary(obj, max_chars)
    if isinstance(obj, str):
        return _string_summary(str.__str__(obj), max_chars)
    if isinstance(obj, (dict, list, tuple, set, frozenset)):
        return _container_summary(obj, max_chars)
    if isinstance(obj, (types.FunctionType, types.BuiltinFunctionType, types.MethodType, type)):
        return _callable_summary(obj, max_chars)
    if isinstance(obj, types.ModuleType):
        return f"module {obj.__name__}" + (f" ({obj.__file__})" if getattr(
            obj, "__file__", None) else "")
    if isinstance(obj, (int, float, complex, bool, type(None), bytes, bytearray)):
        return f"{type_name(obj)}: {safe_repr(obj, max_chars - 40)}"
    return _object_summary(obj, max_chars)


def summary_line(obj: object, limit: int = 120) -> str:
    """One line describing ``obj`` for a listing of variables."""
    if _is_pandas(obj):
        from ._pandas import pandas_line

        text = pandas_line(obj)
    elif _is_polars(obj):
        from ._polars import polars_line

        text = polars_line(obj)
    elif _is_ndarray(obj):
        text = _array_line(obj)
    elif isinstance(obj, str):
        text = f"{len(obj):,} chars: {safe_repr(obj, 60)}"
    elif isinstance(obj, (dict, list, tuple, set, frozenset)):
        unit = "keys" if isinstance(obj, dict) else "items"
        text = f"{_builtin_len(obj):,} {unit}: {preview(obj, 70, max_items=4, depth=2)}"
    elif isinstance(obj, (types.FunctionType, types.BuiltinFunctionType, type)):
        try:
            sig = str(inspect.signature(obj))
        except (TypeError, ValueError):
            sig = "(…)"
        text = ("class " if isinstance(obj, type) else "def ") + obj.__name__ + sig
    else:
        text = safe_repr(obj, limit, seconds=0.3)
    return mask(one_line(text, limit))
