"""Lenient decoding of tool-argument text and one-line validation messages.

Models send tool arguments as JSON text, and small models often bend JSON (single quotes,
trailing commas, comments, a code fence, the object encoded twice). The internal tools accept
all of that, because a refused plan update costs a whole round.
"""

from __future__ import annotations

import json

import json5
from pydantic import ValidationError

from ...base.jsontypes import JSONValue

__all__ = ["format_validation_error", "parse_arguments_text"]


def _strip_fence(text: str) -> str:
    stripped = text.strip()
    if stripped.startswith("```") and stripped.endswith("```") and len(stripped) >= 6:
        body = stripped[3:-3]
        # Drop the info string of the fence ("```json").
        first_newline = body.find("\n")
        if first_newline != -1 and body[:first_newline].strip().isalnum():
            body = body[first_newline + 1 :]
        return body.strip()
    return stripped


def _loads(text: str) -> JSONValue:
    value: JSONValue  # what a JSON (or JSON5) parser gives
    try:
        value = json.loads(text)
    except ValueError:
        value = json5.loads(text)
    return value


def parse_arguments_text(text: str | None) -> JSONValue:
    """Decode raw tool-argument text leniently (JSON, then JSON5).

    Empty text decodes to ``{}``. A JSON string that itself holds JSON (arguments encoded
    twice) is decoded once more. Raises ``ValueError`` when the text cannot be decoded.
    """
    if text is None or not text.strip():
        return {}
    value = _loads(_strip_fence(text))
    if isinstance(value, str) and value.strip()[:1] in ("{", "["):
        value = _loads(value)
    return value


def _location(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(part) for part in loc)


def format_validation_error(exc: ValidationError) -> str:
    """A pydantic error as one line: ``field.path: message`` items joined with ``"; "``.

    Field paths use the JSON names the model wrote (``updates.0.update_step.stepId``), so the
    model can find and fix each field.
    """
    parts: list[str] = []
    for error in exc.errors(include_url=False):
        message = str(error.get("msg", ""))
        # Messages from our own validators carry pydantic's "Value error, " prefix.
        for prefix in ("Value error, ", "Assertion failed, "):
            message = message.removeprefix(prefix)
        where = _location(tuple(error.get("loc", ())))
        parts.append(f"{where}: {message}" if where else message)
    return "; ".join(parts)
