"""Cheap, LLM-free reductions of a tool result (docs/behaviour.md §8.3).

The cleanup is lossy on purpose (URLs, UUIDs, timestamps and long hex ids go; paths become file
names): it only runs on results already too large to pass through untouched.
"""

from __future__ import annotations

import json
import math
import re

from jupyter_agent.base.jsontypes import JSONValue
from jupyter_agent.loop.compress.constants import (
    BASE64_MIN_RUN,
    HEX_ID_MIN_CHARS,
    JSON_SUMMARY_CHAR_RATIO,
    JSON_SUMMARY_KEY_PRIORITY,
    JSON_SUMMARY_LEAF_CHARS,
    JSON_SUMMARY_MAX_DEPTH,
    JSON_SUMMARY_MAX_KEYS,
    JSON_SUMMARY_MAX_SCALAR_CHARS,
    JSON_SUMMARY_MAX_SCALARS,
    JSON_SUMMARY_MIN_CHARS,
)
from jupyter_agent.loop.compress.truncate import char_budget, truncate_by_chars

__all__ = [
    "json_structural_summary",
    "light_cleanup",
    "minify_json",
    "parse_json_truthy",
    "remove_noise",
    "remove_urls_and_base64",
]

# An empty "()" is allowed because URL removal may already have emptied the link target.
_MD_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_URL = re.compile(r"https?://[^\s\"'(),}\]]+", re.IGNORECASE)
_BASE64 = re.compile(rf"\b[a-zA-Z0-9+/]{{{BASE64_MIN_RUN},}}={{0,2}}\b")
_PATH = re.compile(r"[/\w-]+/[\w-]+\.\w+")
_HEX = re.compile(rf"\b[a-f0-9]{{{HEX_ID_MIN_CHARS},}}\b", re.IGNORECASE)
_UUID = re.compile(
    r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.IGNORECASE
)
_TIMESTAMP = re.compile(r"\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})?\b")
_SPACES = re.compile(r"[ \t]+")
_NEWLINES = re.compile(r"\n{3,}")
_WHITESPACE = re.compile(r"\s+")


def _images(text: str) -> str:
    return _MD_IMAGE.sub(r"[\1]", text)


def _paths(text: str) -> str:
    return _PATH.sub(lambda m: m.group(0).rsplit("/", 1)[-1], text)


def _ids_and_times(text: str) -> str:
    text = _HEX.sub("", text)
    text = _UUID.sub("", text)
    return _TIMESTAMP.sub("", text)


def _whitespace(text: str) -> str:
    return _NEWLINES.sub("\n\n", _SPACES.sub(" ", text))


def remove_urls_and_base64(text: str) -> str:
    """Stage 1 of large-content cleanup: drop http(s) URLs, replace base64 runs."""
    return _BASE64.sub("[BASE64_DATA]", _URL.sub("", text))


def remove_noise(text: str) -> str:
    """Stage 2 of large-content cleanup: images, paths, hex ids, UUIDs, timestamps, whitespace."""
    return _whitespace(_ids_and_times(_paths(_images(text))))


def light_cleanup(text: str) -> str:
    """The ten light-processing steps of a tool result, in order (docs/behaviour.md §8.3).

    Images become ``[alt]``; URLs go; base64 runs of 100+ become ``[BASE64_DATA]``; paths shrink
    to their file name; hex ids (32+), UUIDs and ISO timestamps go; spaces and tabs collapse;
    three or more newlines become two; the result is trimmed.
    """
    text = remove_urls_and_base64(_images(text))
    text = _ids_and_times(_paths(text))
    return _whitespace(text).strip()


def parse_json_truthy(text: str) -> tuple[bool, JSONValue]:
    """``(True, value)`` when ``text`` is JSON whose value is truthy the JavaScript way.

    ``{}`` and ``[]`` count as truthy; ``0``, ``false``, ``null`` and
    ``""`` do not, so those take the text path.
    """
    try:
        value: JSONValue = json.loads(text)
    except (ValueError, RecursionError):
        return False, None
    if value is None or value is False or value == "":
        return False, value
    if (isinstance(value, (int, float)) and not isinstance(value, bool)
            and (value == 0 or math.isnan(value))):  # 0, -0.0 and NaN are falsy
        return False, value
    return True, value


