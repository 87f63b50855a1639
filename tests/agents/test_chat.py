"""``chat()``: one streamed call with system prompt, knowledge, session history and window fit."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from jupyter_agent import chat
from jupyter_agent.agents.context import (
    CHAT_SEPARATOR,
    SYSTEM_QUOTE_PROMPT,
    USER_QUOTE_PROMPT,
    apply_knowledge,
    quote_role,
)
from jupyter_agent.base.errors import MissingKeyError, ParameterError
from jupyter_agent.llm.profiles import BUILTIN_PROFILES, ModelProfile, register_profile
from tests.fakes.openai_server import ScriptedOpenAI, call, error, text, tool_calls

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def profiles(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Profiles registered by a test are removed after it."""
    saved = dict(BUILTIN_PROFILES)
    yield
    BUILTIN_PROFILES.clear()
    BUILTIN_PROFILES.update(saved)


def sent(server: ScriptedOpenAI, i: int = -1) -> list[dict[str, Any]]:
    return server.requests[i]["messages"]


def test_simplest_chat(server: ScriptedOpenAI) -> None:
    server.enqueue(text("Paris is the capital of France.", reasoning="Easy one."))
    run = chat("What is the capital of France?")
    assert run.status == "done"
    assert run.answer == "Paris is the capital of France."
    assert run.reasoning == "Easy one."
    assert sent(server) == [{"role": "user", "content": "What is the capital of France?"}]
    assert server.requests[0]["stream"] is True
    assert "tools" not in server.requests[0]
    assert run.input_tokens > 0 and run.output_tokens > 0 and run.cost > 0
    assert run.rounds == 1
    types = [e["type"] for e in run.events_json()]
    assert types[0] == "run_started" and types[-1] == "run_finished"
    assert "text_delta" in types and "reasoning_delta" in types
    assert run.view["answer"] == run.answer and run.view["status"] == "done"


def test_scenario_42_system_prompt_parts_and_separator(server: ScriptedOpenAI,
                                                       profiles: None) -> None:
    register_profile(ModelProfile(name="with-default", model="with-default",
                                  default_system_prompt="X"))
    server.enqueue(text("ok"), text("ok"), text("ok"))
    chat("q", model="with-default", system="Y", knowledge=["Z"])
    quote_part = SYSTEM_QUOTE_PROMPT.replace("{{quote}}", "Z")
    assert sent(server)[0] == {"role": "system",
                               "content": f"X{CHAT_SEPARATOR}Y{CHAT_SEPARATOR}{quote_part}"}
    assert server.requests[0]["model"] == "with-default"
    chat("q", model="with-default", system="  ", session=None)  # empty parts are dropped
    assert sent(server)[0] == {"role": "system", "content": "X"}
    chat("q", session=None)  # no part at all: no system message
    assert sent(server)[0]["role"] == "user"


def test_scenario_41_quote_role_rule() -> None:
    assert quote_role("system") == "system"
    assert quote_role("user") == "user"
    template = "Answer {{question}} from:\n{{quote}}"
    assert quote_role("system", template) == "user"
    user_text, system_part = apply_knowledge("Why?", ["doc A", "doc B"], quote_prompt=template)
    assert user_text == "Answer Why? from:\ndoc A\n------\ndoc B"
    assert system_part == ""
    user_text, system_part = apply_knowledge("Why?", ["doc A"], role="user")
    assert user_text == USER_QUOTE_PROMPT.replace("{{quote}}", "doc A").replace(
        "{{question}}", "Why?")
    # Without {{question}} in a user-role template the question disappears (docs/behaviour.md §3.2).
    assert apply_knowledge("Why?", ["doc"], role="user", quote_prompt="K: {{quote}}") == (
        "K: doc", "")


def test_empty_knowledge_list_still_applies_the_template() -> None:
    user_text, system_part = apply_knowledge("q", [])
    assert user_text == "q"
    assert system_part == SYSTEM_QUOTE_PROMPT.replace("{{quote}}", "")
    assert apply_knowledge("q", None) == ("q", "")


