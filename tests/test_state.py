"""The process state has one owner (``jupyter_agent.base.state.STATE``), and one fixture
(``tests/conftest.py``) resets all of it: what one test leaves behind, the next never sees."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.base.state import STATE, Box, ProcessState

pytest_plugins = ["pytester"]

# Every registry of the package, by slot name (a new one belongs here and in its module).
SLOTS = {
    "config.settings", "secrets.registered",
    "session.default_store", "llm.profiles", "tools.registry", "tools.mcp_servers",
    "clients.cache", "clients.notices_shown", "clients.failover_marks", "clients.roles",
    "clients.cassettes", "replay.mode", "runtime.agents", "runtime.intent_rules",
    "agents.last_run", "agents.held", "ui.displays", "tools.sandbox_probe", "llm.limiters",
}


# --------------------------------------------------------------------------- the owner itself
def test_a_slot_is_made_once_and_emptied_in_place() -> None:
    state = ProcessState()
    items = state.slot("x.items", dict)
    items["a"] = 1
    assert state.slot("x.items", dict) is items  # the factory is not called again
    box = state.slot("x.box", Box)
    box.value = "held"
    state.reset()
    assert state.slot("x.items", dict) is items and items == {}  # same object, now empty
    assert box.value is None
    assert state.names() == ["x.items", "x.box"]


def test_a_failing_reset_still_resets_the_others_then_says_so() -> None:
    state = ProcessState()
    closed: list[str] = []

    def explode(value: Any) -> None:
        raise RuntimeError("cannot close")

    state.slot("a.first", list).append(1)
    state.slot("b.broken", object, reset=explode)
    state.slot("c.custom", dict, reset=lambda d: closed.append("c")).update(k=1)
    with pytest.raises(RuntimeError, match="cannot close"):
        state.reset()
    assert state.slot("a.first", list) == [] and closed == ["c"]


# --------------------------------------------------------------------------- the package's slots
def _dirty_everything(tmp_path: Path) -> None:
    """Leave something in every slot, as a long notebook session would."""
    from jupyter_agent.agents.held import HELD
    from jupyter_agent.agents.run import Run
    from jupyter_agent.base import config, secrets
    from jupyter_agent.clients import factory
    from jupyter_agent.clients.cassettes import cassette_at
    from jupyter_agent.clients.failover import mark_profile
    from jupyter_agent.clients.turn_client import TurnClient
    from jupyter_agent.llm import limiter  # noqa: F401  (its pauses)
    from jupyter_agent.llm.profiles import ModelProfile, register_profile
    from jupyter_agent.replay import mode
    from jupyter_agent.runtime.agents import Agent
    from jupyter_agent.runtime.intent import INTENT_RULES
    from jupyter_agent.sandbox import bwrap, overlay  # noqa: F401  (their probe caches)
    from jupyter_agent.session import default_store
    from jupyter_agent.tools import mcp  # noqa: F401  (its servers: tests/runtime connect one)
    from jupyter_agent.tools.registry import tool
    from jupyter_agent.ui.live import LiveDisplay

    @tool
    def leftover() -> str:
        """A tool from an earlier cell."""
        return "x"

    Agent("leftover-agent")
    INTENT_RULES.role_threshold = 0.99
    INTENT_RULES.keywords["account_query"].append("wallet")
    register_profile(ModelProfile(name="leftover-profile", model="m"))
    mark_profile("gpt-4.1-mini")
    secrets.register_secret("leftover-secret-value-42")
    HELD.keep("run_leftover", tools=[leftover])
    run = Run(agent="chat", model="m")
    LiveDisplay(run, widgets=False)
    assert factory.local_default_notice(TurnClient(object(), "local", "embedded")) is not None
    (tmp_path / "c.cassette.json").write_text(json.dumps({"interactions": []}))
    cassette_at(tmp_path / "c.cassette.json")
    default_store().ensure_session("leftover")
    mode.start("record", tmp_path / "rec.cassette.json")  # a scratch store, record mode
    config.settings.session = "elsewhere"


def _assert_clean() -> None:
    from jupyter_agent.agents.held import HELD
    from jupyter_agent.agents.run import last_run
    from jupyter_agent.base import config, secrets
    from jupyter_agent.clients import cassettes, factory, failover
    from jupyter_agent.llm.profiles import BUILTIN_PROFILES
    from jupyter_agent.replay import mode
    from jupyter_agent.runtime.agents import AGENTS
    from jupyter_agent.runtime.intent import INTENT_RULES, IntentRules
    from jupyter_agent.session.store import _default
    from jupyter_agent.tools.registry import REGISTRY
    from jupyter_agent.ui.live import displays

    assert REGISTRY.names() == [] and AGENTS == {}
    assert INTENT_RULES == IntentRules() and "wallet" not in INTENT_RULES.keywords[
        "account_query"]
    assert "leftover-profile" not in BUILTIN_PROFILES and "gpt-4.1-mini" in BUILTIN_PROFILES
    assert failover.marked_profiles() == []
    assert secrets.mask("key leftover-secret-value-42") == "key leftover-secret-value-42"
    assert secrets._registered == set()
    assert len(HELD) == 0 and last_run() is None and len(displays) == 0
    assert factory._notices_shown == set() and cassettes._cassettes == {}
    assert mode._state == {} and _default.value is None
    assert config.settings == config.Settings()  # every field back to its default
    assert config.settings.cassette_mode == "live"


def test_one_reset_empties_every_slot_of_the_package(tmp_path: Path) -> None:
    _dirty_everything(tmp_path)
    assert SLOTS <= set(STATE.names())  # each module keeps its registry in the one owner
    from jupyter_agent.base import secrets

    assert secrets.mask("key leftover-secret-value-42") != "key leftover-secret-value-42"
    scratch = Path(STATE.slot("replay.mode", dict)["scratch"])
    assert scratch.is_dir()
    STATE.reset()
    _assert_clean()
    assert not scratch.exists()  # the record mode's scratch store is gone with it


_PAIR = """
from tests.test_state import _assert_clean, _dirty_everything


def test_1_leaves_a_dirty_process(tmp_path):
    _dirty_everything(tmp_path)  # not cleaned up here: tests/conftest.py does it


def test_2_the_next_test_starts_clean():
    _assert_clean()
"""


def test_the_fixture_cleans_what_one_test_leaves_for_the_next(pytester: pytest.Pytester,
                                                               monkeypatch: pytest.MonkeyPatch
                                                               ) -> None:
    """Two tests in a fixed order, in their own pytest session with the project's fixtures:
    the proof does not depend on the order (or the selection) of the outer run."""
    root = str(Path(__file__).resolve().parents[1])
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        p for p in (root, os.environ.get("PYTHONPATH", "")) if p))
    pytester.makeconftest('pytest_plugins = ["tests.conftest"]\n')
    pytester.makepyfile(test_pair=_PAIR)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly",
                                           "-q")
    result.assert_outcomes(passed=2)
