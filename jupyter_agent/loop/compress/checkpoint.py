"""Request-history compression into a context checkpoint (docs/behaviour.md §8.2).

Above 80% of the window, ``%%plan`` replaces its whole non-system history with one hidden user
message: a ``<context_checkpoint>`` block written by the model (with the active plan in front).
The newest user message is kept verbatim after the
checkpoint, so the model still reads the current question in the user's own words.
When the checkpoint call fails, old rounds are truncated instead (as ``%%toolloop`` does).
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, Field

from jupyter_agent.llm.tokens import count_messages_tokens
from jupyter_agent.llm.types import Message
from jupyter_agent.loop.compress.checkpoint_prompt import (
    CHECKPOINT_SYSTEM_PROMPT,
    build_checkpoint_user_prompt,
)
from jupyter_agent.loop.compress.constants import (
    ACTIVE_PLAN_END_TAG,
    ACTIVE_PLAN_START_TAG,
    CHECKPOINT_END_TAG,
    CHECKPOINT_OUTPUT_TARGET_RATIO,
    CHECKPOINT_START_TAG,
    MESSAGE_THRESHOLD_RATIO,
    MODULE_COMPRESS_MESSAGES,
    REQUEST_CHECKPOINT_COMPLETION_ACCEPT_CONTEXT_RATIO,
    ratio_limit,
)
from jupyter_agent.loop.compress.types import (
    CompressLLM,
    CompressLLMError,
    CompressUsage,
    MessagesCounter,
)
from jupyter_agent.loop.compress.window import fit_messages_to_window

__all__ = [
    "API_MESSAGE_KEYS",
    "CompressionResult",
    "below_checkpoint_threshold",
    "compress_request_messages",
    "normalize_checkpoint",
    "strip_private_keys",
    "with_active_plan",
]

logger = logging.getLogger(__name__)

API_MESSAGE_KEYS = frozenset({"role", "content", "tool_calls", "tool_call_id", "name"})
"""The message keys sent to the API; others (``hideInUI``…) are ours and must be stripped."""

_SYSTEM_ROLES = ("system", "developer")
_LEADING_FENCE = re.compile(r"^```(?:markdown|md|text)?\s*", re.IGNORECASE)
_TRAILING_FENCE = re.compile(r"\s*```$")


class CompressionResult(BaseModel):
    """What one history compression did; the loop records ``usage`` even when it failed."""

    messages: list[Message]
    """The messages to send (still carrying ``hideInUI``: pass them to ``strip_private_keys``)."""
    method: Literal["checkpoint", "truncate"]
    """``checkpoint`` on success; ``truncate`` when the fallback cut old rounds instead (the
    messages may then be unchanged if they fit within 85% of the window)."""
    checkpoint: str | None = None
    """The normalised ``<context_checkpoint>`` block, for the caller to save as hidden history."""
    checkpoint_message: Message | None = None
    """The hidden user message holding the checkpoint (active plan included)."""
    tokens_before: int = 0
    tokens_after: int = 0
    usage: list[CompressUsage] = Field(default_factory=list)
    """The checkpoint call's usage (``compress_llm_messages``), billed even if its answer was
    thrown away."""
    used_llm: bool = False
    """True when the checkpoint call was made (whether or not it succeeded)."""
    seconds: float = 0.0
    error: str | None = None
    """Why the checkpoint was not used, when it was not."""


def normalize_checkpoint(answer: str) -> str | None:
    """The model's answer as one ``<context_checkpoint>`` block, or ``None`` if it is empty.

    Trims, removes a leading (optionally ``markdown``/``md``/``text``) and a trailing code
    fence, keeps only the first complete block when both tags are present in order, and
    otherwise wraps the text in the tags, each on its own line. A stray lone tag (an answer cut
    off by ``max_tokens``) is dropped before wrapping rather than nested.
    """
    text = (answer or "").strip()
    if not text:
        return None
    text = _TRAILING_FENCE.sub("", _LEADING_FENCE.sub("", text)).strip()
    start = text.find(CHECKPOINT_START_TAG)
    end = text.find(CHECKPOINT_END_TAG)
    if start >= 0 and end > start:
        block = text[start : end + len(CHECKPOINT_END_TAG)].strip()
        inner = block[len(CHECKPOINT_START_TAG) : -len(CHECKPOINT_END_TAG)].strip()
        return block if inner else None
    text = text.replace(CHECKPOINT_START_TAG, "").replace(CHECKPOINT_END_TAG, "").strip()
    if not text:
        return None
    return f"{CHECKPOINT_START_TAG}\n{text}\n{CHECKPOINT_END_TAG}"


def with_active_plan(checkpoint: str, active_plan: BaseModel | Mapping[str, object] | None) -> str:
    """Put the active plan's JSON (2-space indent) in an ``<active_plan>`` block before the
    checkpoint; ``</active_plan>`` inside the JSON is escaped as ``<\\/active_plan>``."""
    if active_plan is None:
        return checkpoint
    plain = active_plan.model_dump(mode="json") if isinstance(active_plan, BaseModel) else active_plan
    plan_json = json.dumps(plain, indent=2, ensure_ascii=False, default=str)
    plan_json = plan_json.replace(ACTIVE_PLAN_END_TAG, "<\\/active_plan>")
    return f"{ACTIVE_PLAN_START_TAG}\n{plan_json}\n{ACTIVE_PLAN_END_TAG}\n{checkpoint}"


def strip_private_keys(messages: list[Message]) -> list[Message]:
    """Copies of ``messages`` holding only the keys the chat-completions API accepts."""
    return [{k: v for k, v in m.items() if k in API_MESSAGE_KEYS} for m in messages]


def _truncated(messages: list[Message], max_context: int, tools_tokens: int,
               count_messages: MessagesCounter, *, tokens_before: int, start: float,
               error: str, usage: list[CompressUsage], called: bool) -> CompressionResult:
    """The fallback when no checkpoint came: old rounds truncated to fit the window."""
    logger.warning("history compression failed, truncating old rounds: %s", error)
    kept = fit_messages_to_window(messages, max_context, tools_tokens,
                                  count_messages=count_messages)
    return CompressionResult(
        messages=kept,
        method="truncate",
        tokens_before=tokens_before,
        tokens_after=count_messages(kept) + tools_tokens,
        usage=usage,
        used_llm=called,
        seconds=time.perf_counter() - start,
        error=error,
    )


class _NoCheckpoint(Exception):
    """The checkpoint call gave no checkpoint (it failed, was aborted, or answered nothing):
    the history is truncated instead; the message says why."""


def _ask_checkpoint(llm: CompressLLM, others: list[Message], target: int, ceiling: int,
                    usages: list[CompressUsage]) -> str:
    """The checkpoint of ``others`` from one model call; its usage is added to ``usages``,
    also when the call fails after being billed.

    Raises:
        _NoCheckpoint: no checkpoint came back.
    """
    user_prompt = build_checkpoint_user_prompt(others, target)
    try:
        answer, usage = llm(CHECKPOINT_SYSTEM_PROMPT, user_prompt, ceiling)
    except Exception as exc:  # noqa: BLE001 - the injected LLM may raise anything
        billed = getattr(exc, "usage", None) if isinstance(exc, CompressLLMError) else None
        if billed is not None:
            usages.append(CompressUsage(module=MODULE_COMPRESS_MESSAGES, usage=billed))
        if isinstance(exc, CompressLLMError) and exc.aborted:
            raise _NoCheckpoint("checkpoint call aborted") from exc
        raise _NoCheckpoint(f"checkpoint call failed: {type(exc).__name__}: {exc}") from exc
    usages.append(CompressUsage(module=MODULE_COMPRESS_MESSAGES, usage=usage))
    if usage.output_tokens > ceiling:
        logger.info("checkpoint completion over ceiling: %d > %d", usage.output_tokens, ceiling)
    checkpoint = normalize_checkpoint(answer)
    if checkpoint is None:
        raise _NoCheckpoint("empty checkpoint")
    return checkpoint


def below_checkpoint_threshold(tokens: int, max_context: int) -> bool:
    """Whether a request of ``tokens`` is small enough to go without a checkpoint (at most
    ``min(max_context, max(4096, floor(max_context * 0.8)))``)."""
    return tokens <= ratio_limit(max_context, MESSAGE_THRESHOLD_RATIO)


def compress_request_messages(
    messages: list[Message],
    max_context: int,
    tools_tokens: int,
    llm: CompressLLM | None,
    *,
    active_plan: BaseModel | Mapping[str, object] | None = None,
    known_tokens: int | None = None,
    count_messages: MessagesCounter = count_messages_tokens,
) -> CompressionResult | None:
    """Compress the history into a checkpoint when the request is over 80% of the window.

    Returns ``None`` when nothing had to be done: no messages, only system messages, or
    ``tokens <= min(max_context, max(4096, floor(max_context * 0.8)))`` where tokens are
    ``known_tokens`` or the messages' count plus ``tools_tokens``.

    Otherwise the checkpoint model call is made (output budget ``limit(max_context, 0.2)``,
    ``max_tokens`` ``limit(max_context, 0.5)``) and the result's messages are: the system and
    developer messages, one hidden user message (``"hideInUI": True``) with the active plan and
    the checkpoint, and the newest user message verbatim (unless it alone is over the output
    budget; loop-injected user messages should carry ``hideInUI`` so they are not taken for it).
    If the call raises, answers nothing, is aborted, or gives an empty checkpoint, old rounds
    are truncated to 85% of the window instead (``method="truncate"``); the call's usage is
    still reported.
    """
    start = time.perf_counter()
    if not messages:
        return None
    if known_tokens is not None and below_checkpoint_threshold(known_tokens, max_context):
        return None  # the usual case, asked before every request: no pass over the history
    system = [m for m in messages if m.get("role") in _SYSTEM_ROLES]
    others = [m for m in messages if m.get("role") not in _SYSTEM_ROLES]
    if not others:
        return None
    tokens = known_tokens if known_tokens is not None else count_messages(messages) + tools_tokens
    if below_checkpoint_threshold(tokens, max_context):
        return None

    def fallback(error: str, usage: list[CompressUsage], called: bool) -> CompressionResult:
        return _truncated(messages, max_context, tools_tokens, count_messages,
                          tokens_before=tokens, start=start, error=error, usage=usage,
                          called=called)

    if llm is None:
        return fallback("no compression model", [], False)

    target = ratio_limit(max_context, CHECKPOINT_OUTPUT_TARGET_RATIO)
    ceiling = ratio_limit(max_context, REQUEST_CHECKPOINT_COMPLETION_ACCEPT_CONTEXT_RATIO)
    usages: list[CompressUsage] = []
    try:
        checkpoint = _ask_checkpoint(llm, others, target, ceiling, usages)
        checkpoint_message: Message = {"role": "user", "hideInUI": True,
                                       "content": with_active_plan(checkpoint, active_plan)}
        new_messages = [*system, checkpoint_message]
        newest = _newest_user_message(others)
        if newest is not None and count_messages([newest]) <= target:
            new_messages.append(dict(newest))
        tokens_after = count_messages(new_messages) + tools_tokens
    except _NoCheckpoint as exc:
        return fallback(str(exc), usages, True)
    except Exception as exc:  # noqa: BLE001 - a compression bug must not break the run
        return fallback(f"compression error: {type(exc).__name__}: {exc}", usages, bool(usages))

    if tokens_after > target:
        logger.info("checkpoint context still large: %d tokens > target %d", tokens_after, target)
    return CompressionResult(messages=new_messages, method="checkpoint", checkpoint=checkpoint,
                             checkpoint_message=checkpoint_message, tokens_before=tokens,
                             tokens_after=tokens_after, usage=usages, used_llm=True,
                             seconds=time.perf_counter() - start)


def _newest_user_message(messages: list[Message]) -> Message | None:
    """The newest user-authored message (hidden ones are checkpoints or loop feedback)."""
    for message in reversed(messages):
        if message.get("role") == "user" and not message.get("hideInUI"):
            return message
    return None