def test_scenario_43_history_is_the_last_rounds_never_a_split_call(
        server: ScriptedOpenAI) -> None:
    """For chat-only history n rounds are the last 2n items, as the reference slices; with tool
    turns in the session a round runs from one user message to the next, so a tool call is
    never sent without its result (2n items would start at a tool message: a 400)."""
    from jupyter_agent import tool, toolloop

    @tool
    def look() -> str:
        """Look."""
        return "seen"

    server.default = text("ok")
    for q in ("Q1", "Q2", "Q3"):
        chat(q)
    chat("Q4", history=2)
    assert [m["content"] for m in sent(server)] == ["Q2", "ok", "Q3", "ok", "Q4"]
    server.enqueue(tool_calls([call("look", {}, id="c1")]), text("looked"))
    toolloop("Look.", tools=["look"])
    chat("Q5", history=1)
    roles = [m["role"] for m in sent(server)]
    assert roles == ["user", "assistant", "tool", "assistant", "user"]  # the whole round
    assert sent(server)[0]["content"] == "Look."


def test_session_history_across_calls(server: ScriptedOpenAI) -> None:
    server.enqueue(text("A1"), text("A2"), text("A3"), text("A4"), text("A5"))
    chat("Q1")
    chat("Q2")
    assert sent(server) == [{"role": "user", "content": "Q1"},
                            {"role": "assistant", "content": "A1"},
                            {"role": "user", "content": "Q2"}]
    chat("Q3", history=1)  # one round back
    assert [m["content"] for m in sent(server)] == ["Q2", "A2", "Q3"]
    chat("Q4", history=0)
    assert [m["content"] for m in sent(server)] == ["Q4"]
    chat("Q5", session="other")
    assert [m["content"] for m in sent(server)] == ["Q5"]


def test_old_system_prompts_are_not_resent(server: ScriptedOpenAI) -> None:
    server.enqueue(text("A1"), text("A2"))
    chat("Q1", system="Be brief.")
    chat("Q2", system="Be verbose.")
    roles = [(m["role"], m["content"]) for m in sent(server)]
    assert roles == [("system", "Be verbose."), ("user", "Q1"), ("assistant", "A1"),
                     ("user", "Q2")]


def test_window_fitting_on_a_tiny_context(server: ScriptedOpenAI, profiles: None) -> None:
    register_profile(ModelProfile(name="tiny", model="tiny", max_context=300, max_output=50))
    long = "word " * 150  # about 150 tokens: two rounds no longer fit in 85% of 300
    server.default = text("short answer " * 5)
    chat("first " + long, model="tiny")
    chat("second " + long, model="tiny")
    run = chat("third " + long, model="tiny")
    contents = [m["content"] for m in sent(server)]
    assert contents[-1].startswith("third")
    assert not any(c.startswith("first") for c in contents)  # the oldest round was cut
    assert any(e["type"] == "context_compressed" for e in run.events_json())
    assert [e["method"] for e in run.events_json() if e["type"] == "context_compressed"] == [
        "truncate"]


def test_knowledge_from_a_list_a_dict_list_and_a_retriever(server: ScriptedOpenAI) -> None:
    server.default = text("ok")
    chat("Who wrote it?", knowledge=["Ann wrote the report.", "Bob reviewed it."], session=None)
    system = sent(server)[0]["content"]
    assert "Ann wrote the report.\n------\nBob reviewed it." in system
    assert sent(server)[-1] == {"role": "user", "content": "Who wrote it?"}

    chat("When?", knowledge=[{"q": "Release date?", "a": "May 3."}], session=None)
    assert "Release date?\nMay 3." in sent(server)[0]["content"]

    asked: list[str] = []

    def retriever(question: str) -> list[str]:
        asked.append(question)
        return [f"doc {i}" for i in range(1, 11)]

    chat("Find it", knowledge=retriever, session=None)
    assert asked == ["Find it"]
    system = sent(server)[0]["content"]
    assert "doc 8" in system and "doc 9" not in system  # search mode: 8 items at most


