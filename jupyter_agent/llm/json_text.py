"""Tolerant reading of JSON written by a model: fences, chatter, comments, single quotes.

Models wrap JSON in prose and Markdown fences, leave trailing commas and comments, and use
single quotes; JSON5 accepts all of that once the value itself is cut out of the text. Each
reader tries the strictest cut first and falls back to looser ones, and never raises.
"""

from __future__ import annotations

import json
import re

from ..base.jsontypes import JSONArray, JSONObject, JSONValue

__all__ = ["parse_json_array", "parse_json_object", "slice_balanced"]

_FENCE = re.compile(r"```[ \t]*(?:json5?|javascript|js)?[ \t]*\n?(.*?)```", re.DOTALL | re.IGNORECASE)
_CLOSERS = {"{": "}", "[": "]"}


def slice_balanced(text: str, opener: str) -> str | None:
    """The first ``opener``-bracketed value of ``text``, up to its matching closer.

    Only brackets of that kind are counted; brackets inside single- or double-quoted strings
    and inside ``//`` or ``/* */`` comments are ignored (docs/behaviour.md §7.3).
    ``None`` when there is no opener or the value never closes.
    """
    start = text.find(opener)
    if start < 0:
        return None
    closer = _CLOSERS[opener]
    depth, i, n = 0, start, len(text)
    while i < n:
        ch = text[i]
        if ch in "\"'":
            i += 1
            while i < n and text[i] != ch:
                i += 2 if text[i] == "\\" else 1
        elif text.startswith("//", i):
            nl = text.find("\n", i)
            i = n if nl < 0 else nl
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 1
        elif ch == opener:
            depth += 1
        elif ch == closer:
            depth -= 1
            if depth == 0:
                return text[start:i + 1]
        i += 1
    return None


def _loads(candidate: str) -> JSONValue:
    try:
        value: JSONValue = json.loads(candidate)
        return value
    except RecursionError:  # nested deeper than the stack: json5 would recurse too
        return None
    except ValueError:
        pass
    import json5  # only for the untidy answers: it is much slower than ``json``

    try:
        loose: JSONValue = json5.loads(candidate)
        return loose
    except Exception:  # noqa: BLE001  # json5 raises ValueError, but also IndexError on some truncated input
        return None


def _candidates(text: str, opener: str) -> list[str]:
    closer = _CLOSERS[opener]
    found: list[str] = []
    sources = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    for source in sources:
        balanced = slice_balanced(source, opener)
        if balanced:
            found.append(balanced)
        first, last = source.find(opener), source.rfind(closer)
        if 0 <= first < last:
            found.append(source[first:last + 1])
    return list(dict.fromkeys(found))  # de-duplicated, order kept


def parse_json_object(text: str) -> JSONObject | None:
    """The first JSON(5) object found in a model's answer, or ``None``.

    An array or a scalar is not an object and gives ``None``: such answers extract nothing
    (docs/behaviour.md §7.3).
    """
    for candidate in _candidates(text or "", "{"):
        value = _loads(candidate)
        if isinstance(value, dict):
            return value
    return None


def parse_json_array(text: str) -> JSONArray | None:
    """The first JSON(5) array found in a model's answer, or ``None``.

    As a last resort a cruder cleanup is applied (docs/behaviour.md §7.4): first ``[`` to last
    ``]``, literal ``\\n`` sequences and backslashes removed, double spaces collapsed. It is
    tried last because it breaks escaped quotes.
    """
    text = text or ""
    for candidate in _candidates(text, "["):
        value = _loads(candidate)
        if isinstance(value, list):
            return value
    first, last = text.find("["), text.rfind("]")
    if 0 <= first < last:
        cleaned = text[first:last + 1].replace("\\n", "").replace("\\", "")
        cleaned = re.sub(r" {2,}", " ", cleaned)
        value = _loads(cleaned)
        if isinstance(value, list):
            return value
    return None
