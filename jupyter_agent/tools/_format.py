"""Turning a tool's Python return value into the text the model reads."""

from __future__ import annotations

import json
import sys

__all__ = ["result_to_text"]


def _json_default(obj: object) -> object:
    if hasattr(obj, "model_dump"):
        return obj.model_dump(mode="json")
    if hasattr(obj, "isoformat"):
        return obj.isoformat()
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    return repr(obj)


def result_to_text(value: object) -> str:
    """str as is; pydantic, dict, list as JSON; pandas objects as compact text; else repr.

    ``None`` becomes ``"none"`` (docs/behaviour.md §5.2), so the model always gets a result.
    """
    if value is None:
        return "none"
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, bool) or isinstance(value, (int, float)):
        return json.dumps(value)
    text: str  # what the duck-typed calls below return
    if hasattr(value, "model_dump_json"):
        text = value.model_dump_json()
        return text
    if isinstance(value, (dict, list, tuple, set, frozenset)):
        try:
            return json.dumps(value, default=_json_default, ensure_ascii=False)
        except (TypeError, ValueError):
            return repr(value)
    pd = sys.modules.get("pandas")  # only if the user already imported pandas
    if pd is not None:
        if isinstance(value, pd.DataFrame):
            text = value.to_string(max_rows=60, max_cols=20)
            return text
        if isinstance(value, pd.Series):
            text = value.to_string(max_rows=60)
            return text
    return repr(value)
