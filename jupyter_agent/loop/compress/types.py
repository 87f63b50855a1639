"""Shapes shared by the compression modules: the injected LLM and the usages it reports."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from pydantic import BaseModel

from jupyter_agent.base.errors import ModelRequestError
from jupyter_agent.llm.types import Message, Usage

__all__ = ["CompressLLM", "CompressLLMError", "CompressUsage", "MessagesCounter", "TokenCounter"]

TokenCounter = Callable[[str], int]
"""Counts the tokens of one text (default: ``jupyter_agent.llm.tokens.count_text_tokens``)."""

MessagesCounter = Callable[[list[Message]], int]
"""Counts the tokens of a message list (default: ``count_messages_tokens``)."""


class CompressLLM(Protocol):
    """One non-tool model call made for compression.

    ``llm(system_prompt, user_prompt, max_tokens) -> (answer_text, usage)``. It may raise; raise
    :class:`CompressLLMError` with ``usage`` when the call was billed but gave no usable answer
    (an aborted stream), so the cost is still reported.
    """

    def __call__(self, system_prompt: str, user_prompt: str, max_tokens: int) -> tuple[str, Usage]:
        """Make the call and return the answer text and its token usage."""
        ...


class CompressLLMError(ModelRequestError):
    """A compression call failed; ``usage`` is set when the provider billed it anyway."""

    def __init__(
        self, message: str, *, usage: Usage | None = None, aborted: bool = False
    ) -> None:
        super().__init__(message)
        self.usage = usage
        self.aborted = aborted
        """True when the user interrupted the call (finish_reason ``close``)."""


class CompressUsage(BaseModel):
    """The usage of one compression call, tagged with what it was for."""

    module: str
    """``compress_llm_messages``, ``tool_response_compress`` or ``llm_compress_text``."""
    usage: Usage
    """Token counts of this call alone (calls are priced one by one: tiers depend on input)."""
