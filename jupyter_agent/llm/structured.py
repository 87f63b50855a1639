"""Typed answers: what a run's final answer must be, how each server is asked for it, and the
check of what came back (docs/behaviour.md §10.14).

One :class:`OutputSpec` is made from what the user gave (a pydantic model class or a JSON
schema dict) and travels with the turn. It gives the request a ``response_format`` of type
``json_schema``; the client (:func:`typed_request`) turns that into what the server can do:

* ``native``: sent as is (OpenAI's structured outputs and the servers that copy it);
* ``grammar``: the embedded llama.cpp server gets ``{"type": "json_object", "schema": ...}``,
  which it compiles into a grammar, so even a small model can only write a valid shape;
* ``tool``: a profile without structured outputs (or a server that answered 400 to it) gets
  one forced ``final_answer`` tool whose parameters are the schema; its arguments become the
  answer text (:func:`typed_response`), so the agents only ever see text.

:meth:`OutputSpec.check` parses and validates an answer; the turn sends the errors back and
asks again (``schema_retries`` times) before the run ends ``invalid``.
"""

from __future__ import annotations

import json
import re
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, PydanticUserError, ValidationError

from ..base.jsontypes import JSONObject, JSONValue
from ..base.state import STATE
from .json_text import parse_json_object
from .schema_target import Target, make_target
from .types import ChatRequest, ChatResponse

if TYPE_CHECKING:
    from collections.abc import Iterable

    from pydantic_core import ErrorDetails

__all__ = ["OutputSpec", "Checked", "FINAL_ANSWER_TOOL", "SCHEMA_RETRIES", "SchemaMode",
           "output_spec", "typed_request", "bounded", "GRAMMAR_MAX_STRING", "typed_response",
           "schema_refused", "retry_message",
           "MAX_ANSWER_CHARS", "MAX_ANSWER_DEPTH"]

SchemaMode = Literal["native", "grammar", "tool"]

FINAL_ANSWER_TOOL = "final_answer"
"""The tool a server without structured outputs answers through (its arguments: the answer)."""

SCHEMA_RETRIES = 2
"""Times a failed answer is sent back with its errors before the run ends ``invalid``."""

MAX_ANSWER_CHARS = 1_000_000
"""A typed answer longer than this is not parsed (an error instead): parsing a runaway
generation would cost seconds and a retry would only send it back."""

MAX_ANSWER_DEPTH = 100
"""Objects and arrays a typed answer may nest, at most. A deeper one (~950 levels) is refused
before validation: copying, dumping or drawing it would exhaust Python's stack (a
RecursionError in the live view, a 133-line traceback), and no schema needs it."""
_MAX_ERROR_CHARS = 300
"""One error line sent back to the model at most (a deep field's path is shortened first)."""

_FORMAT_WORDS = re.compile(r"response[_ ]?format|json[_ ]?schema|structured[_ ]outputs?",
                           re.IGNORECASE)
"""What a server's error names when it refuses the response format itself."""


@dataclass(frozen=True)
class Checked:
    """One answer checked against the schema."""

    value: BaseModel | JSONObject | None = None
    """The validated instance (a dict for a JSON-schema target); ``None`` when invalid."""
    data: JSONObject = field(default_factory=dict)
    """The instance as JSON (what the card and the saved bundle show)."""
    errors: tuple[str, ...] = ()
    """One line per problem (``field: message``); empty when valid."""

    @property
    def valid(self) -> bool:
        """Whether the answer is an instance of the schema."""
        return not self.errors


