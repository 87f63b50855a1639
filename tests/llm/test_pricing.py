"""Prices, per-call accounting, temperature (docs/behaviour.md §9.5–9.7, §14.44, §14.49–14.52)."""

from __future__ import annotations

import pytest

from jupyter_agent.llm.client import OpenAIClient
from jupyter_agent.llm.pricing import PriceTier, price_call, sanitize_price_tiers, select_tier
from jupyter_agent.llm.profiles import (
    Capabilities,
    ModelProfile,
    map_temperature,
    resolve_profile,
)
from jupyter_agent.llm.types import Usage
from jupyter_agent.loop.hooks import LoopHooks, ToolOutcome
from jupyter_agent.loop.kernel import LoopConfig, run_loop
from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls

# The per-1K units of §14.49: prices per 1,000 tokens, tier bounds in thousands of input tokens.
REF = {"price_unit": 1000, "bound_unit": 1000}
TIERS_49 = [{"max_input_tokens": 32, "input_price": 1, "output_price": 2},
            {"input_price": 3, "output_price": 6}]


def test_a_profile_prices_per_million_tokens() -> None:
    profile = resolve_profile("gpt-4.1-mini")  # 0.40 in / 1.60 out per 1M tokens
    assert profile.cost(Usage(input_tokens=1_000_000, output_tokens=1_000_000)) == pytest.approx(2.0)
    assert profile.cost(Usage(input_tokens=2_500, output_tokens=500)) == pytest.approx(
        0.4 * 0.0025 + 1.6 * 0.0005)


def test_scenario_49_tier_boundary_is_inclusive() -> None:
    tiers = sanitize_price_tiers(TIERS_49)
    assert price_call(tiers, 32_000, 1_000, **REF) == pytest.approx(34)
    assert price_call(tiers, 32_001, 1_000, **REF) == pytest.approx(3 * 32.001 + 6 * 1)
    assert price_call(tiers, 32_001, 1_000, **REF) == pytest.approx(102.003)


def test_scenario_50_each_call_priced_alone_then_summed() -> None:
    tiers = sanitize_price_tiers(TIERS_49)
    separate = (price_call(tiers, 30_000, 1_000, **REF) + price_call(tiers, 40_000, 1_000, **REF))
    assert separate == pytest.approx((30 + 2) + (3 * 40 + 6))
    assert separate != pytest.approx(price_call(tiers, 70_000, 2_000, **REF))


def test_scenario_50_the_loop_sums_per_call_prices(server: ScriptedOpenAI) -> None:
    # The same tiers in our units: per 1M tokens, bounds in tokens.
    profile = ModelProfile(name="tiered", model="tiered", price_tiers=[
        PriceTier(max_input_tokens=32_000, input_price=1, output_price=2),
        PriceTier(input_price=3, output_price=6)])
    client = OpenAIClient(profile, api_key="sk-test", base_url=server.base_url)
    server.enqueue(
        tool_calls([call("noop", {})], usage={"prompt_tokens": 30_000, "completion_tokens": 1_000}),
        text("done", usage={"prompt_tokens": 40_000, "completion_tokens": 1_000}))
    result = run_loop(client, [{"role": "user", "content": "go"}],
                      LoopConfig(model="tiered", tools=[{"type": "function", "function": {
                          "name": "noop", "parameters": {"type": "object"}}}]),
                      LoopHooks(run_tool=lambda c, s: ToolOutcome(output="ok")))
    assert result.status == "done"
    assert (result.input_tokens, result.output_tokens) == (70_000, 2_000)
    assert result.cost == pytest.approx((0.030 + 0.002) + (0.120 + 0.006))
    assert [u.cost for u in result.usages] == pytest.approx([0.032, 0.126])



@pytest.mark.parametrize("stream", [True, False])
def test_scenario_51_own_key_is_free_but_tokens_count(server: ScriptedOpenAI,
                                                      stream: bool) -> None:
    """A gateway that reports ``usedUserOpenAIKey: true`` for a call: the call costs 0 in the
    run (its footer, the store, ``%agent usage``), its tokens still count; the next call,
    without the field, is priced as usual."""
    from jupyter_agent.agents.chat import chat

    own = {"prompt_tokens": 5_000, "completion_tokens": 700, "usedUserOpenAIKey": True}
    server.enqueue(text("paid by the user", usage=own),
                   text("paid by us", usage={"prompt_tokens": 5_000, "completion_tokens": 700}))
    free = chat("hi", model="gpt-4.1", stream=stream, history=0)
    assert free.status == "done" and free.cost == 0.0
    assert (free.input_tokens, free.output_tokens) == (5_000, 700)
    priced = chat("hi", model="gpt-4.1", stream=stream, history=0)
    assert (priced.input_tokens, priced.output_tokens) == (5_000, 700)
    assert priced.cost == pytest.approx(5_000 * 2.0 / 1e6 + 700 * 8.0 / 1e6)


def test_scenario_52_non_increasing_bound_dropped() -> None:
    tiers = sanitize_price_tiers([
        {"max_input_tokens": 10, "input_price": 1, "output_price": 1},
        {"max_input_tokens": 5, "input_price": 2, "output_price": 2},
        {"max_input_tokens": 20, "input_price": 3, "output_price": 3}])
    assert [(t.min_input_tokens, t.max_input_tokens, t.input_price) for t in tiers] == [
        (0, 10, 1), (10, 20, 3)]


def test_cleaning_rules() -> None:
    # A priceless bound-less row ends the list; a priced one closes it as an open tier.
    assert len(sanitize_price_tiers([{"max_input_tokens": 10, "input_price": 1},
                                     {"max_input_tokens": None},
                                     {"max_input_tokens": 30, "input_price": 9}])) == 1
    closed = sanitize_price_tiers([{"max_input_tokens": 10, "input_price": 1},
                                   {"output_price": 4}, {"max_input_tokens": 30}])
    assert [(t.max_input_tokens, t.output_price) for t in closed] == [(10, 0.0), (None, 4)]
    # Invalid prices become 0; a negative first bound becomes 0 (which counts as open-ended).
    first = sanitize_price_tiers([{"max_input_tokens": -5, "input_price": float("nan")}])[0]
    assert (first.max_input_tokens, first.input_price) == (0, 0.0)
    assert select_tier(sanitize_price_tiers([{"max_input_tokens": 0, "input_price": 7}]),
                       10**9).input_price == 7


def test_beyond_every_bound_uses_the_last_tier_and_no_tiers_cost_nothing() -> None:
    tiers = sanitize_price_tiers([{"max_input_tokens": 10, "input_price": 1},
                                  {"max_input_tokens": 20, "input_price": 2}])
    assert select_tier(tiers, 25_000, bound_unit=1000).input_price == 2
    assert price_call([], 10**6, 10**6) == 0.0


def test_map_temperature_clamps_to_the_model() -> None:
    default = resolve_profile("gpt-4.1-mini")
    assert map_temperature(default, 0.7) == 0.7
    assert map_temperature(default, 5) == 2.0
    assert map_temperature(default, 0) == 0.01
    assert map_temperature(default, None) is None
    capped = ModelProfile(name="c", model="c", capabilities=Capabilities(max_temperature=1.0))
    assert map_temperature(capped, 1.5) == 1.0
    assert map_temperature(resolve_profile("o4-mini"), 0.7) is None  # never sent
