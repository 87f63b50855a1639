"""Ratios and limits of context and tool-response compression (docs/behaviour.md §8, §12).

Every budget is derived from the model's context window (``max_context``) with
:func:`ratio_limit`, so a small local model and a 1M-token model get proportionate budgets.
"""

from __future__ import annotations

import math

__all__ = [
    "ACTIVE_PLAN_END_TAG",
    "ACTIVE_PLAN_START_TAG",
    "ANCHOR_MAX_CHARS",
    "ANCHOR_MIN_CHARS",
    "ANCHOR_SCAN_CHARS",
    "APPROX_CHARS_PER_TOKEN",
    "BASE64_MIN_RUN",
    "CHAR_CUT_FACTOR",
    "CHAR_CUT_START_RATIO",
    "CHECKPOINT_END_TAG",
    "CHECKPOINT_OUTPUT_TARGET_RATIO",
    "CHECKPOINT_PROMPT_ANCHOR_LIMIT",
    "CHECKPOINT_START_TAG",
    "CHUNK_CONCURRENCY",
    "CHUNK_SIZE_RATIO",
    "COMPRESSION_MAX_CHUNKS",
    "COMPRESSION_MAX_REQUESTS",
    "COMPRESSION_MIN_TOKEN_LIMIT",
    "EXCERPT_MIN_REMAINING_TOKENS",
    "EXCERPT_ROOM_RATIO",
    "EXCERPT_SKIP_RATIO",
    "EXCERPT_TARGET_RATIO",
    "FINAL_HEAD_RATIO",
    "HEX_ID_MIN_CHARS",
    "JSON_SUMMARY_CHAR_RATIO",
    "JSON_SUMMARY_KEY_PRIORITY",
    "JSON_SUMMARY_LEAF_CHARS",
    "JSON_SUMMARY_MAX_DEPTH",
    "JSON_SUMMARY_MAX_KEYS",
    "JSON_SUMMARY_MAX_SCALARS",
    "JSON_SUMMARY_MAX_SCALAR_CHARS",
    "JSON_SUMMARY_MIN_CHARS",
    "LARGE_CONTENT_PROMPT_ANCHOR_LIMIT",
    "MERGED_COMPRESSION_BUDGET_RATIO",
    "MERGED_COMPRESSION_LOW_GAIN_RATIO",
    "MERGED_COMPRESSION_MAX_ROUNDS",
    "MESSAGE_THRESHOLD_RATIO",
    "MODULE_COMPRESS_MESSAGES",
    "MODULE_COMPRESS_TEXT",
    "MODULE_TOOL_RESPONSE",
    "PER_CHUNK_BUDGET_RATIO",
    "REQUEST_CHECKPOINT_COMPLETION_ACCEPT_CONTEXT_RATIO",
    "SHRINK_BUDGET_FACTOR",
    "SHRINK_ROUNDS",
    "SKIP_RESPONSE_COMPRESS_TOOLS",
    "SOURCE_ANCHOR_APPEND_MAX_COUNT",
    "SOURCE_ANCHOR_APPEND_SKIP_RATIO",
    "SOURCE_ANCHOR_TOTAL_CEILING_RATIO",
    "TOKEN_RATIO_CHAR_BUDGET_FACTOR",
    "TOOL_MEMORY_RESULT_CHARS",
    "TOOL_MEMORY_USER_CHARS",
    "TOOL_RESULT_CAP_MARKER",
    "TOOL_RESULT_MAX_CHARS",
    "TOOL_RESPONSE_DIRECT_RETURN_CONTEXT_RATIO",
    "TOOL_RESPONSE_LIGHT_PROCESS_CONTEXT_RATIO",
    "TRUNCATION_MARKER",
    "WINDOW_TRUNCATE_RATIO",
    "ratio_limit",
]

COMPRESSION_MIN_TOKEN_LIMIT = 4096
"""Floor of every ratio limit (capped at the window), so small windows keep usable budgets."""

MESSAGE_THRESHOLD_RATIO = 0.8
"""``%%plan``: request tokens (messages + tool schemas) above this share trigger a checkpoint."""
WINDOW_TRUNCATE_RATIO = 0.85
"""``%%chat``/``%%toolloop`` (and the checkpoint fallback): old rounds are cut above this share."""
CHECKPOINT_OUTPUT_TARGET_RATIO = 0.2
"""Checkpoint output budget told to the model; also the "result still too large" log level."""
REQUEST_CHECKPOINT_COMPLETION_ACCEPT_CONTEXT_RATIO = 0.5
"""Ceiling on checkpoint completion tokens, sent as ``max_tokens``."""

TOOL_RESPONSE_DIRECT_RETURN_CONTEXT_RATIO = 0.2
"""Tool results at or below this share are returned untouched; also the LLM compression target."""
TOOL_RESPONSE_LIGHT_PROCESS_CONTEXT_RATIO = 0.5
"""At or below this share after light (no-LLM) processing, no LLM is called."""