class OutputSpec:
    """What a typed run's final answer must be (built once per turn by :func:`output_spec`)."""

    def __init__(self, target: Target, name: str) -> None:
        self.target = target
        self.name = name
        """The schema's name as sent to the server (letters, digits, ``_`` and ``-``)."""
        self.schema: JSONObject = target.schema
        self._format: JSONObject = {
            "type": "json_schema",
            "json_schema": {"name": name, "schema": self.schema, "strict": False}}

    @property
    def response_format(self) -> JSONObject:
        """The ``response_format`` of every request of the turn (a copy: callers may keep it)."""
        return dict(self._format)

    @property
    def fields(self) -> list[tuple[str, object]]:
        """``(name, annotation)`` of the top-level fields, in order (the table's columns); an
        annotation is a type or a typing form (``list[int]``, ``Literal[...]``)."""
        return [(f.alias or n, f.annotation) for n, f in self.target.model.model_fields.items()]

    def check(self, text: str) -> Checked:
        """Parse ``text`` as JSON and validate it; never raises."""
        if len(text) > MAX_ANSWER_CHARS:
            return Checked(errors=(f"the answer is {len(text):,} characters long: too long to "
                                   "be the JSON object asked for",))
        too_deep = (f"the answer nests more than {MAX_ANSWER_DEPTH} levels of objects and "
                    "arrays: too deep to be the JSON object asked for",)
        try:
            obj = _loads(text)
        except RecursionError:  # nested deeper than Python's stack
            return Checked(errors=too_deep)
        if obj is None:
            return Checked(errors=("the answer is not a JSON object",))
        if _depth(obj) > MAX_ANSWER_DEPTH:
            return Checked(errors=too_deep)
        try:  # Python reads NaN and Infinity; the card's and the bundle's JSON cannot hold them
            json.dumps(obj, allow_nan=False)
        except ValueError:
            return Checked(errors=("the answer holds NaN or Infinity, which JSON does not allow",))
        try:
            inst = self.target.model.model_validate(obj)
            value = self.target.output(inst)
            data: JSONObject = (value if isinstance(value, dict)
                                else inst.model_dump(mode="json", by_alias=True))
        except ValidationError as exc:
            return Checked(data=obj, errors=tuple(_error_line(e) for e in exc.errors()))
        except Exception as exc:  # noqa: BLE001  # the user's own validator: any exception
            return Checked(data=obj, errors=(
                f"the schema's validator raised {type(exc).__name__}: {str(exc)[:200]}",))
        return Checked(value=value, data=data)


def _loads(text: str) -> JSONObject | None:
    """The answer's JSON object: plain JSON first (the usual, fast case), else the tolerant
    reader (fences, chatter around it).

    Raises:
        RecursionError: the text nests deeper than Python's stack.
    """
    obj: JSONValue
    try:
        obj = json.loads(text)
    except ValueError:
        obj = parse_json_object(text)
    return obj if isinstance(obj, dict) else None


def _depth(obj: JSONValue) -> int:
    """How deep ``obj``'s objects and arrays nest (without recursion: it may be deep)."""
    deepest, stack = 0, [(obj, 1)]
    while stack:
        node, d = stack.pop()
        children: Iterable[JSONValue]
        if isinstance(node, dict):
            children = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        deepest = max(deepest, d)
        if deepest > MAX_ANSWER_DEPTH:
            return deepest
        stack.extend((c, d + 1) for c in children if isinstance(c, (dict, list)))
    return deepest


def _error_line(err: ErrorDetails) -> str:
    """One short line per validation error: a long path keeps its two first and three last
    parts (the model needs where, not every step), the input shown is cut, the line too."""
    loc = [str(p) for p in err.get("loc", ())]
    if len(loc) > 6:
        loc = [*loc[:2], f"…({len(loc) - 5} more)…", *loc[-3:]]
    where = ".".join(loc)
    msg = str(err.get("msg", "invalid"))
    got = ""
    if err.get("type") != "missing" and "input" in err:
        try:
            shown = json.dumps(err["input"], ensure_ascii=False, default=str)
        except (RecursionError, ValueError):
            shown = type(err["input"]).__name__
        got = f" (got {shown[:120]})"
    line = f"{where}: {msg}{got}" if where else f"{msg}{got}"
    return line if len(line) <= _MAX_ERROR_CHARS else line[:_MAX_ERROR_CHARS - 1] + "…"


_BY_CLASS: weakref.WeakKeyDictionary[type, OutputSpec] = STATE.slot(
    "llm.output_specs", weakref.WeakKeyDictionary)
"""The spec of each model class seen (a spec builds its JSON schema: about 1 ms, every turn)."""
_BY_SCHEMA: dict[str, OutputSpec] = STATE.slot("llm.output_schemas", dict)
_MAX_SCHEMAS = 64


def output_spec(output: object) -> OutputSpec:
    """The spec of ``output``: a pydantic model class or a JSON schema dict (made once per
    class or schema and kept: a batch's thousand items share one).

    Raises:
        TypeError: ``output`` is neither (the caller turns it into a parameter error).
        ValueError: a schema without properties.
    """
    if isinstance(output, OutputSpec):
        return output
    if isinstance(output, type):
        found = _BY_CLASS.get(output)
        if found is None:
            found = _BY_CLASS[output] = _make_spec(output)
        return found
    if isinstance(output, dict):
        try:
            key = json.dumps(output, sort_keys=True, default=str)
        except (TypeError, ValueError):
            return _make_spec(output)
        found = _BY_SCHEMA.get(key)
        if found is None:
            if len(_BY_SCHEMA) >= _MAX_SCHEMAS:
                _BY_SCHEMA.clear()
            found = _BY_SCHEMA[key] = _make_spec(output)
        return found
    return _make_spec(output)


