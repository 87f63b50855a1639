"""Context-window filter (docs/behaviour.md §3.5): drop the oldest rounds until the history fits.

``%%chat`` and ``%%toolloop`` call :func:`fit_messages_to_window` before every request; the
checkpoint compressor uses it as its fallback when the checkpoint call fails.
"""

from __future__ import annotations

import math

from jupyter_agent.llm.tokens import count_messages_tokens
from jupyter_agent.llm.types import Message
from jupyter_agent.loop.compress.constants import (
    ACTIVE_PLAN_START_TAG,
    CHECKPOINT_END_TAG,
    CHECKPOINT_START_TAG,
    WINDOW_TRUNCATE_RATIO,
)
from jupyter_agent.loop.compress.types import MessagesCounter

__all__ = ["filter_messages_by_max_context", "fit_messages_to_window", "is_checkpoint_message"]

_SYSTEM_ROLES = ("system", "developer")


def is_checkpoint_message(message: Message) -> bool:
    """True for a hidden user message holding a context checkpoint.

    The content, trimmed, must end with ``</context_checkpoint>`` and start with
    ``<context_checkpoint>`` or with the ``<active_plan>`` block that
    ``%%plan`` puts in front of it (otherwise the plan agent's checkpoints would be cut like
    ordinary history).
    """
    if message.get("role") != "user" or message.get("hideInUI") is not True:
        return False
    content = message.get("content")
    if not isinstance(content, str):
        return False
    text = content.strip()
    return text.endswith(CHECKPOINT_END_TAG) and text.startswith(
        (CHECKPOINT_START_TAG, ACTIVE_PLAN_START_TAG)
    )


def filter_messages_by_max_context(
    messages: object,
    max_context: int,
    *,
    count_messages: MessagesCounter = count_messages_tokens,
) -> list[Message]:
    """Keep the newest rounds that fit in ``max_context`` tokens (docs/behaviour.md §3.5).

    Leading system/developer messages and the checkpoints right after them are always kept and
    their tokens come off the budget. The rest is grouped into rounds, each starting at a user
    message; messages before the first user message are dropped. Rounds are kept newest first
    while the budget lasts; the newest round is kept even when it alone is over budget.
    Anything but a list keeps nothing.
    """
    if not isinstance(messages, list):
        return []
    if all(m.get("role") in _SYSTEM_ROLES for m in messages):
        return messages

    index = 0
    while index < len(messages) and messages[index].get("role") in _SYSTEM_ROLES:
        index += 1
    while index < len(messages) and is_checkpoint_message(messages[index]):
        index += 1
    kept_front = messages[:index]
    rest = messages[index:]
    if not rest:
        return kept_front

    budget = max_context - (count_messages(kept_front) if kept_front else 0)
    groups: list[list[Message]] = []
    current: list[Message] = []
    for message in reversed(rest):
        current.insert(0, message)
        if message.get("role") == "user":
            groups.insert(0, current)
            current = []
    # Whatever is left in ``current`` came before the first user message: dropped on purpose.

    kept: list[list[Message]] = []
    for group in reversed(groups):
        budget -= count_messages(group)
        if budget < 0 and kept:
            break
        kept.insert(0, group)
    return [*kept_front, *(m for group in kept for m in group)]


def fit_messages_to_window(
    messages: list[Message],
    max_context: int,
    tools_tokens: int = 0,
    *,
    ratio: float = WINDOW_TRUNCATE_RATIO,
    count_messages: MessagesCounter = count_messages_tokens,
) -> list[Message]:
    """Cut old rounds so messages plus tool schemas stay within 85% of the window.

    The remaining 15% is room for the answer. The input list is returned as is when nothing
    needs cutting.
    """
    budget = math.floor(max_context * ratio) - tools_tokens
    if count_messages(messages) <= budget:
        return messages
    return filter_messages_by_max_context(messages, budget, count_messages=count_messages)