CHUNK_SIZE_RATIO = 0.5
"""Largest chunk sent to one compression call, as a share of the window."""
CHUNK_CONCURRENCY = 5
"""Chunk compression calls running at once (threads)."""
APPROX_CHARS_PER_TOKEN = 3
FINAL_HEAD_RATIO = 0.6
"""Share of a head-and-tail truncation's character budget that goes to the head."""
MERGED_COMPRESSION_MAX_ROUNDS = 2
MERGED_COMPRESSION_BUDGET_RATIO = 0.9
MERGED_COMPRESSION_LOW_GAIN_RATIO = 0.95
"""A merge round leaving the text at this share of its previous length or more is not worth
repeating: switch to deterministic truncation."""
PER_CHUNK_BUDGET_RATIO = 0.65
COMPRESSION_MAX_CHUNKS = 5
"""Most chunk calls of one compression (one parallel wave at ``CHUNK_CONCURRENCY``): a text
longer than this many chunks is cut head-and-tail to fit them before chunking. Without the cap
a 50 MB tool result made hundreds of requests."""
COMPRESSION_MAX_REQUESTS = COMPRESSION_MAX_CHUNKS + MERGED_COMPRESSION_MAX_ROUNDS
"""Most model calls one tool result's compression makes (chunks, then merge rounds): 7. Each
call may still be retried by the client's retry policy on an HTTP or connection error."""
TOOL_RESULT_MAX_CHARS = 2_000_000
"""A tool result longer than this is cut head-and-tail (``TOOL_RESULT_CAP_MARKER``) before any
processing: cleaning up and counting tokens of 50 MB alone takes many seconds, and what is cut
could never reach the model's window anyway (2 M characters is about 670 k tokens)."""
SHRINK_ROUNDS = 8
SHRINK_BUDGET_FACTOR = 0.82
CHAR_CUT_START_RATIO = 0.75
CHAR_CUT_FACTOR = 0.72
TOKEN_RATIO_CHAR_BUDGET_FACTOR = 0.9

EXCERPT_TARGET_RATIO = 0.75
EXCERPT_SKIP_RATIO = 0.45
EXCERPT_MIN_REMAINING_TOKENS = 120
EXCERPT_ROOM_RATIO = 0.85
SOURCE_ANCHOR_APPEND_SKIP_RATIO = 0.8
SOURCE_ANCHOR_TOTAL_CEILING_RATIO = 0.96
SOURCE_ANCHOR_APPEND_MAX_COUNT = 12

CHECKPOINT_PROMPT_ANCHOR_LIMIT = 100
LARGE_CONTENT_PROMPT_ANCHOR_LIMIT = 80
ANCHOR_SCAN_CHARS = 12000
ANCHOR_MIN_CHARS = 3
ANCHOR_MAX_CHARS = 120

JSON_SUMMARY_MIN_CHARS = 420
JSON_SUMMARY_CHAR_RATIO = 0.3
JSON_SUMMARY_MAX_SCALARS = 80
JSON_SUMMARY_MAX_SCALAR_CHARS = 100
JSON_SUMMARY_LEAF_CHARS = 60
JSON_SUMMARY_MAX_DEPTH = 6
JSON_SUMMARY_MAX_KEYS = 12
JSON_SUMMARY_KEY_PRIORITY = (
    "id",
    "name",
    "type",
    "function",
    "arguments",
    "tool_calls",
    "tools",
    "messages",
    "role",
    "content",
)

BASE64_MIN_RUN = 100
HEX_ID_MIN_CHARS = 32

TOOL_MEMORY_RESULT_CHARS = 900
TOOL_MEMORY_USER_CHARS = 240

# Ratios for paths outside this package (kept so callers share one table; unused today).

TRUNCATION_MARKER = "\n\n... [content truncated: middle omitted to fit token budget] ...\n\n"
TOOL_RESULT_CAP_MARKER = "\n\n... [tool result too long: {omitted:,} characters omitted] ...\n\n"
CHECKPOINT_START_TAG = "<context_checkpoint>"
CHECKPOINT_END_TAG = "</context_checkpoint>"
ACTIVE_PLAN_START_TAG = "<active_plan>"
ACTIVE_PLAN_END_TAG = "</active_plan>"

MODULE_COMPRESS_MESSAGES = "compress_llm_messages"
MODULE_TOOL_RESPONSE = "tool_response_compress"
MODULE_COMPRESS_TEXT = "llm_compress_text"

SKIP_RESPONSE_COMPRESS_TOOLS = frozenset({"update_plan", "ask_agent"})
"""Internal tools whose results are never compressed (their text is short and load-bearing)."""


def ratio_limit(max_context: int, ratio: float) -> int:
    """``min(max_context, max(4096, floor(max_context * ratio)))``: a budget as a window share."""
    return min(max_context, max(COMPRESSION_MIN_TOKEN_LIMIT, math.floor(max_context * ratio)))
