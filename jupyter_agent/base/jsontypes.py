"""JSON values, typed: what the model, the store, the wire and the cards exchange.

A message, a tool's arguments, a stored event or a card's state is JSON: ``JSONObject`` says so,
and mypy then asks the reader to look before it reaches in (``isinstance``, or one of the
narrowing helpers below), where an untyped ``dict`` let a wrong guess through to run time.

Pure ``typing``: importing this module costs nothing at kernel start (pydantic is imported
lazily, docs/architecture.md). Inside a pydantic model use ``pydantic.JsonValue``, which is the
same union and which pydantic can build a validator for.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, ForwardRef, TypeAlias, Union

if TYPE_CHECKING:
    from pydantic import GetCoreSchemaHandler
    from pydantic_core import CoreSchema

__all__ = [
    "JSONArray",
    "Shallow",
    "JSONObject",
    "JSONScalar",
    "JSONValue",
    "ReadOnlyJSON",
    "as_list",
    "as_object",
    "bool_field",
    "float_field",
    "int_field",
    "list_field",
    "object_field",
    "object_list",
    "str_field",
]

JSONScalar: TypeAlias = Union[None, bool, int, float, str]
"""A JSON leaf."""

if TYPE_CHECKING:
    JSONValue: TypeAlias = Union[
        None, bool, int, float, str, list["JSONValue"], dict[str, "JSONValue"]]
else:
    # The same alias whose self-references name this module: pydantic resolves them here
    # when it reads a ``Shallow`` JSON field of a model in any module (it evaluates every
    # reference of an annotation before the field's ``Shallow`` says what to check).
    _SELF = ForwardRef("JSONValue", module=__name__)
    JSONValue = Union[None, bool, int, float, str, list[_SELF], dict[str, _SELF]]
"""A JSON value of whichever kind (``json.loads`` gives one)."""

JSONObject: TypeAlias = dict[str, JSONValue]
"""A JSON object: a message, a tool call's arguments, an event's payload."""

JSONArray: TypeAlias = list[JSONValue]
"""A JSON array."""

ReadOnlyJSON: TypeAlias = Mapping[str, object]
"""A mapping read as JSON but not built by us (a pydantic dump, a third party's dict): its
values are looked at with ``isinstance`` or the helpers below before use."""


def as_object(value: object) -> JSONObject | None:
    """``value`` as a JSON object, or None when it is not a ``dict``."""
    return value if isinstance(value, dict) else None


def as_list(value: object) -> JSONArray:
    """``value`` as a JSON array, or ``[]`` when it is not a ``list``."""
    return value if isinstance(value, list) else []


def object_field(obj: Mapping[str, object], key: str) -> JSONObject:
    """``obj[key]`` when it is an object, else ``{}`` (absent, null or another type)."""
    value = obj.get(key)
    return value if isinstance(value, dict) else {}


def list_field(obj: Mapping[str, object], key: str) -> JSONArray:
    """``obj[key]`` when it is an array, else ``[]``."""
    value = obj.get(key)
    return value if isinstance(value, list) else []


def str_field(obj: Mapping[str, object], key: str, default: str = "") -> str:
    """``obj[key]`` when it is a string, else ``default``."""
    value = obj.get(key)
    return value if isinstance(value, str) else default


def int_field(obj: Mapping[str, object], key: str, default: int = 0) -> int:
    """``obj[key]`` when it is an integer (not a bool), else ``default``."""
    value = obj.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def float_field(obj: Mapping[str, object], key: str, default: float = 0.0) -> float:
    """``obj[key]`` when it is a number (not a bool), as a float, else ``default``."""
    value = obj.get(key)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return default


def bool_field(obj: Mapping[str, object], key: str, default: bool = False) -> bool:
    """``obj[key]`` when it is a bool, else ``default``."""
    value = obj.get(key)
    return value if isinstance(value, bool) else default


def object_list(obj: Mapping[str, object], key: str) -> list[JSONObject]:
    """The objects of the array ``obj[key]`` (``[]`` when it is not an array; elements that are
    not objects are skipped): a view's items, a row's decisions."""
    value = obj.get(key)
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


class Shallow:
    """Pydantic metadata for a JSON field checked only as deep as ``shape``. A model field
    that holds JSON is either ``pydantic.JsonValue`` (checked all through) or annotated with
    this: pydantic cannot build a validator for the recursive ``JSONValue`` itself.
    ``Annotated[list[JSONObject], Shallow(list[dict[str, object]])]`` is a list of JSON objects
    to mypy, and to pydantic a list of dicts with string keys whose values are not looked at
    (``object`` validates as anything).

    For the fields a run fills on every request or event (a chat history, tool schemas, a
    plan): validating every value as JSON copied the whole history on each request (a 45
    message history: 25 µs shallow, 250 µs deep). pydantic is not imported here: it calls
    :meth:`__get_pydantic_core_schema__` when it builds the model.
    """

    def __init__(self, shape: object) -> None:
        self.shape = shape

    def __get_pydantic_core_schema__(self, source: object,
                                     handler: GetCoreSchemaHandler) -> CoreSchema:
        return handler.generate_schema(self.shape)
