"""JSON typed for mypy, checked by pydantic only as deep as a field's ``Shallow`` says.

A model field of messages, tool schemas or a plan is a ``JSONObject`` to the type checker and,
to pydantic, an object with string keys whose values are not walked: a request is built every
round and its history grows every round (docs/architecture.md, "Types").
"""

from __future__ import annotations

from typing import Annotated

import pytest
from pydantic import BaseModel, ValidationError

from jupyter_agent.base.answers import Answer
from jupyter_agent.base.errors import ResumeError
from jupyter_agent.base.jsontypes import JSONObject, Shallow
from jupyter_agent.llm.types import ChatRequest, Message, tool_calls_of


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
