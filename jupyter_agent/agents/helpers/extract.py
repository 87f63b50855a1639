"""``extract``: fill a pydantic model (or a JSON schema) from text with one model call.

docs/behaviour.md §7.3: the result is a validated instance of the user's model (a dict
for a JSON schema) and ``success`` is true when every required field is present and valid.
When the answer does not validate, the model gets the field errors back once and may correct
itself; that is the only second call.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Generic, overload

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError
from typing_extensions import TypeVar

from ...base.errors import ModelBehaviorError
from ...base.jsontypes import JSONObject
from ...llm.json_text import parse_json_object
from ...llm.protocol import ModelClient
from ...llm.schema_target import Target, make_target
from ...llm.types import Message, Usage
from ._call import (
    EmptyInputError,
    History,
    add_usage,
    call_model,
    history_messages,
    resolve_client,
    squeeze_newlines,
)
from .prompts import extract_retry_prompt, extract_system_prompt

__all__ = ["ExtractResult", "FieldError", "extract"]

MODULE = "extract"

Value = TypeVar("Value", covariant=True, default=object)
"""What an extraction gives: the user's model class (``extract(text, Invoice)`` is an
``ExtractResult[Invoice]``), ``JSONObject`` for a JSON schema dict."""

Model = TypeVar("Model", bound=BaseModel)


class FieldError(BaseModel):
    """One problem with the model's answer, field by field."""

    field: str
    """Dotted path of the field (``items.0.price``); empty for the answer as a whole."""
    message: str
    type: str = ""
    """pydantic's error type (``missing``, ``float_parsing``…) or ``json_invalid``."""
    input: object = None
    """The offending value, when there was one (any Python value pydantic was given)."""

    def __str__(self) -> str:
        where = f"`{self.field}`: " if self.field else ""
        got = ""
        if self.type not in ("missing", "json_invalid") and self.input is not None:
            got = f" (got {json.dumps(self.input, ensure_ascii=False, default=str)[:200]})"
        return f"{where}{self.message}{got}"


class ExtractResult(BaseModel, Generic[Value]):
    """What ``extract`` returns: the value, whether it is complete, and what it cost.

    ``inv = extract(text, Invoice)``; then ``inv.value.total`` (or ``inv.unwrap().total``, which
    raises with the field errors when extraction failed).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    value: Value | None = None
    """The validated instance of the user's model, or a dict for a JSON schema; ``None``
    unless ``success``."""
    success: bool = False
    """True when every required field is present and valid."""
    data: dict[str, JsonValue] = Field(default_factory=dict)
    """The cleaned fields the model produced (even when validation failed)."""
    errors: list[FieldError] = Field(default_factory=list)
    """The problems left after the last attempt. With ``success`` true they concern optional
    fields, which were dropped."""
    raw: str = ""
    """The model's last answer text."""
    usage: Usage = Field(default_factory=Usage)
    """Tokens of all attempts together."""
    cost: float = 0.0
    """Cost of all attempts, each priced on its own."""
    attempts: int = 0
    """Model calls made: 1, or 2 when the first answer did not validate."""
    model: str = ""

    def unwrap(self) -> Value:
        """The value; raises ``ModelBehaviorError`` listing the field errors when not ``success``."""
        if not self.success:
            listed = "; ".join(str(e) for e in self.errors) or "no value"
            raise ModelBehaviorError(f"extract failed: {listed}")
        assert self.value is not None  # success: the value validated
        return self.value

    def __str__(self) -> str:
        # What a tool returns to the calling model: the fields, or what went wrong.
        if self.success:
            return json.dumps(self.data, ensure_ascii=False, default=str)
        return "Extraction failed: " + "; ".join(str(e) for e in self.errors)


class _Outcome:
    def __init__(self, data: JSONObject, instance: BaseModel | None,
                 errors: list[FieldError], parsed: bool) -> None:
        self.data, self.instance, self.errors, self.parsed = data, instance, errors, parsed


def _field_errors(exc: ValidationError) -> list[FieldError]:
    return [
        FieldError(field=".".join(str(p) for p in e["loc"]), message=e["msg"], type=e["type"],
                   input=None if e["type"] == "missing" else e.get("input"))
        for e in exc.errors()
    ]


def _clean(obj: JSONObject, target: Target) -> JSONObject:
    """Keys the schema does not know and empty-string values are dropped (§7.3)."""
    keep_unknown = target.model.model_config.get("extra") == "allow"
    keys = target.keys
    return {k: v for k, v in obj.items() if v != "" and (keep_unknown or k in keys)}


