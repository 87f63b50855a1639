"""Context and tool-response compression (docs/behaviour.md §8).

Before each request, ``%%plan`` calls :func:`compress_request_messages` (checkpoint above 80% of
the window, truncation if that fails) and ``%%chat``/``%%toolloop`` call
:func:`fit_messages_to_window` (old rounds cut above 85%). Every runtime tool result goes through
:func:`compress_tool_response`. The model used for compression is injected as a
:class:`CompressLLM` callable; nothing here imports a client.
"""

from __future__ import annotations

from jupyter_agent.loop.compress.checkpoint import (
    CompressionResult,
    compress_request_messages,
    normalize_checkpoint,
    strip_private_keys,
)
from jupyter_agent.loop.compress.constants import SKIP_RESPONSE_COMPRESS_TOOLS, ratio_limit
from jupyter_agent.loop.compress.tool_response import (
    LargeContentResult,
    ToolResponseCompression,
    compress_large_content,
    compress_tool_response,
)
from jupyter_agent.loop.compress.types import CompressLLM, CompressLLMError, CompressUsage
from jupyter_agent.loop.compress.window import (
    filter_messages_by_max_context,
    fit_messages_to_window,
    is_checkpoint_message,
)

__all__ = [
    "SKIP_RESPONSE_COMPRESS_TOOLS",
    "CompressLLM",
    "CompressLLMError",
    "CompressUsage",
    "CompressionResult",
    "LargeContentResult",
    "ToolResponseCompression",
    "compress_large_content",
    "compress_request_messages",
    "compress_tool_response",
    "filter_messages_by_max_context",
    "fit_messages_to_window",
    "is_checkpoint_message",
    "normalize_checkpoint",
    "ratio_limit",
    "strip_private_keys",
]
