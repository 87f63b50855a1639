"""A huge tool result costs a bounded number of compression requests, counted at the server.

Before the bound, a 50 MB result made hundreds of requests (one per chunk of half the
window). Now it is cut to ``TOOL_RESULT_MAX_CHARS`` first, and one compression makes at most
``COMPRESSION_MAX_REQUESTS`` model calls, however large the result and however useless the
compression model's answers.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest

from jupyter_agent import tool, toolloop
from jupyter_agent.llm.client import OpenAIClient as ModelClient
from jupyter_agent.llm.client import RetryPolicy
from jupyter_agent.llm.profiles import ModelProfile
from jupyter_agent.llm.tokens import count_text_tokens
from jupyter_agent.llm.types import Usage
from jupyter_agent.loop.compress.constants import (
    COMPRESSION_MAX_CHUNKS,
    COMPRESSION_MAX_REQUESTS,
    MERGED_COMPRESSION_MAX_ROUNDS,
    TOOL_RESPONSE_DIRECT_RETURN_CONTEXT_RATIO,
    TOOL_RESULT_MAX_CHARS,
    ratio_limit,
)
from jupyter_agent.loop.compress.tool_response import (
    LARGE_CONTENT_SYSTEM_PROMPT,
    compress_tool_response,
)
from jupyter_agent.loop.compress.truncate import cap_chars
from tests.fakes.openai_server import ScriptedOpenAI, call, error, text, tool_calls

pytestmark = pytest.mark.timeout(240)

KEY = "sk-test-key-0123456789"
WINDOW = 32_000
FIFTY_MB = 50 * 1024 * 1024
WORDS = ("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron "
         "pi rho sigma tau upsilon").split()


def _huge_text(size: int = FIFTY_MB) -> str:
    rng = random.Random(7)
    line = "\n".join(" ".join(rng.choice(WORDS) for _ in range(12)) for _ in range(200)) + "\n"
    return ("BEGIN-OF-RESULT\n" + line * (size // len(line) + 1))[: size - 14] + "\nEND-OF-RESULT"


def _is_compression(body: dict[str, Any]) -> bool:
    first = (body.get("messages") or [{}])[0]
    return first.get("role") == "system" and first.get("content") == LARGE_CONTENT_SYSTEM_PROMPT


def _router(agent_turns: list[Any], compress: Callable[[dict[str, Any]], Any]) -> Any:
    """Compression requests get ``compress(body)``; the others take the agent's next turn."""
    def route(body: dict[str, Any]) -> Any:
        return compress(body) if _is_compression(body) else agent_turns.pop(0)
    return route


def _client(server: ScriptedOpenAI, retries: int = 0) -> ModelClient:
    profile = ModelProfile(name="small-window", model="small-window", max_context=WINDOW)
    return ModelClient(profile, api_key=KEY, base_url=server.base_url,
                       retry=RetryPolicy(max_retries=retries, base_delay=0.001, max_delay=0.002))


def _run_with_huge_result(server: ScriptedOpenAI, compress: Callable[[dict[str, Any]], Any],
                          retries: int = 0) -> tuple[Any, list[dict[str, Any]], str]:
    huge = _huge_text()

    @tool
    def dump() -> str:
        """Return a very large log."""
        return huge

    agent = [tool_calls([call("dump", {}, id="d1")]), text("Read the log.")]
    server.default = _router(agent, compress)
    run = toolloop("Read the whole log", tools=["dump"], session="huge",
                   client=_client(server, retries))
    compression = [b for b in server.requests if _is_compression(b)]
    last = [b for b in server.requests if not _is_compression(b)][-1]
    (result,) = [m["content"] for m in last["messages"] if m["role"] == "tool"]
    return run, compression, result


def test_a_50_mb_tool_result_makes_at_most_the_bound_of_compression_requests(
        server: ScriptedOpenAI) -> None:
    run, compression, result = _run_with_huge_result(
        server, lambda body: text("- log -> twelve Greek letters per line, repeated"))
    assert run.status == "done" and run.answer == "Read the log."
    assert 1 <= len(compression) <= COMPRESSION_MAX_REQUESTS
    # Every request that reached the server was small: the 50 MB never went over the wire.
    for body in compression:
        assert len(body["messages"][1]["content"]) < WINDOW * 4
    # What the model got fits the tool-result budget of its window.
    assert count_text_tokens(result) <= ratio_limit(WINDOW, TOOL_RESPONSE_DIRECT_RETURN_CONTEXT_RATIO)
    assert "twelve Greek letters" in result
    (record,) = run.tool_calls
    assert record["output"] == result  # the run's record shows what the model saw
    assert len(record["value"]) == FIFTY_MB  # the notebook still gets the whole value