def _validate(data: JSONObject, target: Target) -> tuple[BaseModel | None, list[FieldError]]:
    try:
        return target.model.model_validate(data), []
    except ValidationError as exc:
        return None, _field_errors(exc)


def _check(text: str, target: Target) -> _Outcome:
    obj = parse_json_object(text)
    data = _clean(obj or {}, target)
    instance, errors = _validate(data, target)
    if obj is None:
        errors.insert(0, FieldError(field="", message="no JSON object found in the answer",
                                    type="json_invalid"))
    return _Outcome(data, instance, errors, obj is not None)


def _salvage(outcome: _Outcome, target: Target) -> _Outcome:
    """Drop optional fields that still fail, so the required ones can make a value."""
    required = target.required
    bad = {e.field.split(".", 1)[0] for e in outcome.errors if e.field}
    if not bad or bad & required:
        return outcome
    kept = {k: v for k, v in outcome.data.items() if k not in bad}
    instance, errors = _validate(kept, target)
    if instance is None:
        return outcome
    return _Outcome(kept, instance, outcome.errors + errors, outcome.parsed)


def _previous_value(previous: object) -> object:
    if isinstance(previous, ExtractResult):
        return previous.data or None
    if isinstance(previous, BaseModel):
        return previous.model_dump(mode="json", exclude_none=True)
    return previous


@overload
def extract(text: str, schema: type[Model], *, history: History = None, model: str | None = None,
            client: ModelClient | None = None, description: str | None = None,
            previous: object = None, retry: bool = True) -> ExtractResult[Model]: ...
@overload
def extract(text: str, schema: Mapping[str, object], *, history: History = None,
            model: str | None = None, client: ModelClient | None = None,
            description: str | None = None, previous: object = None, retry: bool = True
            ) -> ExtractResult[JSONObject]: ...
def extract(
    text: str,
    schema: type[BaseModel] | Mapping[str, object],
    *,
    history: History = None,
    model: str | None = None,
    client: ModelClient | None = None,
    description: str | None = None,
    previous: object = None,
    retry: bool = True,
) -> ExtractResult:
    """Extract structured data from ``text`` into ``schema`` with one model call.

    Args:
        text: The text to extract from (the newest user input).
        schema: A pydantic model class, a JSON schema dict (``properties``, ``required``,
            defaults, enums, arrays, nested objects), or a ``{field: description}`` dict.
        history: Earlier conversation (OpenAI-format messages); the last 6 rounds are sent.
        model: Profile name or model id; default ``JUPYTER_AGENT_MODEL``.
        client: A ``ModelClient`` to use instead of the default one.
        description: Extra instructions ("amounts in EUR", "dates as ISO").
        previous: The previous extraction (a result, instance or dict) for a follow-up.
        retry: Send the validation errors back once when the answer does not validate.

    Returns:
        An ``ExtractResult``; ``.value`` is the validated instance (a dict for a JSON schema).

    Raises:
        EmptyInputError: ``text`` is empty.
        ModelRequestError: The provider failed after retries.
    """
    if not text or not text.strip():
        raise EmptyInputError()
    target = make_target(schema)
    client = resolve_client(model, client)
    system = extract_system_prompt(target.schema, description=description,
                                   previous=_previous_value(previous))
    messages: list[Message] = [{"role": "system", "content": squeeze_newlines(system)},
                               *history_messages(history), {"role": "user", "content": text}]
    call = call_model(MODULE, messages, model=model, client=client)
    usage, cost, attempts = call.usage, call.cost, 1
    outcome = _check(call.text, target)
    if outcome.errors and retry:
        messages += [{"role": "assistant", "content": call.text.strip() or "{}"},
                     {"role": "user",
                      "content": extract_retry_prompt([str(e) for e in outcome.errors])}]
        call = call_model(MODULE, messages, model=model, client=client)
        usage, cost, attempts = add_usage(usage, call.usage), cost + call.cost, 2
        outcome = _check(call.text, target)
    if outcome.errors and outcome.instance is None:
        outcome = _salvage(outcome, target)
    success = outcome.instance is not None and outcome.parsed
    value = target.output(outcome.instance) if success and outcome.instance is not None else None
    if isinstance(value, dict):
        data = value
    elif isinstance(value, BaseModel):
        data = value.model_dump(mode="json", by_alias=True)
    else:
        data = outcome.data
    return ExtractResult(
        value=value,
        success=success,
        data=data,
        errors=outcome.errors,
        raw=call.text,
        usage=usage,
        cost=cost,
        attempts=attempts,
        model=call.model,
    )