def minify_json(value: object) -> str:
    """Compact JSON text (no whitespace, non-ASCII kept as is)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _scalar_text(value: JSONValue) -> str | None:
    if isinstance(value, str):
        return value
    if value is None or isinstance(value, (bool, int, float)):
        return json.dumps(value)
    return None


def json_structural_summary(value: JSONValue, token_limit: int) -> str:
    """A compact description of a large JSON value: important scalars and its structure.

    The character budget is ``max(420, floor(limit * 3 * 0.3))``. Up to 80 ``key=value``
    scalars of at most 100 characters (de-duplicated ignoring case) are listed; the structure
    walk goes 6 levels deep, visits the first and last item of arrays and the first 12 entries
    of objects (``id``, ``name``, ``type``… first), and stops adding lines at the budget.

    Long: its two walks (the scalars, then the structure) share one character budget and one
    set of lines already written, kept in closures.
    """
    max_chars = max(
        JSON_SUMMARY_MIN_CHARS, math.floor(char_budget(token_limit) * JSON_SUMMARY_CHAR_RATIO)
    )
    scalars: list[str] = []
    seen: set[str] = set()

    def collect(node: JSONValue, key: str = "") -> None:
        if len(scalars) >= JSON_SUMMARY_MAX_SCALARS:
            return
        if isinstance(node, list):
            for item in node:
                collect(item)
                if len(scalars) >= JSON_SUMMARY_MAX_SCALARS:
                    return
            return
        if isinstance(node, dict):
            for child_key, child in node.items():
                collect(child, str(child_key))
                if len(scalars) >= JSON_SUMMARY_MAX_SCALARS:
                    return
            return
        text = (_scalar_text(node) or "").strip()
        if not text or len(text) > JSON_SUMMARY_MAX_SCALAR_CHARS:
            return
        entry = f"{key}={text}" if key else text
        if entry.lower() not in seen:
            seen.add(entry.lower())
            scalars.append(entry)

    lines: list[str] = []
    used = 0

    def push(line: str) -> bool:
        nonlocal used
        normalized = _WHITESPACE.sub(" ", line).strip()
        if not normalized:
            return False
        if used + len(normalized) + 1 > max_chars:
            return False
        lines.append(normalized)
        used += len(normalized) + 1
        return True

    priority = {k: i for i, k in enumerate(JSON_SUMMARY_KEY_PRIORITY)}

    def visit(node: JSONValue, path: str, depth: int) -> bool:
        if depth > JSON_SUMMARY_MAX_DEPTH:
            return True
        if isinstance(node, list):
            if not push(f"{path or 'root'}: array(length={len(node)})"):
                return False
            for index in sorted({0, len(node) - 1} if node else set()):
                if not visit(node[index], f"{path}[{index}]", depth + 1):
                    return False
            return True
        if isinstance(node, dict):
            # sorted() is stable, so keys without a priority keep their original order.
            entries = sorted(node.items(), key=lambda kv: priority.get(str(kv[0]), len(priority)))
            if not push(f"{path or 'root'} keys: {', '.join(str(k) for k, _ in entries)}"):
                return False
            for key, child in entries[:JSON_SUMMARY_MAX_KEYS]:
                if not visit(child, f"{path}.{key}" if path else str(key), depth + 1):
                    return False
            return True
        text = _scalar_text(node)
        if not text:
            return True
        return push(f"{path}: {truncate_by_chars(text, JSON_SUMMARY_LEAF_CHARS)}")

    collect(value)
    visit(value, "", 0)
    return minify_json(
        {
            "summaryType": "JSON structural summary",
            "importantScalarValues": scalars,
            "structure": lines,
        }
    )
