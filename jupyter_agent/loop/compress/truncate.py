"""Deterministic head-and-tail truncation, the last resort of every compression path.

Long texts tend to hold their definitions at the start and their conclusions, errors and results
at the end, so we keep both ends and mark the omitted middle explicitly rather than cutting the
tail off.
"""

from __future__ import annotations

import math
import re

from jupyter_agent.llm.tokens import count_text_tokens
from jupyter_agent.loop.compress.constants import (
    APPROX_CHARS_PER_TOKEN,
    CHAR_CUT_FACTOR,
    CHAR_CUT_START_RATIO,
    FINAL_HEAD_RATIO,
    SHRINK_BUDGET_FACTOR,
    SHRINK_ROUNDS,
    TOKEN_RATIO_CHAR_BUDGET_FACTOR,
    TOOL_RESULT_CAP_MARKER,
    TRUNCATION_MARKER,
)
from jupyter_agent.loop.compress.types import TokenCounter

__all__ = ["cap_chars", "char_budget", "shrink_to_token_budget", "truncate_by_chars",
           "truncate_head_tail"]

_PARAGRAPH_BREAK = re.compile(r"\n{2,}")


def char_budget(token_limit: int) -> int:
    """Approximate characters for ``token_limit`` tokens (3 per token), never negative."""
    return max(0, math.floor(token_limit * APPROX_CHARS_PER_TOKEN))


def truncate_by_chars(content: str, budget: int) -> str:
    """Keep the first 60% and the last 40% of ``budget`` characters around the marker.

    A budget no larger than the marker itself keeps just the head.
    """
    if len(content) <= budget:
        return content
    if budget <= len(TRUNCATION_MARKER):
        return content[: max(0, budget)]
    available = budget - len(TRUNCATION_MARKER)
    head_len = math.floor(available * FINAL_HEAD_RATIO)
    tail_len = available - head_len
    parts = [content[:head_len].strip(), content[len(content) - tail_len :].strip()]
    return TRUNCATION_MARKER.join(p for p in parts if p)


def cap_chars(content: str, max_chars: int) -> str:
    """``content`` cut to at most ``max_chars`` characters: the first 60% and the last 40%
    around a marker that says how many characters were left out. Cheap on any size (two
    slices), so it runs before anything else reads a huge text."""
    if len(content) <= max_chars:
        return content
    marker = TOOL_RESULT_CAP_MARKER.format(omitted=len(content))  # longest the count can be
    available = max(0, max_chars - len(marker))
    head_len = math.floor(available * FINAL_HEAD_RATIO)
    tail_len = available - head_len
    omitted = len(content) - head_len - tail_len
    tail = content[len(content) - tail_len:] if tail_len else ""
    return content[:head_len] + TOOL_RESULT_CAP_MARKER.format(omitted=omitted) + tail


def truncate_head_tail(content: str, token_limit: int, current_tokens: int | None = None) -> str:
    """Cut ``content`` to about ``token_limit`` tokens, keeping whole paragraphs at both ends.

    The character budget is ``token_limit * 3``, lowered to ``len * (limit / current) * 0.9``
    when ``current_tokens`` says the text is denser than 3 characters per token. The head gets
    60% of what is left after the marker; whole paragraphs are taken from the front and from the
    back. With a single paragraph, or when no paragraph fits, characters are cut instead.
    """
    ratio_budget = math.inf
    if current_tokens and current_tokens > token_limit:
        ratio_budget = math.floor(
            len(content) * (token_limit / current_tokens) * TOKEN_RATIO_CHAR_BUDGET_FACTOR
        )
    budget = min(char_budget(token_limit), ratio_budget)
    if budget <= len(TRUNCATION_MARKER):
        return content[: max(0, int(budget))].strip()
    available = int(budget) - len(TRUNCATION_MARKER)
    if len(content) <= available:
        return content.strip()

    head_budget = math.floor(available * FINAL_HEAD_RATIO)
    tail_budget = available - head_budget
    sections = [s.strip() for s in _PARAGRAPH_BREAK.split(content.strip())]
    sections = [s for s in sections if s]
    if len(sections) <= 1:
        parts = [content[:head_budget].strip(), content[len(content) - tail_budget :].strip()]
        return TRUNCATION_MARKER.join(p for p in parts if p)

    head = _take_sections(sections, head_budget)
    tail = _take_sections(sections[::-1], tail_budget)[::-1]
    head_text = "\n\n".join(head) or sections[0][:head_budget].strip()
    tail_text = "\n\n".join(tail) or sections[-1][len(sections[-1]) - tail_budget :].strip()
    return TRUNCATION_MARKER.join(p for p in (head_text, tail_text) if p).strip()


def _take_sections(sections: list[str], budget: int) -> list[str]:
    """The leading sections whose joined length (with blank lines) stays within ``budget``."""
    taken: list[str] = []
    used = 0
    for section in sections:
        needed = used + len(section) + (2 if taken else 0)
        if needed > budget:
            break
        taken.append(section)
        used = needed
    return taken


def shrink_to_token_budget(
    content: str, token_limit: int, count_tokens: TokenCounter = count_text_tokens
) -> str:
    """Truncate until the real token count fits ``token_limit``.

    Up to 8 head-and-tail rounds with the budget multiplied by 0.82 each time (the 3-characters
    estimate can be wrong for dense text), then plain character cuts from 75% of ``limit * 3``
    down by 0.72 per round until the count fits.
    """
    candidate = content.strip()
    current = count_tokens(candidate)
    if current <= token_limit:
        return candidate
    budget = token_limit
    for _ in range(SHRINK_ROUNDS):
        if current <= token_limit:
            break
        candidate = truncate_head_tail(candidate, budget, current)
        current = count_tokens(candidate)
        budget = max(1, math.floor(budget * SHRINK_BUDGET_FACTOR))
    chars = math.floor(char_budget(token_limit) * CHAR_CUT_START_RATIO)
    while current > token_limit and chars > 0:
        candidate = truncate_by_chars(candidate, chars).strip()
        current = count_tokens(candidate)
        chars = math.floor(chars * CHAR_CUT_FACTOR)
    return candidate
