"""The plumbing shared by the one-call helpers: pick a client, make one call, count its usage.

Every helper call is priced on its own and reported to the current usage sink
(docs/behaviour.md §9.6), so inside a run it adds up into the run; the helper's result object
carries it as well.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Protocol, TypeAlias, Union, runtime_checkable

from pydantic import BaseModel, Field

from ...base.errors import JupyterAgentError, ModelRequestError
from ...base.jsontypes import JSONValue
from ...llm.protocol import ModelClient
from ...llm.types import ChatRequest, Message, Usage
from ...llm.usage_context import report_usage

__all__ = [
    "HISTORY_ROUNDS",
    "CallResult",
    "HasMessages",
    "History",
    "EmptyInputError",
    "add_usage",
    "call_model",
    "history_messages",
    "resolve_client",
    "squeeze_newlines",
]

HISTORY_ROUNDS = 6
"""History a helper sees by default: the last 6 rounds (12 messages), docs/behaviour.md §7.1."""


@runtime_checkable
class HasMessages(Protocol):
    """A conversation object (a chat session) whose ``messages`` a helper reads."""

    @property
    def messages(self) -> Iterable[object]:
        """Its messages: OpenAI-format dicts, ``(role, text)`` pairs or message objects."""
        ...


History: TypeAlias = Union[Iterable[object], HasMessages, None]
"""The conversation a helper sees: OpenAI-format messages, ``(role, text)`` pairs, objects with
``role`` and ``content``, or an object holding them in ``messages``."""


class EmptyInputError(JupyterAgentError, ValueError):
    """A helper was given an empty text: ``Input is empty``, before any request."""

    def __init__(self, what: str = "Input") -> None:
        super().__init__(f"{what} is empty")


class CallResult(BaseModel):
    """One successful helper call: the answer text and what it cost."""

    text: str = ""
    """The model's answer, with any ``<think>`` block already split off by the client."""
    usage: Usage = Field(default_factory=Usage)
    cost: float = 0.0
    model: str = ""


def resolve_client(model: str | None, client: ModelClient | None) -> ModelClient:
    """``client`` when given, else the default client for ``model`` (profile name or model id).

    The default client follows the configured order (``%agent model``, ``JUPYTER_AGENT_MODEL``,
    ``%config``: :mod:`jupyter_agent.clients.factory`) and reads ``OPENAI_API_KEY`` and
    ``OPENAI_BASE_URL``; it is cached.
    """
    if client is not None:
        return client
    from ...clients.factory import make_client  # lazy: building a client loads ``openai``

    return make_client(model)


def _request_model(model: str | None, client: ModelClient) -> str:
    # An explicit model next to an explicit client picks the model id sent with that client.
    if model is None:
        return client.profile.model
    from ...clients.embedded import profile_for

    return profile_for(model).model


def call_model(
    module: str,
    messages: list[Message],
    *,
    model: str | None = None,
    client: ModelClient | None = None,
    extra: Mapping[str, JSONValue] | None = None,
) -> CallResult:
    """Make one streamed call for helper ``module`` and report its usage.

    Raises ``ModelRequestError`` when the provider fails after retries (a failed call's usage is
    not counted, §9.6) and ``KeyboardInterrupt`` when the user interrupted the stream.
    """
    client = resolve_client(model, client)
    request = ChatRequest(model=_request_model(model, client), messages=messages, stream=True,
                          extra=dict(extra or {}))
    response = client.complete(request)
    if response.aborted:
        raise KeyboardInterrupt
    if response.error:
        raise ModelRequestError(f"{module}: {response.error}", status_code=response.status_code)
    cost = client.cost(response.usage)
    report_usage(module, request.model, response.usage, cost)
    return CallResult(text=response.text, usage=response.usage, cost=cost, model=request.model)


def _content_text(content: object) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # multi-part content: the text parts, one per line
        return "\n".join(
            p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"
        )
    return str(content)


def _as_message(item: object) -> Message | None:
    if isinstance(item, dict):
        return item
    if isinstance(item, (tuple, list)) and len(item) == 2:
        return {"role": str(item[0]), "content": item[1]}
    role, content = getattr(item, "role", None), getattr(item, "content", None)
    if role is not None:
        return {"role": str(role), "content": content}
    return None


def history_messages(history: History, *, rounds: int = HISTORY_ROUNDS) -> list[Message]:
    """The user and assistant text messages of ``history``, the last ``rounds`` rounds.

    ``history`` is a list of OpenAI-format messages, ``(role, text)`` pairs, or an object with a
    ``messages`` list (a chat session). System messages, tool calls and tool results are left
    out: the helper has its own system prompt, and a tool result without its call is invalid.
    """
    if history is None:
        return []
    items = history.messages if isinstance(history, HasMessages) else history
    out: list[Message] = []
    for item in items:
        msg = _as_message(item)
        if msg is None or msg.get("role") not in ("user", "assistant"):
            continue
        text = _content_text(msg.get("content")).strip()
        if text:
            out.append({"role": msg["role"], "content": text})
    return out[-2 * rounds:] if rounds > 0 else []


_MANY_NEWLINES = re.compile(r"\n{3,}")


def squeeze_newlines(text: str) -> str:
    """Runs of 3 or more newlines become 2 (the prompts leave out optional sections)."""
    return _MANY_NEWLINES.sub("\n\n", text).strip()


def add_usage(a: Usage, b: Usage) -> Usage:
    """Two calls' usage summed; estimated if either was."""
    return Usage(input_tokens=a.input_tokens + b.input_tokens,
                 output_tokens=a.output_tokens + b.output_tokens,
                 estimated=a.estimated or b.estimated)
