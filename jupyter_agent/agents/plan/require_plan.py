"""Does the user explicitly ask for a plan? (docs/behaviour.md §6.9)

When they do, the stop gate refuses to finish until a plan exists. Only the last user message
counts, and the answer is worked out once per run (a resume reuses the saved value).

Latin words match as whole words: matching anywhere would make "build an explanation"
(ex*plan*ation), "create a planet" and "makeplan" ask for a plan. The glued forms meant as
requests ("planmode", "activeplan", "updateplan", "stepbystep plan") still match, plural
"plans" counts as "plan", and the Chinese phrases match anywhere. Wildcard gaps (``.``)
never cross a line break (its JavaScript meaning), while whitespace gaps do.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

__all__ = ["REQUIRE_PLAN_PATTERNS", "last_user_text", "should_require_plan", "text_requires_plan"]

# Letters that make a Latin word longer; CJK characters are not among them, so "生成plan" is
# still "plan" as a whole word.
_WORD_CHAR = r"A-Za-z0-9\u00C0-\u024F"
_LB = rf"(?<![{_WORD_CHAR}])"
_RB = rf"(?![{_WORD_CHAR}])"
# Every character but a line break, as in JavaScript.
_ANY = r"[^\n\r\u2028\u2029]"


def _word(body: str) -> str:
    return f"{_LB}(?:{body}){_RB}"


_PLAN = _word("plans?")
_STEP_BY_STEP = _word(r"step[-\s]?by[-\s]?step")
_LATIN_VERB = _word("create|make|draft|build")
_STEPS = _word("steps")
_UPDATE = _word("updates?")

_SOURCES = (
    # 1: 计划模式 ("plan mode")
    "计划模式",
    # 2: plan mode / planmode
    _word(r"plan\s*mode"),
    # 3: active plan / activeplan
    _word(r"active\s*plans?"),
    # 4: update_plan / update plan / update-plan / updateplan
    _word(r"update[_\s-]?plans?"),
    # 5: 更新 ... 计划 / plan / 步骤状态
    rf"更新{_ANY}{{0,8}}(?:计划|{_PLAN}|步骤状态)",
    # 6: 创建 / 制定 / 生成 / 拆解 ... 计划 / plan / 步骤
    rf"(?:创建|制定|生成|拆解){_ANY}{{0,16}}(?:计划|{_PLAN}|步骤)",
    # 7: create / make / draft / build ... plan / steps
    rf"{_LATIN_VERB}{_ANY}{{0,16}}(?:{_PLAN}|{_STEPS})",
    # 8: 每 / 逐 ... 步 / 步骤 ... 更新 / 维护 / 标记 ... 计划 / plan / 状态
    (
        rf"(?:每|逐){_ANY}{{0,8}}(?:步骤|步){_ANY}{{0,16}}(?:更新|维护|标记){_ANY}{{0,8}}"
        rf"(?:计划|{_PLAN}|状态)"
    ),
    # 9: step by step / step-by-step / stepbystep ... plan / update
    rf"{_STEP_BY_STEP}{_ANY}{{0,16}}(?:{_PLAN}|{_UPDATE})",
)

REQUIRE_PLAN_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(source, re.IGNORECASE) for source in _SOURCES
)
"""The nine require-plan patterns, in the order of docs/behaviour.md §6.9."""


def _content_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, Iterable):
        texts: list[str] = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, Mapping) and part.get("type", "text") == "text":
                texts.append(str(part.get("text", "")))
        return "\n".join(texts)
    return ""


def last_user_text(messages: Iterable[Mapping[str, object]]) -> str:
    """Text of the last user-role message (text parts joined with ``\\n``); ``""`` if none."""
    last: Mapping[str, object] | None = None
    for message in messages:
        if message.get("role") == "user":
            last = message
    return "" if last is None else _content_text(last.get("content"))


def text_requires_plan(text: str) -> bool:
    """True when ``text`` explicitly asks for a plan, plan mode or per-step updates."""
    return any(pattern.search(text) for pattern in REQUIRE_PLAN_PATTERNS)


def should_require_plan(messages: Iterable[Mapping[str, object]]) -> bool:
    """True when the last user message explicitly asks for a plan (see the module notes)."""
    return text_requires_plan(last_user_text(messages))
