"""History compression into a context checkpoint (docs/behaviour.md §8.2, §14.34–14.37).

The compression model is an injected callable, so a plain function stands in for it. Token
counts use an exact counter (one token per content character) so thresholds are checked to the
token.
"""

from __future__ import annotations

import json

from jupyter_agent.llm.types import Usage
from jupyter_agent.loop.compress import (
    CompressLLMError,
    compress_request_messages,
    is_checkpoint_message,
    strip_private_keys,
)
from jupyter_agent.loop.compress.checkpoint import normalize_checkpoint
from jupyter_agent.loop.compress.checkpoint_prompt import CHECKPOINT_SYSTEM_PROMPT


def count_chars(messages: list[dict]) -> int:
    """Exact test counter: one token per character of content."""
    return sum(len(m.get("content") or "") for m in messages)


class FakeLLM:
    """Answers every call with ``answer`` (or raises ``error``) and records the calls."""

    def __init__(self, answer: str = "", error: Exception | None = None) -> None:
        self.answer = answer
        self.error = error
        self.calls: list[tuple[str, str, int]] = []

    def __call__(self, system_prompt: str, user_prompt: str, max_tokens: int) -> tuple[str, Usage]:
        self.calls.append((system_prompt, user_prompt, max_tokens))
        if self.error is not None:
            raise self.error
        return self.answer, Usage(input_tokens=1000, output_tokens=200)


def test_simplest_use_replaces_history_with_a_hidden_checkpoint() -> None:
    llm = FakeLLM(
        "<context_checkpoint>\n# Context Checkpoint\n## Next Steps\n- run\n</context_checkpoint>"
    )
    messages = [
        {"role": "system", "content": "S" * 100},
        {"role": "user", "content": "u" * 90_000},
        {"role": "assistant", "content": "done"},
    ]
    result = compress_request_messages(messages, 100_000, 0, llm, count_messages=count_chars)

    assert result is not None and result.method == "checkpoint"
    assert result.messages[0] == messages[0]
    assert result.messages[1] == {"role": "user", "content": result.checkpoint, "hideInUI": True}
    assert strip_private_keys(result.messages)[1] == {"role": "user", "content": result.checkpoint}


def _history(total_chars: int) -> list[dict]:
    """system (1000) + user + assistant (1000) + user (1000 - with the rest in the first user)."""
    first_user = total_chars - 3000
    return [
        {"role": "system", "content": "S" * 1000},
        {"role": "user", "content": "q" * first_user},
        {"role": "assistant", "content": "a" * 1000},
        {"role": "user", "content": "n" * 1000},
    ]


def test_scenario_34_trigger_is_strictly_above_80_percent_of_messages_plus_tools() -> None:
    llm = FakeLLM("summary")
    at_limit = compress_request_messages(
        _history(79_500), 100_000, 500, llm, count_messages=count_chars
    )
    assert at_limit is None
    assert llm.calls == []

    over = compress_request_messages(
        _history(79_501), 100_000, 500, llm, count_messages=count_chars
    )
    assert over is not None and over.tokens_before == 80_001
    assert len(llm.calls) == 1
    system_prompt, user_prompt, max_tokens = llm.calls[0]
    assert system_prompt == CHECKPOINT_SYSTEM_PROMPT
    assert "Target maximum output tokens: 20000. Use compact bullets" in user_prompt
    assert max_tokens == 50_000  # the 50% completion ceiling


def test_scenario_35_small_window_trigger_is_capped_at_max_context() -> None:
    llm = FakeLLM("summary")
    messages = [{"role": "system", "content": "S"}, {"role": "user", "content": "u" * 3999}]
    assert compress_request_messages(messages, 4000, 0, llm, count_messages=count_chars) is None

    messages[1]["content"] += "u"  # 4001 tokens: above the whole window
    assert compress_request_messages(messages, 4000, 0, llm, count_messages=count_chars)
    assert len(llm.calls) == 1


def test_scenario_36_fenced_answer_is_unwrapped_and_tagged() -> None:
    llm = FakeLLM("```markdown\nfoo\n```")
    # The only user message is larger than the 20000-token output budget, so it is not kept
    # verbatim and the result is exactly [system, checkpoint].
    messages = [{"role": "system", "content": "S" * 100}, {"role": "user", "content": "u" * 80_000}]
    result = compress_request_messages(messages, 100_000, 0, llm, count_messages=count_chars)

    assert result is not None
    assert result.checkpoint == "<context_checkpoint>\nfoo\n</context_checkpoint>"
    assert result.messages == [
        {"role": "system", "content": "S" * 100},
        {
            "role": "user",
            "content": "<context_checkpoint>\nfoo\n</context_checkpoint>",
            "hideInUI": True,
        },
    ]
    assert result.tokens_after == 100 + len(result.checkpoint)


def test_scenario_37_and_edge_36_empty_answer_keeps_messages_but_bills_the_call() -> None:
    llm = FakeLLM("")
    messages = _history(80_001)
    result = compress_request_messages(messages, 100_000, 0, llm, count_messages=count_chars)

    assert result is not None  # the loop still records usage and a context_compressed event
    assert result.messages == messages
    assert result.method == "truncate" and result.error == "empty checkpoint"
    assert [(u.module, u.usage.input_tokens, u.usage.output_tokens) for u in result.usage] == [
        ("compress_llm_messages", 1000, 200)
    ]
    assert result.used_llm is True


def test_edge_36_aborted_call_keeps_messages_and_reports_its_usage() -> None:
    aborted = CompressLLMError(
        "interrupted", usage=Usage(input_tokens=7, output_tokens=3), aborted=True
    )
    result = compress_request_messages(
        _history(80_001), 100_000, 0, FakeLLM(error=aborted), count_messages=count_chars
    )
    assert result is not None and result.messages == _history(80_001)
    assert result.error == "checkpoint call aborted"
    assert [u.usage.output_tokens for u in result.usage] == [3]


