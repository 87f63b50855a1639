"""The one model rule: each rung wins over the ones below it, all the way to the request."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from jupyter_agent.agents.chat import chat
from jupyter_agent.agents.toolloop import toolloop
from jupyter_agent.base import config
from jupyter_agent.base.errors import MissingKeyError
from jupyter_agent.clients.embedded import local_available
from jupyter_agent.clients.factory import (
    DEFAULT_MODEL,
    ModelChoice,
    make_client,
    resolve_model,
    turn_client,
)
from jupyter_agent.runtime import agents as runtime_agents
from jupyter_agent.session import default_store
from tests.fakes.openai_server import ScriptedOpenAI, text

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def every_rung(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every configurable rung set, each to a different model."""
    config.settings.active_model = "active-model"
    config.settings.model = "settings-model"
    monkeypatch.setenv("JUPYTER_AGENT_MODEL", "env-model")


@pytest.fixture
def no_agents() -> Iterator[None]:
    yield
    runtime_agents.AGENTS.clear()


def test_each_rung_wins_over_the_ones_below(every_rung: None,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve_model("cell-model", agent="agent-model", session="session-model") == \
        ModelChoice("cell-model", "cell")
    assert resolve_model(None, agent="agent-model", session="session-model") == \
        ModelChoice("agent-model", "agent")
    assert resolve_model(None, session="session-model") == ModelChoice("session-model", "session")
    assert resolve_model() == ModelChoice("active-model", "active")
    config.settings.active_model = None
    assert resolve_model() == ModelChoice("env-model", "env")
    monkeypatch.delenv("JUPYTER_AGENT_MODEL")
    assert resolve_model() == ModelChoice("settings-model", "settings")
    config.settings.model = None
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789")  # a key: never the embedded one
    assert resolve_model() == ModelChoice(DEFAULT_MODEL, "default")


def test_empty_names_do_not_count_as_a_choice(every_rung: None) -> None:
    """An empty ``--model ""`` or an empty session binding falls through, it never becomes a
    model called ""."""
    assert resolve_model("", agent="", session="") == ModelChoice("active-model", "active")


def test_without_any_key_the_embedded_model_is_the_default_only_when_installed() -> None:
    expected = ModelChoice("local", "embedded") if local_available() else \
        ModelChoice(DEFAULT_MODEL, "default")
    assert resolve_model() == expected
    config.settings.api_key = "sk-configured-0123456789"  # type: ignore[assignment]
    assert resolve_model() == ModelChoice(DEFAULT_MODEL, "default")


def test_a_client_without_a_name_follows_the_same_rule(server: ScriptedOpenAI) -> None:
    """There is one default: a client made without a model uses what the rule picks, so the
    ``%agent model`` choice is not lost on the way (the old ``resolve_profile(None)`` read only
    the environment)."""
    config.settings.active_model = "gpt-4o"
    assert make_client().profile.name == "gpt-4o" == resolve_model().name
    tc = turn_client()
    assert (tc.model, tc.source, tc.client.profile.name) == ("gpt-4o", "active", "gpt-4o")


def _models(server: ScriptedOpenAI) -> list[str]:
    return [r["model"] for r in server.requests]


def test_the_chosen_name_reaches_the_request(server: ScriptedOpenAI,
                                             every_rung: None) -> None:
    server.default = text("ok")
    default_store().bind_model("bound", "session-model")

    chat("hi", session="bound")  # the session's model beats %agent model
    chat("hi", session="bound", model="cell-model")  # the cell beats everything
    chat("hi", session="other")  # no binding there: %agent model
    assert _models(server) == ["session-model", "cell-model", "active-model"]
    turns = default_store().list_turns("bound")
    assert [(t.model, t.profile) for t in turns] == [("session-model", "session-model"),
                                                    ("cell-model", "cell-model")]


def test_an_agents_model_beats_the_session_but_not_the_cell(
        server: ScriptedOpenAI, every_rung: None, no_agents: None) -> None:
    server.default = text("ok")
    runtime_agents.Agent("writer", model="agent-model", tools=[])
    default_store().bind_model("bound", "session-model")

    toolloop("hi", agent="writer", session="bound", tools=[])
    toolloop("hi", agent="writer", session="bound", tools=[], model="cell-model")
    assert _models(server) == ["agent-model", "cell-model"]


def test_a_missing_key_is_reported_before_anything_is_recorded(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """An explicit hosted model without a key: one clear error, and no run, turn or session
    row left behind."""
    monkeypatch.setenv("JUPYTER_AGENT_MODEL", "gpt-4.1-mini")
    with pytest.raises(MissingKeyError, match="OPENAI_API_KEY"):
        chat("hi", session="keyless")
    store = default_store()
    assert store.list_turns("keyless") == [] and store.list_pending() == []


def test_the_embedded_notice_is_only_for_a_model_nobody_named(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from jupyter_agent.clients import factory
    from jupyter_agent.clients.turn_client import TurnClient

    # Shown once per process: the process state is fresh in every test (tests/conftest.py).
    client: Any = object()
    # `%agent model local` (active), JUPYTER_AGENT_MODEL=local (env), %config (settings) name it.
    for source in ("cell", "agent", "session", "given", "active", "env", "settings"):
        assert factory.local_default_notice(TurnClient(client, "local", source)) is None
    first = factory.local_default_notice(TurnClient(client, "local", "embedded"))
    again = factory.local_default_notice(TurnClient(client, "local", "embedded"))
    assert first is not None and "OPENAI_API_KEY" in first and again is None
