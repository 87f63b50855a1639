"""What a batch runs over, and how one row fills the cell's ``{field}`` placeholders.

``over`` may be a pandas or polars DataFrame (one item per row, its columns are the fields),
a list of dicts (their keys), or a list of plain values (the field ``{item}``). Fields the rows
do not have come from the notebook namespace, as in any cell. Every field is checked against
every row before anything runs, so a typo is one clear line, not a thousand failed items.
"""

from __future__ import annotations

import math
import string
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Literal, cast

from ..base.errors import ParameterError
from ..base.template import prompt_fields

__all__ = ["Inputs", "load_inputs", "template_fields", "check_fields", "render", "is_missing",
           "VALUE_FIELD"]

VALUE_FIELD = "item"
"""The field of each value when ``over`` is a list of plain values."""

FrameKind = Literal["pandas", "polars", "records", "values"]


@dataclass
class Inputs:
    """The rows of a batch, as dicts, and where they came from."""

    kind: FrameKind
    rows: list[dict[Hashable, object]]
    """One dict per row: a field's name is its key (a DataFrame's column may be named by a
    number: only a text key is a template field)."""
    columns: list[Hashable]
    source: object
    """The object given (the results keep its columns and, for pandas, its index)."""


def _module(obj: object) -> str:
    return type(obj).__module__.split(".")[0]


def load_inputs(over: object, name: str = "over") -> Inputs:
    """Read ``over`` into rows; raise :class:`ParameterError` naming ``name`` for anything
    that is not a table or a list (a string, a dict, a number...)."""
    # A frame's library is loaded already when ``over`` is one of its frames: no import cost.
    # Neither library is a dependency of ours: an import that fails reads ``over`` as rows.
    if _module(over) == "pandas":
        try:
            import pandas as pd
        except ImportError:  # pragma: no cover - a frame whose library cannot import
            pass
        else:
            if isinstance(over, pd.DataFrame):
                return Inputs("pandas", over.to_dict("records"), list(over.columns), over)
    if _module(over) == "polars":
        try:
            import polars as pl
        except ImportError:  # pragma: no cover
            pass
        else:
            if isinstance(over, pl.DataFrame):
                # Its column names are text, so its rows are ``dict[Hashable, object]`` too.
                return Inputs("polars", cast("list[dict[Hashable, object]]", over.to_dicts()),
                              list(over.columns), over)
    if isinstance(over, (str, bytes, Mapping)) or not isinstance(over, Iterable):
        kind = type(over).__name__
        raise ParameterError(f"{name} must be a DataFrame, a list of dicts or a list of values, "
                             f"not a {kind}.")
    values = list(over)  # a Series, a tuple, a generator: read once
    dicts = [isinstance(v, Mapping) for v in values]
    if values and all(dicts):
        rows: list[dict[Hashable, object]] = [dict(v) for v in values]
        columns: list[Hashable] = []
        for row in rows:
            columns.extend(k for k in row if k not in columns)
        return Inputs("records", rows, columns, values)
    if any(dicts):
        first = next(i for i, d in enumerate(dicts) if d != dicts[0])
        what = ("a dict", "not a dict")
        raise ParameterError(f"{name}: row {first + 1} is {what[not dicts[first]]} but row 1 is "
                             f"{what[not dicts[0]]}; give all dicts or all plain values.")
    return Inputs("values", [{VALUE_FIELD: v} for v in values], [VALUE_FIELD], values)


def template_fields(template: str) -> list[str]:
    """The root names of the template's ``{field}`` placeholders, in order, without repeats.

    Raises:
        ParameterError: unbalanced braces, an empty / positional ``{}``, or a field whose name
            looks like a secret (``{api_key}``), as in a plain cell.
    """
    return prompt_fields(template, "the template")


def check_fields(template: str, inputs: Inputs, namespace: Mapping[str, object]) -> list[str]:
    """The template's fields, checked: each is in every row, or in no row and in
    ``namespace``.

    Raises:
        ParameterError: one line naming the field and the first row without it.
    """
    fields = template_fields(template)
    for f in fields:
        missing = next((i for i, row in enumerate(inputs.rows) if f not in row), None)
        if missing is None:
            continue
        if all(f not in row for row in inputs.rows):
            if f in namespace:
                continue  # a notebook variable, the same for every row
            have = ", ".join(str(c) for c in inputs.columns) or "none"
            raise ParameterError(f"Unknown field {{{f}}} in the template: the rows have the "
                                 f"fields {have}, and no notebook variable has that name.")
        # Some rows have it: a row without it is a hole in the data, never a cue to take a
        # notebook variable of the same name instead.
        have = ", ".join(str(k) for k in inputs.rows[missing]) or "none"
        raise ParameterError(f"Row {missing + 1} has no field {{{f}}} (its fields: {have}).")
    return fields


def is_missing(value: object) -> bool:
    """``None``, NaN, ``NaT`` or ``pd.NA``: a cell of the table with no value."""
    if value is None:
        return True
    if isinstance(value, float):
        return math.isnan(value)
    try:
        if value != value:  # NaN of any float type, NaT
            return True
    except Exception:  # pd.NA: its comparisons are ambiguous
        pass
    return type(value).__name__ in ("NAType", "NaTType")


def render(template: str, fields: list[str], row: Mapping[Hashable, object],
           namespace: Mapping[str, object]) -> str:
    """The prompt of one row: row fields first, then notebook variables.

    Raises:
        ValueError: a field this row uses has no value (NaN, None), or a ``{field.attr}`` /
            ``{field[key]}`` part failed; the item fails with this message, others go on.
    """
    values: dict[str, object] = {}
    for f in fields:
        if f in row:
            if is_missing(row[f]):
                raise ValueError(f"the field {{{f}}} has no value in this row ({row[f]!r})")
            values[f] = row[f]
        else:
            values[f] = namespace[f]
    from ..base.secrets import filled_in_secret, mask

    try:
        filled = string.Formatter().vformat(template, (), values)
    except Exception as exc:  # {text.upper} on a number, {d[key]} with no key...
        raise ValueError(f"could not fill the template: {type(exc).__name__}: "
                         f"{mask(str(exc))}") from None
    if filled_in_secret(template, filled):
        raise ValueError("a {field} of the template filled in a secret (a key or token the "
                         "kernel knows): it is never put into a prompt")
    return filled
