"""Extraction targets: a pydantic model class, a JSON schema dict, or ``{field: description}``.

A JSON schema is turned into a pydantic model with ``create_model`` so both kinds validate the
same way (lax coercion, the same field errors). Supported: the basic types, ``enum`` and
``const``, arrays, nested objects, ``$ref`` into ``$defs``, type lists and ``anyOf``/``oneOf``,
and ``format`` date / date-time; anything else is accepted as is.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, create_model

__all__ = ["Target", "make_target"]

_SIMPLE: dict[str, Any] = {
    "string": str, "integer": int, "number": float, "boolean": bool, "null": type(None),
}
_FORMATS: dict[str, Any] = {"date": dt.date, "date-time": dt.datetime, "time": dt.time}


class Target:
    """What ``extract`` fills: the model to validate with and the schema shown to the model."""

    def __init__(self, model: type[BaseModel], schema: dict[str, Any], *, is_dict: bool,
                 defaults: dict[str, Any] | None = None) -> None:
        self.model = model
        self.schema = schema
        self.is_dict = is_dict
        """True when the user gave a JSON schema: results are plain dicts."""
        self.defaults = defaults or {}
        """Schema defaults of top-level fields, put into dict results when the key is missing."""

    @property
    def keys(self) -> set[str]:
        """The top-level field names the model may produce (aliases where set)."""
        return {f.alias or name for name, f in self.model.model_fields.items()}

    @property
    def required(self) -> set[str]:
        """Top-level fields that must be produced (no default)."""
        return {f.alias or name for name, f in self.model.model_fields.items() if f.is_required()}

    def output(self, instance: BaseModel) -> Any:
        """The user-facing value: the instance itself, or a JSON-ready dict for a schema."""
        if not self.is_dict:
            return instance
        data = instance.model_dump(mode="json", by_alias=True, exclude_unset=True)
        for key, value in self.defaults.items():
            data.setdefault(key, value)
        return data


def _type_name(title: str | None, fallback: str) -> str:
    name = re.sub(r"\W+", "_", title or fallback).strip("_") or fallback
    return name[0].upper() + name[1:] if name[0].isalpha() else f"M_{name}"


class _Builder:
    def __init__(self, root: dict[str, Any]) -> None:
        self.defs = {**root.get("definitions", {}), **root.get("$defs", {})}
        # Each $ref's annotation: its model class, or ``Any`` while a recursive ref is open.
        self.models: dict[str, Any] = {}

    def annotation(self, node: Any, name: str) -> Any:
        if not isinstance(node, dict):
            return Any
        if "$ref" in node:
            ref = str(node["$ref"]).rsplit("/", 1)[-1]
            if ref not in self.models:
                self.models[ref] = Any  # a recursive ref stays open
                self.models[ref] = self.annotation(self.defs.get(ref, {}), ref)
            return self.models[ref]
        if node.get("enum"):
            return Literal[tuple(node["enum"])]
        if "const" in node:
            return Literal[node["const"]]
        for key in ("anyOf", "oneOf"):
            if key in node:
                return self.union([self.annotation(n, name) for n in node[key]])
        kind = node.get("type")
        if isinstance(kind, list):
            return self.union([self.annotation({**node, "type": k}, name) for k in kind])
        if kind == "array":
            # A type made at run time from the schema: mypy cannot check a computed item type.
            return list[self.annotation(node.get("items", {}), name + "Item")]  # type: ignore[misc]
        if kind == "object" or "properties" in node:
            if not node.get("properties"):
                return dict[str, Any]
            return self.model(node, name)
        if kind == "string" and node.get("format") in _FORMATS:
            return _FORMATS[node["format"]]
        return _SIMPLE.get(kind, Any) if isinstance(kind, str) else Any

    @staticmethod
    def union(options: list[Any]) -> Any:
        options = list(dict.fromkeys(options))
        return options[0] if len(options) == 1 else Union[tuple(options)]  # noqa: UP007  # built at run time

    def model(self, node: dict[str, Any], name: str) -> type[BaseModel]:
        required = set(node.get("required") or ())
        fields: dict[str, Any] = {}
        # Internal names are f0, f1…, the schema's names are aliases: a property may be called
        # ``model_config``, ``schema`` or ``my field``, which cannot be attribute names.
        for i, (key, prop) in enumerate(node["properties"].items()):
            ann = self.annotation(prop, _type_name(key, f"Field{i}"))
            info: dict[str, Any] = {"alias": key}
            if isinstance(prop, dict) and prop.get("description"):
                info["description"] = prop["description"]
            if isinstance(prop, dict) and "default" in prop:
                fields[f"f{i}"] = (ann, Field(prop["default"], **info))
            elif key in required:
                fields[f"f{i}"] = (ann, Field(..., **info))
            else:
                fields[f"f{i}"] = (self.union([ann, type(None)]), Field(None, **info))
        extra: Literal["allow", "ignore"] = (
            "allow" if node.get("additionalProperties") is True else "ignore")
        return create_model(
            _type_name(node.get("title"), name),
            __config__=ConfigDict(populate_by_name=True, extra=extra),
            **fields,
        )


def _from_json_schema(schema: dict[str, Any]) -> Target:
    if not isinstance(schema.get("properties"), dict) or not schema["properties"]:
        raise ValueError("extract needs an object schema with at least one property")
    model = _Builder(schema).model(schema, "Extracted")
    defaults = {k: p["default"] for k, p in schema["properties"].items()
                if isinstance(p, dict) and "default" in p}
    return Target(model, schema, is_dict=True, defaults=defaults)


def make_target(schema: Any) -> Target:
    """A ``Target`` from a pydantic model class, a JSON schema dict, or a plain
    ``{field: description}`` dict (optional string fields)."""
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return Target(schema, schema.model_json_schema(), is_dict=False)
    if isinstance(schema, dict):
        if "properties" in schema or schema.get("type") == "object":
            return _from_json_schema(schema)
        if schema and all(isinstance(v, str) for v in schema.values()):
            props = {k: {"type": "string", "description": v} for k, v in schema.items()}
            return _from_json_schema({"type": "object", "properties": props})
    raise TypeError(
        "extract needs a pydantic model class, a JSON schema dict or a {field: description} "
        f"dict, not {type(schema).__name__}"
    )
