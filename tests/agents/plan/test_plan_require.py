"""Require-plan detection (docs/behaviour.md §6.9, §14.32: whole words for Latin)."""

from __future__ import annotations

import pytest

from jupyter_agent.agents.plan import last_user_text, should_require_plan, text_requires_plan


def test_simplest_plan_request_is_detected():
    assert should_require_plan(
        [{"role": "user", "content": "Please create a plan for migrating the DB"}]
    )


@pytest.mark.parametrize(
    "text",
    [
        # the example phrases of §6.9, one row per pattern
        "开启计划模式",
        "plan mode",
        "planmode",
        "Plan  Mode",
        "plan\nmode",
        "active plan",
        "activeplan",
        "update_plan",
        "update plan",
        "update-plan",
        "updateplan",
        "更新计划",
        "更新一下计划",
        "更新步骤状态",
        "创建计划",
        "制定一个学习计划",
        "拆解步骤",
        "生成plan",
        "create a plan",
        "make a plan for me",
        "draft the steps",
        "build steps",
        "每一步都更新计划",
        "逐步骤标记状态",
        "每步维护plan",
        "step-by-step plan",
        "step by step update",
        "stepbystep plan",
        # §14.32
        "计划模式",
        # case-insensitive and plural
        "CREATE TWO PLANS please",
    ],
)
def test_phrases_that_ask_for_a_plan(text):
    assert text_requires_plan(text)


@pytest.mark.parametrize(
    "text",
    [
        "hello there",
        # Matching anywhere would find ex*plan*ation; Latin words match whole (§6.9, §14.32),
        # so it is not a plan request.
        "Let me build an explanation",
        "create a planet",  # "planet" is not "plan"
        "makeplan",  # glued: neither "make" nor "plan" is a whole word
        "更新explanation",  # the Latin alternative inside a Chinese pattern is a whole word too
        "create a\nplan",  # §14.32: the "any character" gap does not cross a newline
        "the rebuild steps",  # "rebuild" is not the word "build"
        "step by step guide",
    ],
)
def test_phrases_that_do_not(text):
    assert not text_requires_plan(text)


def test_only_the_last_user_message_counts():
    messages = [
        {"role": "user", "content": "make a plan"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "never mind, just answer"},
        {"role": "assistant", "content": "make a plan"},
    ]
    assert not should_require_plan(messages)
    assert not should_require_plan([{"role": "system", "content": "plan mode"}])


def test_array_content_text_parts_are_joined_with_newlines():
    message = {
        "role": "user",
        "content": [
            {"type": "text", "text": "create a"},
            {"type": "image_url", "image_url": {"url": "data:"}},
            {"type": "text", "text": "plan"},
        ],
    }
    assert last_user_text([message]) == "create a\nplan"
    assert not should_require_plan([message])
    message["content"].append({"type": "text", "text": "plan mode"})
    assert should_require_plan([message])
