"""Finding where a request differs from the recorded ones, to say so in one line.

Requests are compared field by field in the order a reader scans them (model, messages, tools,
tool choice, sampling parameters, anything else), so "the first differing field" is the one a
person would spot first, and the closest recording is the one that agrees the longest.
"""

from __future__ import annotations

import json
from typing import Union

from ..base.jsontypes import JSONObject, JSONValue

__all__ = ["FIELD_ORDER", "closest", "first_difference", "describe_difference"]

FIELD_ORDER = ("model", "messages", "tools", "tool_choice", "parallel_tool_calls", "temperature",
               "top_p", "max_tokens", "stop", "response_format")
"""Top-level request fields in comparison order; other fields follow, sorted by name."""



class _Missing:
    """A field present on one side only (its value on the other)."""


_MISSING = _Missing()
Side = Union[JSONValue, _Missing]
"""One side's value of a field: JSON, or missing."""
_EXCERPT = 48


def _keys(d: JSONObject) -> list[str]:
    known = [k for k in FIELD_ORDER if k in d]
    return known + sorted(k for k in d if k not in FIELD_ORDER)


def _leaves(value: JSONValue, path: str, out: list[tuple[str, JSONValue]]) -> None:
    """Flatten ``value`` into ``(path, scalar)`` pairs in reading order."""
    if isinstance(value, dict):
        keys = _keys(value) if not path else sorted(value, key=_field_rank)
        out.append((path, f"<{len(value)} fields>"))
        for k in keys:
            _leaves(value[k], f"{path}.{k}" if path else k, out)
    elif isinstance(value, list):
        out.append((path, f"<{len(value)} items>"))
        for i, item in enumerate(value):
            _leaves(item, f"{path}[{i}]", out)
    else:
        out.append((path, value))


def _field_rank(key: str) -> tuple[int, str]:
    # Inside a message: the role and the text first, ids and tool calls after.
    order = ("role", "name", "content", "tool_calls", "tool_call_id", "type", "function",
             "arguments")
    return (order.index(key) if key in order else len(order), key)


def _agreement(a: list[tuple[str, JSONValue]], b: list[tuple[str, JSONValue]]
               ) -> tuple[int, int]:
    """How long ``a`` and ``b`` agree from the start, then how much they share overall."""
    prefix = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        prefix += 1
    shared = len(set(map(_hashable, a)) & set(map(_hashable, b)))
    return prefix, shared


def _hashable(pair: tuple[str, JSONValue]) -> tuple[str, str]:
    return pair[0], json.dumps(pair[1], sort_keys=True, default=str)


def closest(summary: JSONObject, recorded: list[JSONObject]) -> int:
    """Index of the recorded request summary closest to ``summary`` (-1 when none)."""
    if not recorded:
        return -1
    mine: list[tuple[str, JSONValue]] = []
    _leaves(summary, "", mine)
    best, best_score = 0, (-1, -1)
    for i, other in enumerate(recorded):
        theirs: list[tuple[str, JSONValue]] = []
        _leaves(other, "", theirs)
        score = _agreement(mine, theirs)
        if score > best_score:
            best, best_score = i, score
    return best


def first_difference(new: Side, old: Side, path: str = "") -> tuple[str, Side, Side] | None:
    """``(path, new value, recorded value)`` of the first differing field, or None if equal.

    A field present on one side only is reported with the other side as ``_MISSING``.
    """
    if isinstance(new, dict) and isinstance(old, dict):
        keys = _keys({**old, **new}) if not path else sorted({**old, **new}, key=_field_rank)
        for k in keys:
            sub = f"{path}.{k}" if path else k
            found = first_difference(new.get(k, _MISSING), old.get(k, _MISSING), sub)
            if found is not None:
                return found
        return None
    if isinstance(new, list) and isinstance(old, list):
        for i in range(max(len(new), len(old))):
            a: Side = new[i] if i < len(new) else _MISSING
            b: Side = old[i] if i < len(old) else _MISSING
            found = first_difference(a, b, f"{path}[{i}]")
            if found is not None:
                return found
        return None
    if new == old and type(new) is type(old):
        return None
    return path, new, old


def _excerpt(text: str, at: int) -> str:
    start = max(0, at - _EXCERPT // 3)
    piece = text[start:start + _EXCERPT]
    return ("…" if start else "") + piece + ("…" if start + _EXCERPT < len(text) else "")


def _show(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def describe_difference(new: JSONObject, old: JSONObject) -> str:
    """One phrase naming the first differing field, e.g.
    ``messages[3].content differs ("…" vs "…")`` (this request's value first)."""
    found = first_difference(new, old)
    if found is None:
        return "it equals a recorded request that was already used up"
    path, a, b = found
    if isinstance(b, _Missing):
        if path.endswith("]"):
            return f"{path} is new (the recorded request has no such item)"
        return f"{path} is new (the recorded request has no such field)"
    if isinstance(a, _Missing):
        return f"{path} is missing (the recorded request has {_show(_clip(b))})"
    if isinstance(a, str) and isinstance(b, str):
        at = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
        return f"{path} differs ({_show(_excerpt(a, at))} vs {_show(_excerpt(b, at))})"
    return f"{path} differs ({_show(_clip(a))} vs {_show(_clip(b))})"


def _clip(value: JSONValue) -> JSONValue:
    text = _show(value)
    if len(text) <= _EXCERPT:
        return value
    return text[:_EXCERPT] + "…"
