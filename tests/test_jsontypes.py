"""JSON typed for mypy, checked by pydantic only as deep as a field's ``Shallow`` says.

A model field of messages, tool schemas or a plan is a ``JSONObject`` to the type checker and,
to pydantic, an object with string keys whose values are not walked: a request is built every
round and its history grows every round (docs/architecture.md, "Types").
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Annotated

import pytest
from pydantic import BaseModel, ValidationError

from jupyter_agent.base.answers import Answer
from jupyter_agent.base.errors import ResumeError
from jupyter_agent.base.jsontypes import JSONObject, Shallow
from jupyter_agent.llm.types import ChatRequest, Message, tool_calls_of

ROOT = Path(__file__).resolve().parents[1]


class _Held(BaseModel):
    """A model in a module that never names ``JSONValue``: its fields still resolve."""

    one: Annotated[JSONObject, Shallow(dict[str, object])]
    many: list[Message] = []


def test_a_shallow_field_checks_the_first_level_only() -> None:
    held = _Held(one={"a": {"deep": (1, 2)}}, many=[{"role": "user", "content": "hi"}])
    assert held.one == {"a": {"deep": (1, 2)}}  # below the first level: as given
    with pytest.raises(ValidationError):
        _Held(one=["not", "an", "object"])  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        _Held(one={}, many=["not a message"])  # type: ignore[list-item]


def test_a_request_checks_its_messages_as_before() -> None:
    history: list[Message] = [{"role": "user", "content": "x" * 10}] * 3
    request = ChatRequest(model="m", messages=history, tools=[{"type": "function"}])
    assert request.messages == history
    with pytest.raises(ValidationError):
        ChatRequest(model="m", messages=[None])  # type: ignore[list-item]


def test_tool_calls_of_keeps_the_objects() -> None:
    message: Message = {"role": "assistant", "tool_calls": [{"id": "a"}, "junk", None]}
    assert tool_calls_of(message) == [{"id": "a"}]
    assert tool_calls_of({"role": "assistant", "tool_calls": "junk"}) == []
    assert tool_calls_of({"role": "user"}) == []


def test_a_click_with_an_option_index_that_is_no_number_is_one_clear_error() -> None:
    # Before: int([1]) raised a TypeError from deep inside; now the answer is refused.
    assert Answer.from_message({"how": "option", "option_index": "2"}).option_index == 2
    with pytest.raises(ResumeError, match="option index"):
        Answer.from_message({"how": "option", "option_index": [1]})


def test_json_is_looked_at_before_use_for_mypy(tmp_path: Path) -> None:
    """A message, a request's fields and a stream chunk are JSON to mypy: reaching into one
    without looking is an error (before, ``dict[str, Any]`` let each line below through)."""
    src = tmp_path / "json_use.py"
    src.write_text(
        "from jupyter_agent.base.jsontypes import str_field\n"
        "from jupyter_agent.llm.types import ChatRequest, Message, tool_calls_of\n"
        "from jupyter_agent.llm.protocol import Transport\n\n"
        "def use(request: ChatRequest, transport: Transport) -> None:\n"
        "    message: Message = request.messages[0]\n"
        "    ok: str = str_field(message, 'content')\n"
        "    names = [call.get('function') for call in tool_calls_of(message)]\n"
        "    message['content'].upper()\n"                      # error 1: maybe not a str
        "    reply = transport.send({}, True)\n"
        "    reply['choices']\n"                                # error 2: maybe a stream
        "    (request.response_format or {})['type'].lower()\n",  # error 3: maybe not a str
        encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "mypy", "--strict", str(src)], cwd=ROOT,
                            capture_output=True, text=True, timeout=240)
    errors = [line for line in result.stdout.splitlines() if ": error:" in line]
    lines = sorted({int(line.split(":")[1]) for line in errors})
    assert lines == [9, 11, 12], result.stdout
