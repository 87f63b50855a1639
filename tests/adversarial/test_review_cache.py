"""The answer cache against what a demanding user changes between two runs, and a cached tool
call: the cache may save a model call, never an approval (docs/behaviour.md §10.14)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from jupyter_agent import chat, tool
from jupyter_agent.agents.toolloop import toolloop
from jupyter_agent.clients.factory import clear_client_cache
from jupyter_agent.llm.profiles import BUILTIN_PROFILES, ModelProfile, register_profile
from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def profiles() -> Iterator[None]:
    saved = dict(BUILTIN_PROFILES)
    yield
    BUILTIN_PROFILES.clear()
    BUILTIN_PROFILES.update(saved)
    clear_client_cache()


def test_a_profiles_default_parameters_are_part_of_the_request(server: ScriptedOpenAI,
                                                               profiles: None) -> None:
    """``default_config`` is merged into the body the server gets: a profile re-registered
    with another temperature (or reasoning effort) asks the model again."""
    server.default = text("Paris.")
    register_profile(ModelProfile(name="mine", model="gpt-4.1-mini",
                                  default_config={"temperature": 0.0}))
    chat("Capital of France?", history=0, cache=True, model="mine")
    clear_client_cache()
    register_profile(ModelProfile(name="mine", model="gpt-4.1-mini",
                                  default_config={"temperature": 1.5}))
    chat("Capital of France?", history=0, cache=True, model="mine")
    assert len(server.requests) == 2
    assert server.requests[1]["temperature"] == 1.5


def test_a_cached_tool_call_still_asks_for_approval(server: ScriptedOpenAI) -> None:
    from jupyter_agent.agents.resume import Answer, resume

    done: list[str] = []

    @tool(requires_approval=True)
    def deploy(target: str) -> str:
        """Deploy."""
        done.append(target)
        return "deployed"

    def script(body: dict[str, Any]) -> Any:
        if body["messages"][-1]["role"] == "tool":
            return text("Deployed.")
        return tool_calls([call("deploy", {"target": "prod"}, id="d1")])

    server.default = script
    first = toolloop("Ship it.", tools=["deploy"], cache=True, history=0)
    assert first.status == "ask"
    resume(first.run_id, Answer("option", option_index=1))
    assert done == ["prod"]
    sent = len(server.requests)
    again = toolloop("Ship it.", tools=["deploy"], cache=True, history=0)
    assert len(server.requests) == sent  # the first round came from the cache ...
    assert again.status == "ask" and done == ["prod"]  # ... the approval did not


@pytest.mark.parametrize("plant", ["fifo", "symlink"])
def test_an_entry_that_is_no_regular_file_is_a_miss(server: ScriptedOpenAI, plant: str) -> None:
    """A FIFO would block the read forever; a link to a device (``/dev/zero``: size 0) would
    be read without end. Either is refused without reading, then replaced by the answer."""
    import os

    from jupyter_agent.clients.cache import cache_dir, cache_stats

    server.default = text("Paris.")
    chat("Capital?", history=0, cache=True)
    (entry,) = sorted(cache_dir().glob("*/*.json"))
    entry.unlink()
    if plant == "fifo":
        os.mkfifo(entry)
    else:
        entry.symlink_to("/dev/zero")  # size 0, no end: read whole, it would eat the memory
    ignored = cache_stats().ignored
    run = chat("Capital?", history=0, cache=True)
    assert run.status == "done" and len(server.requests) == 2
    assert cache_stats().ignored == ignored + 1
    assert entry.is_file() and not entry.is_symlink()
