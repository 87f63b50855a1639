"""Intent recognition: what the user's raw text is about, by keyword rules or by the model.

The result is a hint. It is written into the system prompt in ``agent`` and ``search`` modes
(not when it is ``unknown`` with low confidence), recorded with the turn, and may choose the
agent role when neither the user nor the session chose one (confidence >= 0.5). It never
changes the mode and never ends the loop early.

Rules: each category has keywords. Latin keywords match whole words (case-insensitive; a
phrase matches as a whole), CJK keywords match anywhere. The category with the most distinct
matches wins (ties go to the earlier category in :data:`CATEGORIES` order); confidence is 0.5
for one match, 0.7 for two, 0.85 for three or more, scaled down when another category matched
too: ``base * (best - second + 1) / (best + 1)``. No match gives ``unknown`` at 0.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel, Field

from ..base.state import STATE, to_defaults

__all__ = ["Category", "CATEGORIES", "IntentResult", "IntentRules", "INTENT_RULES",
           "DEFAULT_KEYWORDS", "CATEGORY_DESCRIPTIONS", "as_category", "intent_by_rules",
           "intent_system_text"]

Category = Literal["chat", "tool_execution", "content_publishing", "account_query", "unknown"]
CATEGORIES: tuple[Category, ...] = ("tool_execution", "content_publishing", "account_query",
                                    "chat", "unknown")
"""Every category, in tie-break order."""


def as_category(name: str) -> Category:
    """``name`` as a :data:`Category` (``unknown`` for a name that is none)."""
    return next((c for c in CATEGORIES if c == name), "unknown")

DEFAULT_KEYWORDS: dict[str, list[str]] = {
    "tool_execution": [
        "run", "execute", "command", "bash", "shell", "script", "terminal", "file", "files",
        "folder", "directory", "read", "write", "save", "create", "delete", "rename", "move",
        "copy", "search", "find", "grep", "list", "count", "rows", "csv", "json", "install",
        "download", "fetch", "url", "compute", "calculate", "analyse", "analyze", "workspace",
        "执行", "运行", "命令", "文件", "目录", "搜索", "下载", "计算",
    ],
    "content_publishing": [
        "publish", "post", "tweet", "blog", "article", "newsletter", "upload", "share",
        "schedule a post", "social media", "caption", "发布", "发帖", "推文", "文章",
    ],
    "account_query": [
        "account", "balance", "subscription", "billing", "invoice", "quota", "credits",
        "login", "log in", "password", "my usage", "my plan", "payment", "账户", "账号", "余额",
        "订阅", "充值",
    ],
    "chat": [
        "hello", "hi", "hey", "thanks", "thank you", "explain", "what is", "what are", "why",
        "how does", "tell me", "opinion", "joke", "你好", "谢谢", "解释", "为什么",
    ],
}
"""The keywords each category starts with; edit :data:`INTENT_RULES` to change them."""


class IntentResult(BaseModel):
    """What intent recognition found."""

    category: Category
    confidence: float = Field(ge=0.0, le=1.0)
    keywords: list[str] = []
    """The matched keywords (the nearest thing to slots; nothing else is extracted)."""
    source: Literal["rules", "model"] = "rules"
    needs_tools: bool = False

    def is_low(self, threshold: float = 0.5) -> bool:
        """True when the confidence is below ``threshold``."""
        return self.confidence < threshold


class IntentRules(BaseModel):
    """Configurable rules: keywords per category and the thresholds that use the result."""

    keywords: dict[str, list[str]] = Field(
        default_factory=lambda: {k: list(v) for k, v in DEFAULT_KEYWORDS.items()})
    needs_tools: set[str] = Field(
        default_factory=lambda: {"tool_execution", "content_publishing", "account_query"})
    """Categories whose turns likely need tools."""
    low_confidence: float = 0.5
    """Below this, an ``unknown`` intent is kept out of the system prompt."""
    role_threshold: float = 0.5
    """The confidence from which the intent may choose the agent role."""
    use_model: bool = False
    """Ask the model (one ``classify`` call) instead of the keyword rules."""

    def matches(self, text: str) -> dict[Category, list[str]]:
        """The keywords of each category found in ``text`` (categories without one omitted)."""
        lowered = text.casefold()
        found: dict[Category, list[str]] = {}
        for category in CATEGORIES:
            hits = [k for k in self.keywords.get(category, []) if _contains(lowered, k)]
            if hits:
                found[category] = list(dict.fromkeys(hits))
        return found


INTENT_RULES: IntentRules = STATE.slot("runtime.intent_rules", IntentRules, reset=to_defaults)
"""The process-wide rules (``INTENT_RULES.keywords["account_query"].append("wallet")``)."""

_CJK = ((0x3040, 0x30FF), (0x3400, 0x9FFF), (0xAC00, 0xD7AF))
"""Kana, CJK ideographs and Hangul: text written without spaces between words. Compared code by
code: a regex class over these ranges takes about 4 ms to compile, in every process."""
_BASE = {1: 0.5, 2: 0.7}


def _contains(lowered: str, keyword: str) -> bool:
    match = _keyword_matcher(keyword)
    return match is not None and match(lowered)


@functools.lru_cache(maxsize=4096)
def _keyword_matcher(keyword: str) -> Callable[[str], bool] | None:
    """How to find ``keyword`` in casefolded text, built once per keyword (every turn checks
    about a hundred of them; a batch runs thousands of turns)."""
    k = keyword.casefold().strip()
    if not k:
        return None
    if any(lo <= ord(c) <= hi for c in k for lo, hi in _CJK):
        return lambda lowered: k in lowered
    return _WordMatcher(k)


class _WordMatcher:
    """``k`` as a whole word. Its regex is compiled at the first text that holds ``k`` at all:
    most keywords never occur, and compiling all of them cost the first turn of a process
    more than the rest of its setup (docs/architecture.md, "The first run")."""

    __slots__ = ("k", "pattern")

    def __init__(self, k: str) -> None:
        self.k = k
        self.pattern: re.Pattern[str] | None = None

    def __call__(self, lowered: str) -> bool:
        if self.k not in lowered:  # the regex cannot match without the plain substring
            return False
        if self.pattern is None:  # two threads may both compile it: the same pattern
            self.pattern = re.compile(r"(?<!\w)" + re.escape(self.k) + r"(?!\w)")
        return self.pattern.search(lowered) is not None


def intent_by_rules(text: str, rules: IntentRules | None = None) -> IntentResult:
    """Recognise the intent of ``text`` with the keyword rules."""
    rules = rules or INTENT_RULES
    found = rules.matches(text or "")
    if not found:
        return IntentResult(category="unknown", confidence=0.0, source="rules")
    ranked = sorted(found.items(), key=lambda kv: (-len(kv[1]), CATEGORIES.index(kv[0])))
    category, hits = ranked[0]
    best = len(hits)
    second = len(ranked[1][1]) if len(ranked) > 1 else 0
    confidence = _BASE.get(best, 0.85) * (best - second + 1) / (best + 1) if second else \
        _BASE.get(best, 0.85)
    return IntentResult(category=category, confidence=round(confidence, 3), keywords=hits,
                        source="rules", needs_tools=category in rules.needs_tools)


CATEGORY_DESCRIPTIONS = {
    "tool_execution": "The user wants something done with tools: run commands, read or write "
                      "files, fetch or compute data.",
    "content_publishing": "The user wants content written for or published to a channel.",
    "account_query": "The user asks about their account, billing, subscription or usage.",
    "chat": "Conversation, explanation or opinion; no action needed.",
    "unknown": "None of the above.",
}


def intent_system_text(intent: IntentResult | None, mode: str,
                       rules: IntentRules | None = None) -> str:
    """The system-prompt part for ``intent`` in ``mode`` ("" when it must not be written)."""
    from .modes import mode_rules

    rules = rules or INTENT_RULES
    if intent is None or not mode_rules(mode).intent_in_prompt:
        return ""
    if intent.category == "unknown" and intent.is_low(rules.low_confidence):
        return ""
    matched = f"; keywords: {', '.join(intent.keywords)}" if intent.keywords else ""
    tools = "needs tools" if intent.needs_tools else "no tools needed"
    return (f"User intent (hint): {intent.category} ({intent.confidence:.2f}, {intent.source}"
            f"{matched}; {tools}).")
