"""Tool-response compression (docs/behaviour.md §8.3–8.4, §14.38–14.39).

Token counts use ``len`` (one token per character) or a word counter, so the 20%/50% tiers are
exact. The compression model is a plain function.
"""

from __future__ import annotations

import json
import threading

from jupyter_agent.llm.types import Usage
from jupyter_agent.loop.compress import CompressLLMError, compress_tool_response
from jupyter_agent.loop.compress.constants import TRUNCATION_MARKER
from jupyter_agent.loop.compress.tool_response import (
    LARGE_CONTENT_SYSTEM_PROMPT,
    compress_large_content,
)


def words(text: str) -> int:
    """Test counter: one token per whitespace-separated word."""
    return len(text.split())


class FakeLLM:
    """Answers with ``answer(chunk)`` and records (chunk, max_tokens) for every call."""

    def __init__(self, answer=lambda chunk: "- summary -> ok", barrier=None, error=None) -> None:
        self.answer = answer
        self.barrier = barrier
        self.error = error
        self.calls: list[tuple[str, int]] = []
        self.prompts: list[str] = []

    def __call__(self, system_prompt: str, user_prompt: str, max_tokens: int) -> tuple[str, Usage]:
        assert system_prompt == LARGE_CONTENT_SYSTEM_PROMPT
        chunk = user_prompt.split("<content>\n", 1)[1].split("\n</content>", 1)[0]
        self.calls.append((chunk, max_tokens))
        self.prompts.append(user_prompt)
        if self.barrier is not None:
            self.barrier.wait(timeout=30)  # only passes if the chunks really run in parallel
        if self.error is not None:
            raise self.error
        return self.answer(chunk), Usage(input_tokens=len(chunk), output_tokens=5)


def test_simplest_use_small_result_passes_through() -> None:
    result = compress_tool_response("42 rows loaded", 100_000)
    assert result.text == "42 rows loaded"
    assert result.usage == [] and result.used_llm is False and result.method == "unchanged"


def test_scenario_38_result_within_20_percent_is_untouched() -> None:
    text = "see https://example.com/x and /home/me/data.csv " + "y" * (15_000 - 48)
    assert len(text) == 15_000
    result = compress_tool_response(text, 100_000, FakeLLM(), count_tokens=len)
    assert result.text is text  # §8.3: never touched at or below 20%


def test_scenario_38_pretty_json_is_minified_without_llm() -> None:
    value = "v" * 17_992
    minified = json.dumps({"k": value}, separators=(",", ":"))
    pretty = "{\n" + " " * 11_998 + '"k":"' + value + '"\n}'
    assert (len(pretty), len(minified)) == (30_000, 18_000)
    llm = FakeLLM()
    result = compress_tool_response(pretty, 100_000, llm, count_tokens=len)
    assert result.text == minified
    assert result.method == "json" and result.usage == [] and llm.calls == []
    assert (result.tokens_before, result.tokens_after) == (30_000, 18_000)


def _plain_text_60k() -> str:
    body = " ".join(["abcd"] * 11_000) + "!"  # 55000 characters
    url = "https://example.com/" + "a" * (4_999 - 20)
    return body + "\n" + url  # the URL goes in the cleanup: 60000 -> 55000


def test_scenario_39_large_text_goes_through_llm_chunk_compression() -> None:
    text = _plain_text_60k()
    assert len(text) == 60_000
    llm = FakeLLM()
    result = compress_tool_response(text, 100_000, llm, count_tokens=len)

    assert len(llm.calls) == 1  # 55000 characters fit one chunk of 40000 tokens * 3
    chunk, max_tokens = llm.calls[0]
    assert len(chunk) == 55_000
    assert max_tokens == 13_000  # 0.65 of the 20000-token target
    assert "Target maximum output tokens: 13000.\n" in llm.prompts[0]
    assert [(u.module, u.usage.input_tokens) for u in result.usage] == [
        ("tool_response_compress", 55_000)
    ]
    assert result.used_llm is True and result.method == "llm"
    assert result.tokens_after <= 20_000
    # The summary came out far below the target, so source excerpts were appended.
    assert result.text.startswith("- summary -> ok\n\nSource excerpts for exact labels and facts:")


def test_chunks_run_in_parallel_threads_and_merge_in_order() -> None:
    text = " ".join(f"w{i}" for i in range(60_000))  # 60000 words, about 410000 characters
    llm = FakeLLM(answer=lambda chunk: "from " + chunk.split()[0], barrier=threading.Barrier(4))
    result = compress_tool_response(text, 100_000, llm, count_tokens=words)

    assert len(llm.calls) == 4  # chunks of 40000 tokens * 3 = 120000 characters
    assert {max_tokens for _, max_tokens in llm.calls} == {3250}  # floor(13000 / 4)
    firsts = [
        "from " + chunk.split()[0] for chunk, _ in sorted(llm.calls, key=lambda c: text.index(c[0]))
    ]
    assert result.text.startswith("\n\n".join(firsts))
    assert len(result.usage) == 4