def test_temperature_and_max_tokens_are_mapped(server: ScriptedOpenAI) -> None:
    from jupyter_agent.llm.profiles import Capabilities, ModelProfile, register_profile

    server.default = text("ok")
    chat("q", temperature=2, max_tokens=10**9, session=None)
    body = server.requests[0]
    assert body["temperature"] == 2.0
    assert body["max_tokens"] == BUILTIN_PROFILES["gpt-4.1-mini"].max_output
    chat("q", model="o4-mini", temperature=0.5, session=None)
    assert "temperature" not in server.requests[1]
    # A model whose maximum is 1: the OpenAI-scale value is clamped, not rescaled.
    register_profile(ModelProfile(name="cool", model="cool-1",
                                  capabilities=Capabilities(max_temperature=1.0)))
    chat("q", model="cool", temperature=2, session=None)
    chat("q", model="cool", temperature=0.7, session=None)
    assert [r["temperature"] for r in server.requests[2:]] == [1.0, 0.7]


@pytest.mark.parametrize("bad", [7, 5, -0.1, float("nan"), "hot", True])
def test_a_temperature_outside_the_openai_scale_is_refused(server: ScriptedOpenAI,
                                                          bad: object) -> None:
    """It once sent 2.0 for 5: the same range as the --temperature flag, before any request."""
    from jupyter_agent import toolloop
    from jupyter_agent.base.errors import ParameterError

    for entry in (chat, toolloop):
        with pytest.raises(ParameterError, match="temperature"):
            entry("q", temperature=bad, session=None)
    assert server.requests == []


def test_no_stream_option(server: ScriptedOpenAI) -> None:
    server.enqueue(text("whole"))
    run = chat("q", stream=False)
    assert "stream" not in server.requests[0]
    assert run.answer == "whole"


def test_a_failed_request_is_an_error_never_an_answer(server: ScriptedOpenAI) -> None:
    server.enqueue(error(401, "invalid api key"))
    run = chat("q")
    assert run.status == "error"
    assert run.answer == ""
    assert run.error is not None and "invalid api key" in run.error
    assert run.view["error"] == run.error


def test_empty_prompt_is_a_usage_error(server: ScriptedOpenAI) -> None:
    with pytest.raises(ParameterError, match="prompt is empty"):
        chat("   \n ")
    assert server.requests == []


def test_missing_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(MissingKeyError) as info:
        chat("hello", model="gpt-4.1-mini")
    assert "OPENAI_API_KEY" in str(info.value)
    monkeypatch.setenv("JUPYTER_AGENT_MODEL", "gpt-4.1-mini")
    with pytest.raises(MissingKeyError, match="OPENAI_API_KEY"):
        chat("hello")


def test_a_profile_with_its_own_key_variable(server: ScriptedOpenAI, profiles: None,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    register_profile(ModelProfile(name="other", model="other-model",
                                  api_key_env="OTHER_PROVIDER_KEY"))
    with pytest.raises(MissingKeyError, match="OTHER_PROVIDER_KEY"):
        chat("hello", model="other")
    monkeypatch.setenv("OTHER_PROVIDER_KEY", "sk-other")
    server.enqueue(text("hi"))
    assert chat("hello", model="other").answer == "hi"


def test_knowledge_is_trimmed_to_the_model_quote_budget(server: ScriptedOpenAI) -> None:
    """§4.3 step 1: items past the profile's quote budget are left out, the first ones kept."""
    register_profile(ModelProfile(name="small-quotes", model="small-quotes",
                                  quote_max_tokens=40))
    try:
        docs = [f"Fact {i}: " + "lorem ipsum dolor " * 4 for i in range(8)]
        server.enqueue(text("ok"), text("ok"))
        chat("Why?", knowledge=docs, model="small-quotes", history=0)
        system = server.requests[0]["messages"][0]["content"]
        assert "Fact 0:" in system and "Fact 7:" not in system
        kept = sum(f"Fact {i}:" in system for i in range(8))
        assert 1 <= kept < 8
        # Without a budget of its own, a profile's default fits all eight small items.
        chat("Why?", knowledge=docs, model="gpt-4.1-mini", history=0)
        assert "Fact 7:" in server.requests[1]["messages"][0]["content"]
    finally:
        BUILTIN_PROFILES.pop("small-quotes", None)
