"""Typed columns of a batch (docs/behaviour.md §10.14): one column per field of the schema.

The fields are read back from each item's answer text (the JSON the model produced) with the
same check the run made, so items taken from the store on a re-run get their columns too. With
pandas, each column gets the dtype of its field: ``Int64``, ``float64``, ``boolean``,
``string``, ``datetime64``, ``category`` for an enum or ``Literal``; lists and nested models
stay Python objects.
"""

from __future__ import annotations

import datetime as dt
import enum
import types
import typing
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..llm.structured import Checked, OutputSpec

__all__ = ["TypedColumns", "typed_columns", "apply_dtypes", "CHECKED"]

CHECKED = frozenset({"done", "max_rounds", "incomplete", "invalid"})
"""Statuses whose answer is read back (``invalid``: what failed goes in ``errors``)."""


@dataclass
class TypedColumns:
    """The field columns, the ``errors`` column and each item's check."""

    columns: dict[str, list[Any]]
    checks: list[Checked | None]


def typed_columns(spec: OutputSpec, outcomes: Sequence[dict[str, Any]]) -> TypedColumns:
    """One column per field (``None`` where an item has no valid value) and ``errors``."""
    checks: list[Checked | None] = []
    for o in outcomes:
        checks.append(spec.check(str(o.get("answer") or "")) if o.get("status") in CHECKED
                      else None)
    cols: dict[str, list[Any]] = {}
    for name, _ in spec.fields:
        cols[name] = [_value(c, name) for c in checks]
    cols["errors"] = [("; ".join(c.errors) if c is not None and c.errors else None)
                      for c in checks]
    return TypedColumns(cols, checks)


def _value(check: Checked | None, name: str) -> Any:
    if check is None or not check.valid:
        return None
    value = check.value
    if isinstance(value, dict):
        return value.get(name)
    field = _attr_of(type(value), name)
    return getattr(value, field, None)


def _attr_of(model: Any, alias: str) -> str:
    for attr, info in model.model_fields.items():
        if (info.alias or attr) == alias:
            return str(attr)
    return alias


def _kind(annotation: Any) -> str:
    """The dtype family of a field's annotation."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return _kind(args[0]) if len(args) == 1 else "object"
    if origin is typing.Literal:
        return "category"
    if isinstance(annotation, type):
        if issubclass(annotation, enum.Enum):
            return "category"
        if issubclass(annotation, bool):
            return "boolean"
        if issubclass(annotation, int):
            return "Int64"
        if issubclass(annotation, float):
            return "float64"
        if issubclass(annotation, str):
            return "string"
        if issubclass(annotation, (dt.datetime, dt.date)):
            return "datetime"
    return "object"


def apply_dtypes(frame: Any, spec: OutputSpec) -> Any:
    """Give a pandas frame's field columns the dtypes of their fields (others untouched)."""
    try:
        import pandas as pd
    except ImportError:  # no pandas: the results are a list of records, nothing to type
        return frame
    if not isinstance(frame, pd.DataFrame):  # a polars frame keeps polars' own inference
        return frame

    for name, annotation in spec.fields:
        if name not in frame.columns:
            continue
        kind = _kind(annotation)
        col: Any = frame[name]
        try:
            if kind == "datetime":
                frame[name] = pd.to_datetime(col, utc=_aware(col))
            elif kind == "category":
                frame[name] = col.map(lambda v: v.value if isinstance(v, enum.Enum) else v
                                      ).astype("category")
            elif kind != "object":
                frame[name] = col.astype(kind)
        except (TypeError, ValueError):
            continue  # a value the dtype cannot hold: the column stays as objects
    return frame


def _aware(col: Any) -> bool:
    return any(isinstance(v, dt.datetime) and v.tzinfo is not None for v in col)
