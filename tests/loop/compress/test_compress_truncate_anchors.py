"""Head-and-tail truncation and structural anchors (docs/behaviour.md §8.5, §8.6)."""

from __future__ import annotations

from jupyter_agent.loop.compress.anchors import extract_anchors, render_anchor_block
from jupyter_agent.loop.compress.constants import TRUNCATION_MARKER, ratio_limit
from jupyter_agent.loop.compress.truncate import (
    shrink_to_token_budget,
    truncate_by_chars,
    truncate_head_tail,
)


def test_simplest_use_truncation_keeps_head_and_tail_around_the_marker() -> None:
    assert TRUNCATION_MARKER == (
        "\n\n... [content truncated: middle omitted to fit token budget] ...\n\n"
    )
    text = "H" * 100 + "T" * 100
    assert (
        truncate_by_chars(text, len(TRUNCATION_MARKER) + 10)
        == "HHHHHH" + TRUNCATION_MARKER + "TTTT"
    )
    assert truncate_by_chars("short", 100) == "short"


def test_head_tail_takes_whole_paragraphs_from_both_ends() -> None:
    paragraphs = [f"paragraph {i:02d} " + "x" * 30 for i in range(40)]  # 43 characters each
    text = "\n\n".join(paragraphs)
    # 100 tokens -> 300 characters; minus the marker, 60% head (139) and 40% tail (93).
    result = truncate_head_tail(text, 100)
    head, tail = result.split(TRUNCATION_MARKER)
    assert head == "\n\n".join(paragraphs[:3])
    assert tail == "\n\n".join(paragraphs[-2:])


def test_head_tail_uses_the_real_density_when_the_count_is_known() -> None:
    text = "\n\n".join("p" * 40 for _ in range(100))  # 4198 characters
    # Claimed 4198 tokens for 100 allowed: budget = 4198 * 100 / 4198 * 0.9 = 90 characters
    # (not 300), so the 67-character marker leaves 23: no 40-character paragraph fits, and the
    # first and last paragraphs are cut by characters (60% head, 40% tail).
    assert len(TRUNCATION_MARKER) == 67
    result = truncate_head_tail(text, 100, current_tokens=4198)
    assert result == "p" * 13 + TRUNCATION_MARKER + "p" * 10


def test_shrink_reaches_the_real_token_budget() -> None:
    text = "\n\n".join(f"line {i} " * 20 for i in range(500))
    result = shrink_to_token_budget(text, 300, count_tokens=len)
    assert len(result) <= 300
    assert result.startswith("line 0 ") and TRUNCATION_MARKER.strip() in result


def test_ratio_limit_floor_and_cap() -> None:
    assert ratio_limit(100_000, 0.8) == 80_000
    assert ratio_limit(10_000, 0.2) == 4096
    assert ratio_limit(4_000, 0.8) == 4000


def test_anchors_follow_pattern_order_and_deduplicate() -> None:
    text = (
        "# Release Notes\n"
        'Call `load_config` with {"api_key": 1}\n'
        "Status: READY\n"
        "1.2 Install steps\n"
        "【重要说明】 see https://example.com/a and ./src/main.py\n"
        "HTTP ERR-404 user_id my-thing 2024-01-02 45% API_KEY\n"
        "<tool_result>\n"
    )
    assert extract_anchors(text) == [
        "load_config",
        "api_key",
        "Release Notes",
        "Status",
        "Install steps",
        "重要说明",
        "tool_result",
        "https://example.com/a",
        "READY",
        "HTTP",
        "ERR-404",
        "user_id",  # API_KEY later is a duplicate of api_key, ignoring case
        "my-thing",
        "2024-01-02",
        "1.2",
        "404",  # "45%" is lost: no word boundary after "%" (a known quirk, §8.6)
        "./src/main.py",
    ]


def test_anchors_respect_scan_window_length_and_limit() -> None:
    assert extract_anchors("x" * 12_000 + " `late_anchor`") == []
    assert extract_anchors("`ab` `" + "y" * 121 + "`") == []
    assert extract_anchors("`one1` `two2` `three3`", limit=2) == ["one1", "two2"]
    assert extract_anchors("中文user_id字段") == ["user_id"]  # ASCII \b (§8.6)


def test_anchor_block_renders_a_prompt_section() -> None:
    assert render_anchor_block("use `run_all`", 5) == (
        "<structural_anchor_candidates>\n- run_all\n</structural_anchor_candidates>\n\n"
    )
    assert render_anchor_block("hi", 5) == ""
