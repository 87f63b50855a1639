"""Bounded text: reprs that cannot hang or explode, previews of containers, small tables.

Everything the notebook tools show the model is built here, so one set of caps applies:
a ``__repr__`` that raises, hangs or returns megabytes costs at most a short note; a
self-containing list prints ``[...]``; a string is cut before it is repr'd.
"""

from __future__ import annotations

import datetime
import decimal
import itertools
import math
import numbers
import re
import time
from collections.abc import Iterable
from typing import SupportsFloat, SupportsIndex, Union

from ...base.secrets import MASK, is_secret_name, known_secrets, mask
from ._time_limit import call_with_limit

__all__ = ["REPR_SECONDS", "Container", "builtin_items", "cap", "cell_text", "fmt_num", "head",
           "one_line", "preview",
           "redact_source", "safe_repr", "table", "tail", "type_name"]

REPR_SECONDS = 1.0
"""How long one object's ``__repr__`` may take before it is given up."""
_PLAIN = (bool, float, complex, type(None))
_CONTAINERS = (list, tuple, set, frozenset, dict)


def type_name(obj: object) -> str:
    """``module.Class`` for library types, ``Class`` for builtins and the user's own."""
    t = type(obj)
    module = getattr(t, "__module__", "") or ""
    name = getattr(t, "__qualname__", t.__name__)
    if module in ("builtins", "__main__") or not module:
        return name
    return f"{module.split('.')[0]}.{name}"


def _class(obj: object) -> str:
    return getattr(type(obj), "__name__", "object")


def _margin() -> int:
    return max(map(len, known_secrets()), default=0)


# Cutting first and masking afterwards would leak the first half of a secret that straddles
# the cut. These two mask a window one secret-length wider than they keep, then cut.
def head(text: str, n: int) -> str:
    """The first ``n`` characters of ``text``, secrets masked."""
    if len(text) <= n:
        return mask(text)
    return mask(text[: max(n, 0) + _margin()])[: max(n, 0)]


def tail(text: str, n: int) -> str:
    """The last ``n`` characters of ``text``, secrets masked."""
    if n <= 0:
        return ""
    if len(text) <= n:
        return mask(text)
    masked = mask(text[len(text) - n - _margin():])
    return masked[len(masked) - n:]


def cap(text: str, limit: int) -> str:
    """``text`` masked and cut to about ``limit`` characters, saying how much was left out."""
    if len(text) <= limit:
        return mask(text)
    return f"{head(text, limit)}… [{len(text) - limit:,} more characters]"


def one_line(text: str, limit: int) -> str:
    """``text`` masked, on one line (runs of whitespace become one space), cut with ``…``."""
    flat = " ".join(head(text, limit * 4 + 64).split()) if text else ""
    return flat if len(flat) <= limit else flat[: max(limit - 1, 0)] + "…"


def cell_text(v: object) -> str:
    """A table cell's value in at most about 40 characters."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return fmt_num(v)
    if isinstance(v, str):
        return one_line(v, 40)
    if isinstance(v, (datetime.date, datetime.time, datetime.timedelta, decimal.Decimal)):
        return str(v)
    if type(v).__module__ == "numpy" and type(v).__name__ in ("datetime64", "timedelta64"):
        return str(v)
    return safe_repr(v, 40, seconds=0.2)


def _as_float(x: object) -> float:
    """``float(x)``, raising what ``float`` raises for what it cannot convert."""
    # The common cases first (numpy's scalars are registered as numbers.Real): a check against
    # the Protocols below costs about 5 µs a call, ten times the rest of fmt_num.
    if isinstance(x, float):
        return x
    if isinstance(x, numbers.Real):
        return float(x)
    if isinstance(x, (str, bytes, SupportsFloat, SupportsIndex)):
        return float(x)
    raise TypeError(f"not a number: {type(x).__name__}")


def fmt_num(x: object) -> str:
    """A number in at most about 10 characters (``1.235e+07``, ``0.5``, ``42``, ``nan``)."""
    try:
        if isinstance(x, bool):
            return str(x)
        if isinstance(x, int):
            return str(int(x))
        f = _as_float(x)
        if hasattr(x, "is_integer") and f.is_integer() and abs(f) < 1e15:
            return str(int(f))  # exact: an integral float below 2**53
    except (TypeError, ValueError, OverflowError):
        return cap(str(x), 24)
    if math.isnan(f) or math.isinf(f):
        return str(f)
    return f"{f:.4g}"


def safe_repr(obj: object, limit: int = 300, seconds: float = REPR_SECONDS) -> str:
    """``repr(obj)`` capped to ``limit`` characters, never raising and never hanging.

    A repr that raises gives ``<Type object: repr raised ValueError>``; one that takes longer
    than ``seconds`` gives ``<Type object: repr took over 1 s>``.
    """
    if isinstance(obj, str):
        return repr(head(str.__str__(obj), limit)) + ("…" if len(obj) > limit else "")
    if isinstance(obj, (bytes, bytearray)):
        # The builtin methods, not the object's: a subclass may override them.
        cut = slice(0, limit + _margin())
        if isinstance(obj, bytes):
            first, size = bytes.__getitem__(obj, cut), bytes.__len__(obj)
        else:
            first, size = bytes(bytearray.__getitem__(obj, cut)), bytearray.__len__(obj)
        return head(repr(first), limit + 3) + ("…" if size > limit else "")
    if isinstance(obj, int) and not isinstance(obj, bool) and int.bit_length(obj) > 4000:
        return f"<int with about {int(int.bit_length(obj) * 0.30103):,} digits>"
    try:
        ok, text = call_with_limit(lambda: repr(obj), seconds)
    except Exception as exc:  # a broken __repr__ is the object's problem, not ours
        return f"<{_class(obj)} object: repr raised {type(exc).__name__}>"
    if not ok:
        return f"<{_class(obj)} object: repr took over {seconds:g} s>"
    if not isinstance(text, str):
        return f"<{_class(obj)} object: repr returned {type(text).__name__}>"
    return cap(text, limit)


Container = Union[dict[object, object], list[object], tuple[object, ...], set[object],
                  frozenset[object]]
"""A builtin container (subclasses included): what :func:`builtin_items` reads."""


def builtin_items(obj: Container) -> tuple[Iterable[object], int]:
    """``obj``'s items (``(key, value)`` pairs of a dict) and length, by the builtin class's
    methods, not the object's: a subclass may override ``__iter__`` or ``__len__``."""
    if isinstance(obj, dict):
        return dict.items(obj), dict.__len__(obj)
    if isinstance(obj, list):
        return list.__iter__(obj), list.__len__(obj)
    if isinstance(obj, tuple):
        return tuple.__iter__(obj), tuple.__len__(obj)
    if isinstance(obj, set):
        return set.__iter__(obj), set.__len__(obj)
    return frozenset.__iter__(obj), frozenset.__len__(obj)


