"""Tool schemas from plain functions: signature + type hints + docstring -> pydantic model.

The arguments model is built with ``pydantic.create_model``, so validation and the JSON schema
come from one place. Docstring parameter descriptions are read from Google (``Args:``) or NumPy
(``Parameters`` + dashes) sections.
"""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from ..base.errors import ToolError
from ..base.jsontypes import JSONObject

__all__ = ["parse_docstring", "build_args_model", "strict_schema"]

_SECTION = re.compile(r"^\s*(Args|Arguments|Parameters|Params)\s*:?\s*$", re.IGNORECASE)
_OTHER_SECTION = re.compile(
    r"^\s*(Returns?|Raises|Yields|Examples?|Notes?|See Also|Warnings?)\s*:?\s*$", re.IGNORECASE
)
_GOOGLE_PARAM = re.compile(r"^\s*(\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(.*)$")
_NUMPY_PARAM = re.compile(r"^\s*(\w+)\s*(:.*)?$")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a docstring into (description, {param: description}).

    The description is everything before the first section heading (all paragraphs), so a
    tool's longer explanation reaches the model too.
    """
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    desc: list[str] = []
    params: dict[str, str] = {}
    i = 0
    while i < len(lines) and not _SECTION.match(lines[i]) and not _OTHER_SECTION.match(lines[i]):
        desc.append(lines[i])
        i += 1
    current: str | None = None
    in_params = False
    numpy = False
    base = -1  # indent of parameter lines in a Google section
    while i < len(lines):
        line = lines[i]
        if _SECTION.match(line):
            in_params = True
            numpy = i + 1 < len(lines) and set(lines[i + 1].strip()) == {"-"}
            i += 2 if numpy else 1
            current = None
            base = -1
            continue
        if _OTHER_SECTION.match(line):
            in_params = False
            i += 1
            continue
        if in_params and line.strip():
            indent = len(line) - len(line.lstrip())
            if numpy:
                m = _NUMPY_PARAM.match(line)
                if indent == 0 and m:
                    current = m.group(1)
                    params[current] = ""
                elif current:
                    params[current] = (params[current] + " " + line.strip()).strip()
            else:
                m = _GOOGLE_PARAM.match(line)
                if m and (base < 0 or indent <= base):
                    current = m.group(1).lstrip("*")
                    params[current] = m.group(3).strip()
                    base = indent
                elif current:
                    params[current] = (params[current] + " " + line.strip()).strip()
        i += 1
    return "\n".join(desc).strip(), params


def build_args_model(fn: Callable[..., object], name: str, param_docs: dict[str, str],
                     skip_first: bool = False) -> type[BaseModel]:
    """A pydantic model of ``fn``'s parameters (``*args``/``**kwargs`` are refused)."""
    sig = inspect.signature(fn)
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception:  # unresolvable forward refs: fall back to raw annotations
        hints = {}
    # The dynamic type: create_model's field keywords share one ``**`` with ``__config__``,
    # ``__doc__``, …, so a dict unpacked into it must fit all their types (pydantic's signature).
    fields: dict[str, Any] = {}
    params = list(sig.parameters.values())
    if skip_first and params:
        params = params[1:]
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise ToolError(f"Tool {name!r}: *args/**kwargs cannot be described to a model; "
                            "name every parameter.")
        ann = hints.get(p.name, p.annotation)
        if ann is inspect.Parameter.empty:
            ann = object  # documented default: any JSON value (pydantic reads ``object`` so)
        default = ... if p.default is inspect.Parameter.empty else p.default
        fields[p.name] = (ann, Field(default, description=param_docs.get(p.name) or None))
    model_name = "".join(part.capitalize() for part in re.split(r"\W+", name) if part) + "Args"
    return create_model(model_name or "ToolArgs", __config__=ConfigDict(extra="forbid"), **fields)


def strict_schema(model: type[BaseModel]) -> JSONObject:
    """The model's JSON schema, tidied for function calling (titles removed, no extra keys)."""
    schema = model.model_json_schema()
    _strip_titles(schema)
    schema.setdefault("properties", {})
    schema["additionalProperties"] = False
    return schema


def _strip_titles(node: object) -> None:
    if isinstance(node, dict):
        if isinstance(node.get("title"), str):
            node.pop("title")
        for key, value in list(node.items()):
            if key == "properties" and isinstance(value, dict):
                for prop in value.values():
                    _strip_titles(prop)
            else:
                _strip_titles(value)
    elif isinstance(node, list):
        for item in node:
            _strip_titles(item)
