"""The planning agent's system prompt (docs/behaviour.md §6.13)."""

from __future__ import annotations

import json
import re

from jupyter_agent.agents.plan import apply_plan_update, build_main_system_prompt

SECTIONS = [
    "role",
    "operating_rules",
    "tool_rules",
    "planning_rules",
    "ask_rules",
    "plan_update_rules",
    "completion_rules",
    "security",
    "output_guidelines",
]


def test_simplest_prompt_starts_with_marker():
    prompt = build_main_system_prompt(has_runtime_tools=True)
    assert prompt.startswith("<!-- Main Agent -->\n")


def test_sections_in_order_without_optional_ones():
    prompt = build_main_system_prompt(has_runtime_tools=True)
    tags = re.findall(r"^<([a-z_]+)>$", prompt, flags=re.MULTILINE)
    assert tags == SECTIONS
    assert "<user_background>" not in prompt and "<tool_constraint>" not in prompt
    assert "Jupyter notebook" in prompt


def test_user_background_and_tool_constraint():
    prompt = build_main_system_prompt("You analyse sales data.\nBe brief.", has_runtime_tools=False)
    tags = re.findall(r"^<([a-z_]+)>$", prompt, flags=re.MULTILINE)
    assert tags == [
        "role",
        "user_background",
        "operating_rules",
        "tool_rules",
        "tool_constraint",
        *SECTIONS[3:],
    ]
    assert "<user_background>\nYou analyse sales data.\nBe brief.\n</user_background>" in prompt
    assert "No runtime tools are available" in prompt
    assert "<user_background>" not in build_main_system_prompt("  ", has_runtime_tools=True)


def test_tool_names_follow_renames():
    prompt = build_main_system_prompt(
        has_runtime_tools=True, ask_tool_name="ask_user", update_plan_tool_name="plan_tool"
    )
    assert "call plan_tool to create an active plan" in prompt
    assert "Call ask_user only for hard blocking information" in prompt


def test_correct_example_in_prompt_is_a_valid_update():
    prompt = build_main_system_prompt(has_runtime_tools=True)
    block = prompt.split("- Correct:\n", 1)[1].split("\n- Incorrect", 1)[0]
    args = json.loads(" ".join(line.strip() for line in block.splitlines()))
    assert apply_plan_update(None, args).ok
    bad = prompt.split("- Incorrect (set_plan without a plan, with status and reason on it):\n", 1)[
        1
    ]
    bad_args = json.loads(
        " ".join(line.strip() for line in bad.split("\n- Every", 1)[0].splitlines())
    )
    assert not apply_plan_update(None, bad_args).ok


def test_user_text_with_braces_is_kept_verbatim():
    prompt = build_main_system_prompt("Use {placeholders} as {{is}}.", has_runtime_tools=True)
    assert "Use {placeholders} as {{is}}." in prompt