def preview(obj: object, limit: int = 200, *, max_items: int = 8, depth: int = 3,
            deadline: float | None = None) -> str:
    """A short repr-like text of ``obj``: at most ``max_items`` items per container, nesting
    shown ``depth`` levels deep, cycles as ``[...]``, values of secret-named keys masked.

    Reprs of the items share one time budget (until ``deadline``, a ``time.monotonic()``
    value; default 1.5 s from now): a list of slow objects costs the budget, not one second
    per item. Items past the budget show their type only.
    """
    seen: set[int] = set()
    end = time.monotonic() + 1.5 if deadline is None else deadline

    def walk(o: object, level: int, room: int) -> str:
        if isinstance(o, _PLAIN):
            return repr(o)
        if isinstance(o, (str, int)) or not isinstance(o, _CONTAINERS):
            left = min(REPR_SECONDS, end - time.monotonic())
            if left <= 0.01 and not isinstance(o, (str, int)):
                return f"<{_class(o)}>"
            return safe_repr(o, max(room, 16), seconds=max(left, 0.01))
        is_dict = isinstance(o, dict)
        opener, closer = ("{", "}") if is_dict or isinstance(o, (set, frozenset)) else (
            ("(", ")") if isinstance(o, tuple) else ("[", "]"))
        items, n = builtin_items(o)
        if id(o) in seen:
            return f"{opener}...{closer}"
        if level >= depth:
            return f"{opener}…{n} items{closer}"
        seen.add(id(o))
        parts: list[str] = []
        used = 0
        for item in itertools.islice(items, max_items):
            if used > room:
                break
            if is_dict and isinstance(item, tuple):  # a dict's items are (key, value)
                k, v = item
                shown = MASK if isinstance(k, str) and is_secret_name(k) else walk(
                    v, level + 1, room - used)
                text = f"{walk(k, level + 1, 40)}: {shown}"
            else:
                text = walk(item, level + 1, room - used)
            parts.append(text)
            used += len(text) + 2
        seen.discard(id(o))
        more = n - len(parts)
        if more > 0:
            parts.append(f"…{more:,} more")
        return opener + ", ".join(parts) + closer

    return mask(cap(walk(obj, 0, limit), limit))


def table(header: list[str], rows: list[list[str]], width: int = 16) -> str:
    """An aligned text table; each cell cut to ``width`` characters."""
    def cell(s: str) -> str:
        s = " ".join(str(s).split())
        return mask(s) if len(s) <= width else head(s, width - 1) + "…"

    grid = [[cell(h) for h in header]] + [[cell(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in grid if i < len(r)) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in grid)


_ASSIGN = re.compile(r"^(\s*)([A-Za-z_][A-Za-z0-9_]*)(\s*=\s*)(['\"]).*?\4", re.MULTILINE)


def redact_source(source: str) -> str:
    """Code with string literals assigned to secret-looking names masked
    (``API_KEY = "sk-..."`` becomes ``API_KEY = [redacted]``), then known secrets masked."""
    def sub(m: re.Match[str]) -> str:
        if is_secret_name(m.group(2)):
            return f"{m.group(1)}{m.group(2)}{m.group(3)}{MASK}"
        return m.group(0)

    return mask(_ASSIGN.sub(sub, source))