def test_llm_exception_falls_back_to_truncating_old_rounds_without_usage() -> None:
    messages = [
        {"role": "system", "content": "S" * 1000},
        {"role": "user", "content": "old" * 20_000},
        {"role": "assistant", "content": "a" * 30_000},
        {"role": "user", "content": "new question"},
        {"role": "assistant", "content": "b" * 10_000},
    ]
    result = compress_request_messages(
        messages, 100_000, 0, FakeLLM(error=RuntimeError("boom")), count_messages=count_chars
    )
    assert result is not None and result.method == "truncate"
    assert result.error == "checkpoint call failed: RuntimeError: boom"
    assert result.usage == []
    # 101000 tokens do not fit 85% of the window: the old round goes, the newest stays.
    assert result.messages == [messages[0], messages[3], messages[4]]
    assert result.tokens_after == 1000 + 12 + 10_000


def test_no_llm_truncates_instead() -> None:
    result = compress_request_messages(
        _history(90_000), 100_000, 0, None, count_messages=count_chars
    )
    assert result is not None and result.method == "truncate" and result.used_llm is False


def test_edge_23_newest_user_message_is_kept_verbatim_after_the_checkpoint() -> None:
    messages = [
        {"role": "system", "content": "S"},
        {"role": "user", "content": "x" * 80_000},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "Now plot the results"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "plot", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "plotted"},
    ]
    result = compress_request_messages(
        messages, 100_000, 0, FakeLLM("facts"), count_messages=count_chars
    )

    assert result is not None
    assert [m["role"] for m in result.messages] == ["system", "user", "user"]
    assert result.messages[1]["hideInUI"] is True
    assert result.messages[2] == {"role": "user", "content": "Now plot the results"}
    # The pending tool result is summarised, not kept.
    assert all(m["role"] != "tool" for m in result.messages)


def test_user_prompt_holds_histories_tool_memory_and_anchors() -> None:
    llm = FakeLLM("facts")
    messages = [
        {"role": "system", "content": "never sent to the compressor"},
        {"role": "user", "content": "Load `sales_2024.csv`" + " pad" * 30_000},
        {
            "role": "assistant",
            "content": "",
            "reasoning_content": "think",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "load_csv", "arguments": '{"path":"a.csv"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "rows=42"},
    ]
    compress_request_messages(messages, 100_000, 0, llm, count_messages=lambda m: 90_000)
    prompt = llm.calls[0][1]

    histories = json.loads(prompt.split("<histories>\n", 1)[1].split("\n</histories>", 1)[0])
    assert [h["role"] for h in histories] == ["user", "assistant", "tool"]
    assert histories[1]["reasoning_content"] == "think"
    assert histories[2] == {"role": "tool", "content": "rows=42", "tool_call_id": "c1"}
    assert "never sent" not in prompt
    assert '- fn=load_csv; args={"path":"a.csv"}; user=Load `sales_2024.csv`' in prompt
    assert "; result=rows=42\n</tool_call_memory>" in prompt
    assert "<structural_anchor_candidates>\n- sales_2024.csv\n" in prompt
    assert prompt.endswith("Output only the <context_checkpoint>...</context_checkpoint> block.")


def test_active_plan_goes_in_front_and_the_window_filter_recognises_it() -> None:
    plan = {"task": "T", "note": "</active_plan> inside"}
    result = compress_request_messages(
        _history(90_000), 100_000, 0, FakeLLM("facts"), active_plan=plan, count_messages=count_chars
    )
    assert result is not None
    content = result.messages[1]["content"]
    assert content == (
        '<active_plan>\n{\n  "task": "T",\n  "note": "<\\/active_plan> inside"\n}\n</active_plan>\n'
        "<context_checkpoint>\nfacts\n</context_checkpoint>"
    )
    assert is_checkpoint_message(result.messages[1])


def test_normalize_keeps_the_first_complete_block_and_rejects_empty_ones() -> None:
    answer = "Here:\n<context_checkpoint>\nA\n</context_checkpoint>\nthen <context_checkpoint>B"
    assert normalize_checkpoint(answer) == "<context_checkpoint>\nA\n</context_checkpoint>"
    assert normalize_checkpoint("```\n```") is None
    assert normalize_checkpoint("   ") is None
    assert normalize_checkpoint("<context_checkpoint>\n</context_checkpoint>") is None
    # An answer cut off by max_tokens is wrapped once, not nested.
    cut = normalize_checkpoint("<context_checkpoint>\n# Context Checkpoint\n## User Goal")
    assert cut == "<context_checkpoint>\n# Context Checkpoint\n## User Goal\n</context_checkpoint>"


def test_strip_private_keys_keeps_only_api_keys_and_copies() -> None:
    messages = [
        {"role": "user", "content": "x", "hideInUI": True, "reasoning_content": "r"},
        {"role": "tool", "tool_call_id": "c", "name": "f", "content": "y"},
    ]
    stripped = strip_private_keys(messages)
    assert stripped == [
        {"role": "user", "content": "x"},
        {"role": "tool", "tool_call_id": "c", "name": "f", "content": "y"},
    ]
    assert messages[0]["hideInUI"] is True  # the input is not mutated


def test_only_system_messages_or_empty_input_do_nothing() -> None:
    llm = FakeLLM("x")
    assert compress_request_messages([], 100, 0, llm) is None
    system_only = [{"role": "system", "content": "S" * 10_000}]
    assert compress_request_messages(system_only, 100, 0, llm, count_messages=count_chars) is None
    assert llm.calls == []
