"""Modes (tools and knowledge per mode) and intent recognition (rules, model, prompt, record)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.agents.chat import chat
from jupyter_agent.agents.toolloop import toolloop
from jupyter_agent.agents.turn.recognize import recognize_intent
from jupyter_agent.base.errors import ConfigError
from jupyter_agent.runtime.intent import IntentRules, intent_system_text
from jupyter_agent.runtime.modes import mode_rules, parse_mode
from jupyter_agent.session import default_store
from jupyter_agent.tools.registry import tool
from tests.fakes.openai_server import ScriptedOpenAI, text

KNOWLEDGE = [f"fact number {i}" for i in range(1, 13)]


def _system(request: dict[str, Any]) -> str:
    first = request["messages"][0]
    return first["content"] if first["role"] == "system" else ""


def test_modes_parse_and_limit() -> None:
    assert parse_mode(None) == "ask" and parse_mode(" Agent ") == "agent"
    with pytest.raises(ConfigError, match="ask, search or agent"):
        parse_mode("turbo")
    assert [mode_rules(m).knowledge_limit for m in ("ask", "search", "agent")] == [0, 8, 3]


def test_search_mode_injects_at_most_8_items_and_no_tools(server: ScriptedOpenAI) -> None:
    @tool
    def helper() -> str:
        """A tool that chat never offers."""
        return "x"

    server.enqueue(text("ok"))
    chat("What do the facts say?", knowledge=KNOWLEDGE)
    req = server.requests[0]
    assert "tools" not in req
    system = _system(req)
    assert "fact number 8" in system and "fact number 9" not in system
    assert default_store().list_turns("default")[-1].mode == "search"


def test_agent_mode_injects_at_most_3_items(server: ScriptedOpenAI, workspace: Path) -> None:
    server.enqueue(text("ok"))
    toolloop("What do the facts say?", knowledge=KNOWLEDGE, tools=["read_file"])
    system = _system(server.requests[0])
    assert "fact number 3" in system and "fact number 4" not in system
    assert [t["function"]["name"] for t in server.requests[0]["tools"]] == ["read_file"]
    assert default_store().list_turns("default")[-1].mode == "agent"


def test_ask_mode_gets_no_intent_in_the_prompt(server: ScriptedOpenAI) -> None:
    server.enqueue(text("ok"), text("ok"))
    chat("Run the script and delete the file")
    assert "User intent" not in str(server.requests[0]["messages"])
    chat("Run the script and delete the file", knowledge=["k"])
    assert "User intent (hint): tool_execution" in _system(server.requests[1])
    # recorded with the turn either way
    intents = [t.intent for t in default_store().list_turns("default")]
    assert [i["category"] for i in intents] == ["tool_execution", "tool_execution"]  # type: ignore[index]


def test_rules_find_category_confidence_keywords_and_tools() -> None:
    r = recognize_intent("Please run the script on every CSV file in the folder")
    assert r.category == "tool_execution" and r.source == "rules" and r.needs_tools
    assert set(r.keywords) == {"run", "script", "csv", "file", "folder"}
    assert r.confidence == 0.85
    one = recognize_intent("What is my account balance?")
    assert one.category == "account_query" and one.keywords == ["account", "balance"]
    assert one.confidence == pytest.approx(0.467, abs=0.001)  # "what is" (chat) competes
    assert recognize_intent("hello!").model_dump() == {
        "category": "chat", "confidence": 0.5, "keywords": ["hello"], "source": "rules",
        "needs_tools": False}
    assert recognize_intent("帮我发布这篇文章").category == "content_publishing"  # CJK substrings
    assert recognize_intent("playlist").category == "unknown"  # whole words only ("list")
    assert recognize_intent("zzz").confidence == 0.0


def test_keywords_are_configurable() -> None:
    rules = IntentRules()
    assert recognize_intent("top up my wallet", rules).category == "unknown"
    rules.keywords["account_query"].append("wallet")
    r = recognize_intent("top up my wallet", rules)
    assert (r.category, r.keywords, r.confidence) == ("account_query", ["wallet"], 0.5)



def test_the_substring_check_first_finds_what_each_keyword_regex_finds() -> None:
    """A keyword is looked for as a plain substring before its whole-word regex runs (a batch
    checks about a hundred keywords per item): the result must be what the regex alone finds,
    whatever the keywords hold (regex characters, one a prefix of another, CJK, blanks)."""
    import random

    from jupyter_agent.runtime.intent import DEFAULT_KEYWORDS

    rules = IntentRules()
    rules.keywords["account_query"] += ["c++", "a.b", "log", "(x)", "  ", "余"]
    words = [k for ks in rules.keywords.values() for k in ks] + ["ab", "c+", "logins", "x"]
    rng = random.Random(7)
    for _ in range(3000):
        text_ = " ".join(rng.choice(words) + rng.choice(["", "s", "-", ".", "_", "!", "额"])
                         for _ in range(rng.randint(0, 5)))
        found = rules.matches(text_)
        for category, keywords in rules.keywords.items():
            lowered = text_.casefold()
            hits = [k for k in keywords if k.strip() and (
                k.casefold().strip() in lowered if any("\u3040" <= c <= "\ud7af" for c in k)
                else re.search(r"(?<!\w)" + re.escape(k.casefold().strip()) + r"(?!\w)",
                               lowered))]
            assert found.get(category, []) == list(dict.fromkeys(hits)), (text_, category)
    assert rules.matches("I code in C++ daily") == {"account_query": ["c++"]}
    assert DEFAULT_KEYWORDS["account_query"][-1] == "充值"  # the defaults were not edited

def test_what_goes_into_the_system_prompt() -> None:
    r = recognize_intent("run the tests")
    assert intent_system_text(r, "agent").startswith("User intent (hint): tool_execution")
    assert intent_system_text(r, "search") and not intent_system_text(r, "ask")
    unknown = recognize_intent("zzz")
    assert intent_system_text(unknown, "agent") == ""  # unknown with low confidence: left out


def test_model_based_intent_uses_classify(server: ScriptedOpenAI) -> None:
    server.enqueue(text("account_query"))
    r = recognize_intent("where does my money go", use_model=True)
    assert (r.category, r.source, r.confidence, r.needs_tools) == ("account_query", "model", 0.8,
                                                                   True)
    assert "account_query" in server.requests[0]["messages"][0]["content"]
    server.enqueue(text("I am not sure"))
    assert recognize_intent("???", use_model=True).category == "unknown"  # the fallback


def test_a_model_based_intent_is_recorded_and_billed_to_the_turn(
        server: ScriptedOpenAI, workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from jupyter_agent.runtime.intent import INTENT_RULES

    monkeypatch.setattr(INTENT_RULES, "use_model", True)
    server.enqueue(text("content_publishing"), text("ok"))
    run = toolloop("Tell the world about our launch", tools=[])
    assert run.status == "done"
    classify_request, turn_request = server.requests
    assert "content_publishing" in classify_request["messages"][0]["content"]
    assert "User intent (hint): content_publishing (0.80, model" in _system(turn_request)
    modules = [e.module for e in run.events if e.type == "usage"]
    assert modules == ["intent_classify", "agent_call"]
    turn = default_store().list_turns("default")[-1]
    assert turn.intent["source"] == "model"  # type: ignore[index]
    assert turn.input_tokens == run.input_tokens == sum(
        e.input_tokens for e in run.events if e.type == "usage")