def _make_spec(output: object) -> OutputSpec:
    if isinstance(output, dict) and not ("properties" in output or output.get("type") == "object"):
        raise TypeError("a pydantic model class or a JSON schema of an object is needed")
    try:
        target = make_target(output)
    except PydanticUserError as exc:  # a field pydantic has no JSON schema for (a callable)
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise TypeError(f"{getattr(output, '__name__', 'the schema')} cannot be sent as a "
                        f"JSON schema: {first}") from None
    except TypeError:
        raise TypeError("a pydantic model class or a JSON schema dict is needed, not "
                        f"{type(output).__name__}") from None
    title = (output.__name__ if isinstance(output, type) else
             str(output.get("title") or "answer") if isinstance(output, dict) else "answer")
    name = re.sub(r"[^A-Za-z0-9_-]+", "_", title).strip("_")[:64] or "answer"
    return OutputSpec(target, name)


def retry_message(errors: tuple[str, ...] | list[str]) -> str:
    """The user message that sends a failed answer's errors back."""
    listed = "\n".join(f"- {e}" for e in list(errors)[:20])
    return ("Your answer does not match the required JSON schema:\n" + listed +
            "\nAnswer again with only the corrected JSON object.")


# ------------------------------------------------------------------ the client's side
def _schema_of(request: ChatRequest) -> JSONObject | None:
    rf = request.response_format
    if not rf or rf.get("type") != "json_schema":
        return None
    js = rf.get("json_schema")
    schema = js.get("schema") if isinstance(js, dict) else None
    return schema if isinstance(schema, dict) else None


GRAMMAR_MAX_STRING = 200
"""Characters a free string may have in a grammar (the embedded model): a small model can
otherwise fill one field until its token limit and never close the object."""
GRAMMAR_MAX_ITEMS = 20
"""Items an unbounded array may have in a grammar, for the same reason."""


def bounded(node: JSONValue) -> JSONValue:
    """A copy of a JSON schema whose free strings and arrays have an upper bound (the
    grammar's; the check still validates against the user's schema)."""
    if isinstance(node, list):
        return [bounded(n) for n in node]
    if not isinstance(node, dict):
        return node
    out: JSONObject = {k: bounded(v) for k, v in node.items()}
    free = not any(k in out for k in ("enum", "const", "format", "pattern"))
    if out.get("type") == "string" and free and "maxLength" not in out:
        out["maxLength"] = GRAMMAR_MAX_STRING
    if out.get("type") == "array" and "maxItems" not in out:
        out["maxItems"] = GRAMMAR_MAX_ITEMS
    return out


def typed_request(request: ChatRequest, mode: SchemaMode) -> ChatRequest:
    """``request`` as the server of ``mode`` takes a typed answer (unchanged when it asks for
    no JSON schema, or in ``native`` mode)."""
    schema = _schema_of(request)
    if schema is None or mode == "native":
        return request
    if mode == "grammar":
        return request.model_copy(update={
            "response_format": {"type": "json_object", "schema": bounded(schema)}})
    tool: JSONObject = {"type": "function", "function": {
        "name": FINAL_ANSWER_TOOL,
        "description": "Give your final answer: call this once, with the answer as arguments.",
        "parameters": schema}}
    tools = [*(request.tools or []), tool]
    # Alone it is forced; beside other tools the model picks, but must call one of them.
    choice: str | JSONObject
    if not request.tools or request.tool_choice == "none":
        tools = [tool]
        choice = {"type": "function", "function": {"name": FINAL_ANSWER_TOOL}}
    else:
        choice = request.tool_choice if isinstance(request.tool_choice, dict) else "required"
    return request.model_copy(update={"response_format": None, "tools": tools,
                                      "tool_choice": choice, "parallel_tool_calls": None})


def typed_response(resp: ChatResponse) -> ChatResponse:
    """A tool-mode answer as the agents expect it: the ``final_answer`` call's arguments as
    the text (the first such call; other calls of the same response are dropped with it)."""
    for call in resp.tool_calls:
        if call.name == FINAL_ANSWER_TOOL:
            resp.text = call.arguments or "{}"
            resp.tool_calls = []
            resp.finish_reason = "stop"
            break
    return resp


def schema_refused(resp: ChatResponse) -> bool:
    """Whether ``resp`` is a server refusing the ``response_format``: a 400/422 whose message
    names it. Every other 400 (a context too long, a bad temperature) is about something else:
    it is shown as the server said it, and the mode stays."""
    if resp.status_code not in (400, 422) or not resp.error:
        return False
    return bool(_FORMAT_WORDS.search(resp.error))
