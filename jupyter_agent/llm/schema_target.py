"""Extraction targets: a pydantic model class, a JSON schema dict, or ``{field: description}``.

A JSON schema is turned into a pydantic model with ``create_model`` so both kinds validate the
same way (lax coercion, the same field errors). Supported: the basic types, ``enum`` and
``const``, arrays, nested objects, ``$ref`` into ``$defs``, type lists and ``anyOf``/``oneOf``,
and ``format`` date / date-time; anything else is accepted as any JSON value
(``pydantic.JsonValue``: what ``json.loads`` gives is always one).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from typing import Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, JsonValue, create_model

from ..base.jsontypes import JSONObject, JSONValue, as_object

__all__ = ["Target", "make_target"]

# The annotations below are built at run time from a schema: a type, a ``Literal[...]``, a
# ``Union[...]`` or ``list[...]`` of them, which pydantic reads. mypy has no type for "a type
# expression made at run time", so they are ``object`` here and only pydantic looks into them.
_SIMPLE: dict[str, object] = {
    "string": str, "integer": int, "number": float, "boolean": bool, "null": type(None),
}
_FORMATS: dict[str, object] = {"date": dt.date, "date-time": dt.datetime, "time": dt.time}


class Target:
    """What ``extract`` fills: the model to validate with and the schema shown to the model."""

    def __init__(self, model: type[BaseModel], schema: JSONObject, *, is_dict: bool,
                 defaults: JSONObject | None = None) -> None:
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

    def output(self, instance: BaseModel) -> BaseModel | JSONObject:
        """The user-facing value: the instance itself, or a JSON-ready dict for a schema."""
        if not self.is_dict:
            return instance
        data: JSONObject = instance.model_dump(mode="json", by_alias=True, exclude_unset=True)
        for key, value in self.defaults.items():
            data.setdefault(key, value)
        return data


def _type_name(title: str | None, fallback: str) -> str:
    name = re.sub(r"\W+", "_", title or fallback).strip("_") or fallback
    return name[0].upper() + name[1:] if name[0].isalpha() else f"M_{name}"


def _defs(root: Mapping[str, JSONValue], key: str) -> JSONObject:
    value = root.get(key)
    return value if isinstance(value, dict) else {}


class _Builder:
    def __init__(self, root: Mapping[str, JSONValue]) -> None:
        self.defs = {**_defs(root, "definitions"), **_defs(root, "$defs")}
        # Each $ref's annotation: its model class, or any JSON value while a recursive ref is
        # open.
        self.models: dict[str, object] = {}

    def annotation(self, node: JSONValue, name: str) -> object:
        if not isinstance(node, dict):
            return JsonValue
        if "$ref" in node:
            ref = str(node["$ref"]).rsplit("/", 1)[-1]
            if ref not in self.models:
                self.models[ref] = JsonValue  # a recursive ref stays open
                self.models[ref] = self.annotation(self.defs.get(ref, {}), ref)
            return self.models[ref]
        enum = node.get("enum")
        if isinstance(enum, list) and enum:
            return Literal[tuple(enum)]
        if "const" in node:
            return Literal[node["const"]]
        for key in ("anyOf", "oneOf"):
            if key in node:
                options = node[key]
                return self.union([self.annotation(n, name)
                                   for n in (options if isinstance(options, list) else [])])
        kind = node.get("type")
        if isinstance(kind, list):
            return self.union([self.annotation({**node, "type": k}, name) for k in kind])
        if kind == "array":
            # A type made at run time from the schema: mypy cannot check a computed item type.
            return list[self.annotation(node.get("items", {}), name + "Item")]  # type: ignore[misc]
        if kind == "object" or "properties" in node:
            if not node.get("properties"):
                return dict[str, JsonValue]
            return self.model(node, name)
        fmt = node.get("format")
        if kind == "string" and isinstance(fmt, str) and fmt in _FORMATS:
            return _FORMATS[fmt]
        return _SIMPLE.get(kind, JsonValue) if isinstance(kind, str) else JsonValue

    @staticmethod
    def union(options: list[object]) -> object:
        options = list(dict.fromkeys(options))
        return options[0] if len(options) == 1 else Union[tuple(options)]  # noqa: UP007  # built at run time

    def model(self, node: JSONObject, name: str) -> type[BaseModel]:
        required = node.get("required")
        required_keys = set(required) if isinstance(required, list) else set()
        properties = node.get("properties")
        # pydantic types ``create_model``'s field definitions as ``**kwargs`` beside its own
        # keyword options, so a dict of them unpacks into it only when its values are left untyped.
        fields: dict[str, Any] = {}
        # Internal names are f0, f1…, the schema's names are aliases: a property may be called
        # ``model_config``, ``schema`` or ``my field``, which cannot be attribute names.
        for i, (key, prop) in enumerate((properties if isinstance(properties, dict) else {}).items()):
            ann = self.annotation(prop, _type_name(key, f"Field{i}"))
            spec = as_object(prop) or {}
            description = spec.get("description")
            text = description if isinstance(description, str) and description else None
            if "default" in spec:
                fields[f"f{i}"] = (ann, Field(spec["default"], alias=key, description=text))
            elif key in required_keys:
                fields[f"f{i}"] = (ann, Field(..., alias=key, description=text))
            else:
                fields[f"f{i}"] = (self.union([ann, type(None)]),
                                   Field(None, alias=key, description=text))
        # ``additionalProperties: false`` is the schema's own word: an extra field is an error
        # (sent back to the model); unsaid, an extra field is dropped.
        extra: Literal["allow", "ignore", "forbid"] = (
            "allow" if node.get("additionalProperties") is True else
            "forbid" if node.get("additionalProperties") is False else "ignore")
        title = node.get("title")
        return create_model(
            _type_name(title if isinstance(title, str) else None, name),
            __config__=ConfigDict(populate_by_name=True, extra=extra),
            **fields,
        )


def _from_json_schema(schema: JSONObject) -> Target:
    properties = schema.get("properties")
    if not isinstance(properties, dict) or not properties:
        raise ValueError("a JSON schema must be of an object with at least one property")
    model = _Builder(schema).model(schema, "Extracted")
    defaults = {k: p["default"] for k, p in properties.items()
                if isinstance(p, dict) and "default" in p}
    return Target(model, schema, is_dict=True, defaults=defaults)


def make_target(schema: object) -> Target:
    """A ``Target`` from a pydantic model class, a JSON schema dict, or a plain
    ``{field: description}`` dict (optional string fields)."""
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return Target(schema, _json_schema(schema), is_dict=False)
    if isinstance(schema, dict):
        user: JSONObject = {str(k): v for k, v in schema.items()}
        if "properties" in user or user.get("type") == "object":
            return _from_json_schema(user)
        if user and all(isinstance(v, str) for v in user.values()):
            props: JSONObject = {k: {"type": "string", "description": v} for k, v in user.items()}
            return _from_json_schema({"type": "object", "properties": props})
    raise TypeError(
        "the schema must be a pydantic model class, a JSON schema dict or a {field: "
        "description} "
        f"dict, not {type(schema).__name__}"
    )


def _json_schema(model: type[BaseModel]) -> JSONObject:
    """The model's JSON schema (pydantic leaves its values untyped; they are JSON)."""
    schema: JSONObject = model.model_json_schema()
    return schema
