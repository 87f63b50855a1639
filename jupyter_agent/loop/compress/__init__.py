"""Context and tool-response compression (docs/behaviour.md §8).

Before each request, ``%%plan`` calls :func:`compress_request_messages` (checkpoint above 80% of
the window, truncation if that fails) and ``%%chat``/``%%toolloop`` call
:func:`fit_messages_to_window` (old rounds cut above 85%). Every runtime tool result goes through
:func:`compress_tool_response`. The model used for compression is injected as a
:class:`CompressLLM` callable; nothing here imports a client.

Importing this package loads none of its modules (PEP 562): ``%%toolloop`` needs only
``window`` until a tool result is long enough to compress.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...base.lazy import lazy_exports

if TYPE_CHECKING:
    from .checkpoint import (
        CompressionResult,
        compress_request_messages,
        normalize_checkpoint,
        strip_private_keys,
    )
    from .constants import SKIP_RESPONSE_COMPRESS_TOOLS, ratio_limit
    from .tool_response import (
        LargeContentResult,
        ToolResponseCompression,
        compress_large_content,
        compress_tool_response,
    )
    from .types import CompressLLM, CompressLLMError, CompressUsage
    from .window import (
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

_LAZY = {
    "CompressionResult": "checkpoint",
    "compress_request_messages": "checkpoint",
    "normalize_checkpoint": "checkpoint",
    "strip_private_keys": "checkpoint",
    "SKIP_RESPONSE_COMPRESS_TOOLS": "constants",
    "ratio_limit": "constants",
    "LargeContentResult": "tool_response",
    "ToolResponseCompression": "tool_response",
    "compress_large_content": "tool_response",
    "compress_tool_response": "tool_response",
    "CompressLLM": "types",
    "CompressLLMError": "types",
    "CompressUsage": "types",
    "filter_messages_by_max_context": "window",
    "fit_messages_to_window": "window",
    "is_checkpoint_message": "window",
}

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
