"""The kernel hooks that keep a request inside the model's window, shared by every agent.

``window_fitter`` cuts old rounds (``%%chat``, ``%%toolloop``, sub-agents); ``compress_llm``
is the one-call model helper the compressions use; ``tool_output_processor`` shortens long tool
results (``docs/behaviour.md`` §6).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from ..llm.protocol import ModelClient
from ..llm.types import Message, Usage
from ..loop.hooks import ContextFit, UsageItem

if TYPE_CHECKING:
    from ..loop.compress.tool_response import ToolResponseCompression
    from ..loop.compress.types import CompressLLM

__all__ = ["window_fitter", "compress_llm", "tool_output_processor"]


def window_fitter(max_context: int, max_tokens: int | None, tools_tokens: int
                  ) -> Callable[[int, list[Message], int], ContextFit | None]:
    """A ``fit_context`` hook: cut old rounds above 85% of the window (docs/behaviour.md §3.4)."""
    budget = max_context - (max_tokens or 0)
    threshold = int(budget * 0.85)

    def fit(round_: int, messages: list[Message], tokens: int) -> ContextFit | None:
        if tokens <= threshold:
            return None
        # Imported once a request first fills the window, not when every run starts.
        from ..llm.tokens import count_messages_tokens
        from ..loop.compress.window import fit_messages_to_window

        kept = fit_messages_to_window(messages, budget, tools_tokens)
        if len(kept) == len(messages):
            return None
        return ContextFit(messages=kept, tokens=count_messages_tokens(kept) + tools_tokens)

    return fit


def compress_llm(client: ModelClient, module: str) -> CompressLLM:
    """A compression LLM callable (non-streamed, no tools) bound to ``client``."""
    from ..llm.types import ChatRequest

    def call(system_prompt: str, user_prompt: str, max_tokens: int) -> tuple[str, Usage]:
        from ..loop.compress.types import CompressLLMError  # a compression is under way

        req = ChatRequest(model=client.profile.model, stream=False, max_tokens=max_tokens,
                          messages=[{"role": "system", "content": system_prompt},
                                    {"role": "user", "content": user_prompt}])
        resp = client.complete(req)
        if resp.error:
            raise CompressLLMError(resp.error)
        if resp.aborted:
            raise CompressLLMError("aborted", usage=resp.usage, aborted=True)
        return resp.text, resp.usage

    return call


def tool_output_processor(client: ModelClient) -> Callable[[str], tuple[str, list[UsageItem]]]:
    """The ``process_tool_output`` hook: shorten long tool results (docs/behaviour.md §8.3)."""
    llm = compress_llm(client, "tool_response_compress")
    max_context = client.profile.max_context
    compress: Callable[[str, int, CompressLLM], ToolResponseCompression] | None = None

    def process(text: str) -> tuple[str, list[UsageItem]]:
        nonlocal compress
        if compress is None:  # loaded at the first tool result, not when the run starts
            from ..loop.compress.tool_response import compress_tool_response

            compress = compress_tool_response
        result = compress(text, max_context, llm)
        usages = [UsageItem(u.module, client.profile.name, u.usage, client.cost(u.usage))
                  for u in result.usage]
        return result.text, usages

    return process