def test_a_compression_model_that_only_echoes_is_still_bounded(server: ScriptedOpenAI) -> None:
    def echo(body: dict[str, Any]) -> Any:
        content = body["messages"][1]["content"]
        return text(content.split("<content>\n", 1)[1].split("\n</content>", 1)[0])

    run, compression, result = _run_with_huge_result(server, echo)
    assert run.status == "done"
    assert len(compression) <= COMPRESSION_MAX_REQUESTS
    assert count_text_tokens(result) <= ratio_limit(WINDOW, TOOL_RESPONSE_DIRECT_RETURN_CONTEXT_RATIO)
    assert result.startswith("BEGIN-OF-RESULT")  # truncation keeps the head...
    assert "END-OF-RESULT" in result  # ...and the tail


def test_failing_compression_requests_are_bounded_with_their_retries(
        server: ScriptedOpenAI) -> None:
    retries = 2
    run, compression, result = _run_with_huge_result(server, lambda body: error(500, "down"),
                                                     retries=retries)
    assert run.status == "done"  # the result was truncated instead; the run went on
    assert len(compression) <= COMPRESSION_MAX_REQUESTS * (1 + retries)
    assert count_text_tokens(result) <= ratio_limit(WINDOW, TOOL_RESPONSE_DIRECT_RETURN_CONTEXT_RATIO)


class CountingLLM:
    def __init__(self, answer: Callable[[str], str]) -> None:
        self.answer = answer
        self.calls = 0

    def __call__(self, system: str, user: str, max_tokens: int) -> tuple[str, Usage]:
        self.calls += 1
        chunk = user.split("<content>\n", 1)[1].split("\n</content>", 1)[0]
        return self.answer(chunk), Usage(input_tokens=len(chunk) // 4, output_tokens=10)


@pytest.mark.parametrize("window", [8_192, 1_047_576])  # the smallest and a 1M window
def test_the_bound_holds_for_every_window(window: int) -> None:
    text_ = _huge_text(3 * 1024 * 1024)  # over TOOL_RESULT_MAX_CHARS: the cap is in play
    for answer in (lambda c: "- short", lambda c: c, lambda c: c + c):  # good, echo, worse
        llm = CountingLLM(answer)
        out = compress_tool_response(text_, window, llm)
        assert llm.calls <= COMPRESSION_MAX_REQUESTS
        assert count_text_tokens(out.text) <= ratio_limit(
            window, TOOL_RESPONSE_DIRECT_RETURN_CONTEXT_RATIO)


def test_the_bound_is_chunks_plus_merge_rounds() -> None:
    assert COMPRESSION_MAX_REQUESTS == COMPRESSION_MAX_CHUNKS + MERGED_COMPRESSION_MAX_ROUNDS
    assert COMPRESSION_MAX_REQUESTS < 10


def test_cap_keeps_both_ends_and_says_what_it_cut() -> None:
    body = "H" * 600 + "M" * 10_000 + "T" * 400
    out = cap_chars(body, 1_000)
    assert len(out) <= 1_000
    assert out.startswith("H") and out.endswith("T" * 100)
    omitted = len(body) - out.count("H") - out.count("M") - out.count("T")
    assert f"[tool result too long: {omitted:,} characters omitted]" in out
    assert cap_chars(body, len(body)) is body  # at the limit: untouched


def test_a_result_over_the_cap_is_cut_before_anything_else() -> None:
    llm = CountingLLM(lambda c: "- short")
    out = compress_tool_response("word " * (TOOL_RESULT_MAX_CHARS // 4), 1_047_576, llm,
                                 max_chars=10_000)
    assert out.method == "truncate" and llm.calls == 0  # small enough once cut
    assert "characters omitted" in out.text and len(out.text) <= 10_000
