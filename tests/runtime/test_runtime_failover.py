"""Model failover: a failing profile is marked and the next configured profile answers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.agents.chat import chat
from jupyter_agent.agents.resume import Answer, resume
from jupyter_agent.agents.toolloop import toolloop
from jupyter_agent.base import config
from jupyter_agent.clients.failover import FailoverClient, clear_marks, marked_profiles
from jupyter_agent.llm.profiles import BUILTIN_PROFILES, ModelProfile, register_profile
from jupyter_agent.session import default_store
from tests.fakes.openai_server import ScriptedOpenAI, call, error, raw, text, tool_calls

pytestmark = pytest.mark.usefixtures("fast_retries")


@pytest.fixture
def profiles() -> Iterator[None]:
    register_profile(ModelProfile(name="primary", model="model-a"))
    register_profile(ModelProfile(name="backup", model="model-b"))
    config.settings.fallback_models = ["backup"]
    yield
    BUILTIN_PROFILES.pop("primary", None)
    BUILTIN_PROFILES.pop("backup", None)


def _route(replies: dict[str, Any]):
    """A turn function: the reply for the requested model id (a callable is called)."""
    def turn(body: dict[str, Any]) -> Any:
        r = replies[body["model"]]
        return r(body) if callable(r) else r
    return turn


def _models(server: ScriptedOpenAI) -> list[str]:
    return [r["model"] for r in server.requests]


def test_a_failing_profile_hands_over_to_the_next(server: ScriptedOpenAI, profiles: None) -> None:
    server.default = _route({"model-a": error(500, "primary is down"),
                             "model-b": text("answered by backup")})
    run = chat("hello", model="primary")

    assert run.status == "done" and run.answer == "answered by backup"
    assert _models(server) == ["model-a"] * 4 + ["model-b"]  # 1 try + 3 retries, then backup
    assert any(i["kind"] == "warning" and "'primary' failed" in i["message"]
               for i in run.view["items"])
    turn = default_store().list_turns("default")[-1]
    assert turn.profile == "backup" and turn.status == "done"
    assert marked_profiles() == ["primary"]

    # The next turn starts with the next profile: the marked one is not tried first.
    server.requests.clear()
    chat("again", model="primary")
    assert _models(server) == ["model-b"]
    # Once the mark is gone (it expires), the primary is used again.
    clear_marks()
    server.requests.clear()
    server.default = _route({"model-a": text("primary is back"), "model-b": text("backup")})
    assert chat("third", model="primary").answer == "primary is back"


def test_failover_in_the_middle_of_a_tool_loop(server: ScriptedOpenAI, profiles: None,
                                               workspace: Path) -> None:
    calls = iter([tool_calls([call("glob_files", {"pattern": "*"}, id="g")])])
    server.default = _route({"model-a": lambda body: next(calls, error(503, "overloaded")),
                             "model-b": text("done on backup")})
    run = toolloop("list the files", model="primary", tools=["glob_files"])
    assert run.status == "done" and run.answer == "done on backup"
    assert _models(server) == ["model-a"] + ["model-a"] * 4 + ["model-b"]
    # The backup continued the same conversation, tool result included.
    assert server.requests[-1]["messages"][-1]["role"] == "tool"
    assert default_store().list_turns("default")[-1].profile == "backup"


def test_every_profile_failing_fails_the_turn(server: ScriptedOpenAI, profiles: None) -> None:
    server.default = error(500, "everything is down")
    run = chat("hello", model="primary")
    assert run.status == "error" and run.answer == ""
    assert "everything is down" in (run.error or "")
    assert default_store().list_turns("default")[-1].status == "error"


def test_no_fallbacks_means_a_plain_client(server: ScriptedOpenAI) -> None:
    from jupyter_agent.clients.factory import client_for

    assert not isinstance(client_for("gpt-4.1-mini"), FailoverClient)
    config.settings.fallback_models = ["gpt-4o-mini"]
    assert isinstance(client_for("gpt-4.1-mini"), FailoverClient)


def test_a_resumed_run_keeps_failing_over(server: ScriptedOpenAI, profiles: None,
                                          workspace: Path) -> None:
    server.default = _route({"model-a": tool_calls([call("bash", {"command": "echo x"},
                                                         id="b")]),
                             "model-b": text("backup finished")})
    run = toolloop("run echo", model="primary", tools=["bash"])
    assert run.status == "ask"
    server.default = _route({"model-a": error(500, "down now"), "model-b": text("backup finished")})
    resume(run.run_id, Answer("option", option_index=1), run=run)
    assert run.status == "done" and run.answer == "backup finished"
    assert default_store().list_turns("default")[-1].profile == "backup"


def test_a_failover_after_a_broken_stream_withdraws_what_the_failed_attempt_streamed(
        server: ScriptedOpenAI, profiles: None, workspace: Path) -> None:
    """The primary streams some text and announces a tool call, then its stream breaks with an
    error: the backup answers the round, and the card keeps neither the partial text nor a
    tool card left running."""
    broken = raw(
        '{"choices":[{"index":0,"delta":{"content":"Half an answ"}}]}',
        '{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"t1","type":"function",'
        '"function":{"name":"glob_files","arguments":""}}]}}]}',
        '{"error":{"message":"upstream broke"}}')
    server.default = _route({"model-a": broken, "model-b": text("done on backup")})
    run = toolloop("list the files", model="primary", tools=["glob_files"], stream=True)
    assert run.status == "done" and run.answer == "done on backup"
    texts = [i.get("text", "") for i in run.view["items"] if i["kind"] == "text"]
    assert "Half an answ" not in "".join(texts) and "done on backup" in "".join(texts)
    assert not [i for i in run.view["items"] if i["kind"] == "tool"], run.view["items"]
    warnings = [i["message"] for i in run.view["items"] if i["kind"] == "warning"]
    assert any("retried: model profile 'primary' failed" in w for w in warnings), warnings