def test_merge_round_when_chunk_answers_are_too_long() -> None:
    long_answer = "fact " * 30_000

    def answer(chunk: str) -> str:
        return "short merged" if chunk.startswith("fact") else long_answer

    llm = FakeLLM(answer=answer)
    result = compress_large_content("x " * 60_000, 20_000, 100_000, llm, count_tokens=words)
    assert [max_tokens for _, max_tokens in llm.calls] == [
        13_000,
        18_000,
    ]  # chunk, then 0.9 x limit
    assert result.text.startswith("short merged")
    assert [u.module for u in result.usage] == ["llm_compress_text", "llm_compress_text"]


def test_low_gain_merge_falls_back_to_head_tail_truncation() -> None:
    llm = FakeLLM(answer=lambda chunk: chunk)  # the model only repeats its input
    text = "\n\n".join(f"para {i} " + "z " * 50 for i in range(1_000))
    result = compress_large_content(text, 20_000, 100_000, llm, count_tokens=words)
    assert len(llm.calls) == 2  # one chunk, one merge round, then deterministic truncation
    assert TRUNCATION_MARKER in result.text
    assert result.text.startswith("para 0 ") and words(result.text) <= 20_000


def test_without_llm_or_when_it_fails_the_text_is_truncated_to_the_target() -> None:
    text = _plain_text_60k()
    no_llm = compress_tool_response(text, 100_000, None, count_tokens=len)
    assert no_llm.method == "truncate" and len(no_llm.text) <= 20_000
    assert TRUNCATION_MARKER in no_llm.text

    billed = CompressLLMError("stream dropped", usage=Usage(input_tokens=9, output_tokens=1))
    failed = compress_tool_response(text, 100_000, FakeLLM(error=billed), count_tokens=len)
    assert failed.method == "truncate" and len(failed.text) <= 20_000
    assert [u.usage.input_tokens for u in failed.usage] == [9]


def test_edge_26_falsy_json_takes_the_text_path_truthy_json_is_minified() -> None:
    assert compress_tool_response("null" + " \t" * 5_000, 10_000, count_tokens=len).text == "null"
    assert compress_tool_response("0" + "\n" * 5_000, 10_000, count_tokens=len).method == "cleanup"
    empty_list = compress_tool_response("[" + " " * 5_000 + "]", 10_000, count_tokens=len)
    assert (empty_list.text, empty_list.method) == ("[]", "json")  # [] is truthy, as in JS
    url_json = '{"u": "https://example.com/x"}' + " " * 5_000
    assert compress_tool_response(url_json, 10_000, count_tokens=len).text == (
        '{"u":"https://example.com/x"}'
    )


def test_large_json_becomes_a_structural_summary() -> None:
    rows = [{"tags": ["a", "b"], "name": f"item {i}", "id": i} for i in range(1_000)]
    result = compress_tool_response(json.dumps(rows), 10_000, count_tokens=len)
    summary = json.loads(result.text)
    assert summary["summaryType"] == "JSON structural summary"
    assert summary["structure"][:8] == [
        "root: array(length=1000)",
        "[0] keys: id, name, tags",
        "[0].id: 0",
        "[0].name: item 0",
        "[0].tags: array(length=2)",
        "[0].tags[0]: a",
        "[0].tags[1]: b",
        "[999] keys: id, name, tags",
    ]
    assert summary["importantScalarValues"][:5] == ["a", "b", "name=item 0", "id=0", "name=item 1"]
    assert len(summary["importantScalarValues"]) == 80


def test_edge_27_text_cleanup_is_lossy() -> None:
    head = (
        "See ![chart](https://x.io/c.png) at https://example.com/a?b=1 file "
        "/home/me/project/data.csv id 550e8400-e29b-41d4-a716-446655440000 hash "
        + "ab12" * 10
        + " at 2024-05-01T10:00:00Z done.\n\n\n\n\tend "
        + "Q" * 120
        + " tail"
    )
    text = head + " word" * 2_000
    # Window 30000: 10300 characters are over the 6000 direct tier, and the cleaned text is
    # within the 15000 light tier, so no LLM is involved.
    result = compress_tool_response(text, 30_000, count_tokens=len)
    assert result.method == "cleanup"
    assert result.text.startswith(
        "See [chart] at file data.csv id hash at done.\n\n end [BASE64_DATA] tail word word"
    )


def test_exact_anchors_lost_by_the_summary_are_appended() -> None:
    source = "`alpha_key` and `beta_key`\n" + "x " * 60_000
    # 7000 words: above 45% of the excerpt target (6750), below 80% of the limit (16000).
    llm = FakeLLM(answer=lambda chunk: "word " * 7_000)
    result = compress_large_content(source, 20_000, 100_000, llm, count_tokens=words)
    assert "Source excerpts" not in result.text
    assert result.text.endswith("\n\nSource labels / exact anchors:\n\n- alpha_key\n- beta_key")


def test_rule_cleanup_alone_can_be_enough() -> None:
    text = "keep this " + "https://example.com/" + "p" * 200 + " and this"
    result = compress_large_content(text, 30, 100_000, FakeLLM(), count_tokens=len)
    # Stage 1 (URLs, base64) is enough here, so stage 2 (whitespace among others) never runs.
    assert (result.text, result.method, result.usage) == ("keep this  and this", "cleanup", [])
