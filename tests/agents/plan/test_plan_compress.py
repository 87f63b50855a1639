"""Checkpoint compression inside ``%%plan`` (docs/behaviour.md §6.14, §8.2) on a small window.

The profile's window is 6000 tokens, so the trigger is 4800: the planning prompt and the tool
schemas (about 4450 tokens) fit, and one large tool result pushes the next request over.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from jupyter_agent.agents.plan import plan
from jupyter_agent.llm.client import OpenAIClient, RetryPolicy
from jupyter_agent.llm.profiles import BUILTIN_PROFILES, ModelProfile, register_profile
from jupyter_agent.loop.compress.checkpoint_prompt import CHECKPOINT_SYSTEM_PROMPT
from jupyter_agent.session import Store
from jupyter_agent.tools.registry import tool
from tests.agents.plan.plan_scripts import events_of, set_plan, step_done
from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls
from tests.stored import stored_messages

pytestmark = pytest.mark.usefixtures("plan_env")

CHECKPOINT = ("<context_checkpoint>\n# Context Checkpoint\n## Current Task\n- summarise the "
              "big file\n## Next Steps\n- answer\n</context_checkpoint>")
PROMPT = "Read the big file and summarise it."


@pytest.fixture
def small_client(srv: ScriptedOpenAI) -> Iterator[OpenAIClient]:
    profile = register_profile(ModelProfile(name="plan-small-window", model="scripted-model",
                                            max_context=6000, max_output=1000))
    yield OpenAIClient(profile, api_key="k", base_url=srv.base_url,
                       retry=RetryPolicy(1, 0.01, 0.02))
    BUILTIN_PROFILES.pop(profile.name, None)


@tool(register=False)
def big_file() -> str:
    """Read the big file."""
    return "word " * 800  # about 800 tokens: the next request is over 80% of the window


def test_a_large_history_is_replaced_by_a_checkpoint(
        srv: ScriptedOpenAI, small_client: Any, store: Store):
    srv.enqueue(tool_calls([call("update_plan", set_plan("1"), id="p1"),
                            call("big_file", {}, id="c1")]),
                text(CHECKPOINT),  # the compression call
                tool_calls([call("update_plan", step_done("1"), id="p2")]),
                text("It says word, 800 times."))
    run = plan(PROMPT, client=small_client, store=store, tools=[big_file])

    assert run.status == "done" and run.answer == "It says word, 800 times."
    squeeze = srv.requests[1]
    assert not squeeze.get("stream") and not squeeze.get("tools")
    assert squeeze["messages"][0] == {"role": "system", "content": CHECKPOINT_SYSTEM_PROMPT}
    assert "word word" in squeeze["messages"][1]["content"]
    system, checkpoint, newest = srv.requests[2]["messages"]
    assert system == srv.requests[0]["messages"][0]
    # The hidden marker never reaches the API; the active plan comes first.
    assert checkpoint.keys() == {"role", "content"} and checkpoint["role"] == "user"
    assert checkpoint["content"].startswith("<active_plan>\n{")
    assert checkpoint["content"].endswith(CHECKPOINT)
    assert newest == {"role": "user", "content": PROMPT}  # §8.2: kept verbatim
    (compressed,) = events_of(run, "context_compressed")
    assert compressed.method == "checkpoint" and compressed.round == 2
    assert compressed.tokens_after < compressed.tokens_before
    usage = [u for u in events_of(run, "usage") if u.module == "compress_llm_messages"]
    assert len(usage) == 1 and usage[0].input_tokens > 0
    assert run.input_tokens == sum(u.input_tokens for u in events_of(run, "usage"))
    # The session keeps the real turn, not the checkpoint.
    history = stored_messages(store, "default")
    assert history[0] == {"role": "user", "content": PROMPT}
    assert history[-1] == {"role": "assistant", "content": "It says word, 800 times."}


def test_stop_gate_feedback_is_not_taken_for_the_users_message(
        srv: ScriptedOpenAI, small_client: Any, store: Store):
    srv.enqueue(tool_calls([call("update_plan", set_plan("1"), id="p1")]),
                text("finished early"),  # refused: step 1 is open; feedback is now newest
                tool_calls([call("big_file", {}, id="c1")]),
                text(CHECKPOINT),  # the compression call
                tool_calls([call("update_plan", step_done("1"), id="p2")]),
                text("done"))
    run = plan(PROMPT, client=small_client, store=store, tools=[big_file])

    assert run.status == "done" and run.answer == "done"
    assert len(events_of(run, "stop_gate_feedback")) == 1
    assert srv.requests[2]["messages"][-1]["content"].startswith("<stop_gate_feedback>")
    assert srv.requests[3]["messages"][0]["content"] == CHECKPOINT_SYSTEM_PROMPT
    _, checkpoint, newest = srv.requests[4]["messages"]
    assert checkpoint["content"].endswith(CHECKPOINT)
    assert newest == {"role": "user", "content": PROMPT}
    assert len(events_of(run, "context_compressed")) == 1


def test_a_failed_checkpoint_falls_back_to_truncation_and_is_still_billed(
        srv: ScriptedOpenAI, small_client: Any, store: Store):
    # A long earlier turn in the session history puts the first request over the trigger.
    srv.enqueue(text("word " * 3000),  # the earlier turn's long answer
                text("   "),  # the compression call answers nothing usable
                text("summary"))
    plan("hello", client=small_client, store=store, tools=[], history=6)
    run = plan(PROMPT, client=small_client, store=store, tools=[], history=6)

    assert run.status == "done" and run.answer == "summary"
    (compressed,) = events_of(run, "context_compressed")
    assert compressed.method == "truncate" and compressed.round == 1
    billed = [u for u in events_of(run, "usage") if u.module == "compress_llm_messages"]
    assert len(billed) == 1  # the thrown-away checkpoint call is billed (§8.2)
    assert srv.requests[1]["messages"][0]["content"] == CHECKPOINT_SYSTEM_PROMPT
    # The old round (the long answer) was cut; the current question is whole.
    system, newest = srv.requests[2]["messages"]
    assert system["role"] == "system" and newest == {"role": "user", "content": PROMPT}
