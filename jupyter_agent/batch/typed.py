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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel

from ..llm.structured import Checked, OutputSpec
from .item import OUTCOME_FIELDS, Outcome

if TYPE_CHECKING:
    from .results import Table

__all__ = ["TypedColumns", "typed_columns", "apply_dtypes", "column_of", "CHECKED"]

CHECKED = frozenset({"done", "max_rounds", "incomplete", "invalid"})
"""Statuses whose answer is read back (``invalid``: what failed goes in ``errors``)."""


_TAKEN = frozenset({*OUTCOME_FIELDS, "model", "score", "errors", "judge_score", "judge_reason"})
"""The batch's own columns: a field of the same name is ``output_<name>``."""


def column_of(field: str) -> str:
    """The results column of the schema's field ``field`` (renamed when the batch has a
    column of that name: its values would be overwritten, or typed as the field)."""
    return f"output_{field}" if field in _TAKEN else field


@dataclass
class TypedColumns:
    """The field columns, the ``errors`` column and each item's check."""

    columns: dict[str, list[object]]
    checks: list[Checked | None]


def typed_columns(spec: OutputSpec, outcomes: Sequence[Outcome]) -> TypedColumns:
    """One column per field (``None`` where an item has no valid value) and ``errors``."""
    checks: list[Checked | None] = []
    for o in outcomes:
        checks.append(spec.check(str(o.get("answer") or "")) if o.get("status") in CHECKED
                      else None)
    cols: dict[str, list[object]] = {}
    for name, _ in spec.fields:
        cols[column_of(name)] = [_value(c, name) for c in checks]
    cols["errors"] = [("; ".join(c.errors) if c is not None and c.errors else None)
                      for c in checks]
    return TypedColumns(cols, checks)


def _value(check: Checked | None, name: str) -> object:
    if check is None or not check.valid:
        return None
    value: object = check.value
    if isinstance(value, dict):
        return value.get(name)
    if not isinstance(value, BaseModel):  # (a checked answer is one or the other)
        return None
    field = _attr_of(type(value), name)
    return getattr(value, field, None)


def _attr_of(model: type[BaseModel], alias: str) -> str:
    for attr, info in model.model_fields.items():
        if (info.alias or attr) == alias:
            return str(attr)
    return alias


_Kind = Literal["category", "boolean", "Int64", "float64", "string", "datetime", "object"]
"""A field's dtype family: a pandas dtype name, or ``datetime`` (``to_datetime``) or
``object`` (left alone)."""


def _kind(annotation: object) -> _Kind:
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


def apply_dtypes(frame: Table, spec: OutputSpec) -> Table:
    """Give a pandas frame's field columns the dtypes of their fields (others untouched)."""
    try:
        import pandas as pd
    except ImportError:  # no pandas: the results are a list of records, nothing to type
        return frame
    if not isinstance(frame, pd.DataFrame):  # a polars frame keeps polars' own inference
        return frame

    for field, annotation in spec.fields:
        name = column_of(field)
        if name not in frame.columns:
            continue
        kind = _kind(annotation)
        col = frame[name]
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


def _aware(col: Iterable[object]) -> bool:
    return any(isinstance(v, dt.datetime) and v.tzinfo is not None for v in col)
