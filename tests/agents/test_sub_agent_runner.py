"""One sub-agent runner: ``spawn_agent`` and an agent used as a tool get the same limit (at most
30 model requests, the final-answer request included) and the same denial rule (an ``ask`` is
refused: nobody can click a card inside a tool call), because both go through
``agents.turn.start.run_sub_agent``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent import Agent, agent_tool, last_run, toolloop
from jupyter_agent.agents import subagents
from jupyter_agent.agents.limits import SUB_AGENT_MAX_ROUNDS
from jupyter_agent.agents.turn import start as driver
from jupyter_agent.tools.registry import AnyTool, tool
from tests.fakes.openai_server import ScriptedOpenAI, call, error, text, tool_calls

pytestmark = pytest.mark.timeout(120)

DENIED = ("Permission denied by policy (a sub-agent cannot ask for approval): deploy was not "
          "run.")


@pytest.fixture(autouse=True)
def _workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def _results(request: dict[str, Any]) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in request["messages"] if m["role"] == "tool"}


def _sub_tools(deploy_permission: str | None = None, max_rounds: int | None = None
               ) -> dict[str, Callable[[list[AnyTool]], dict[str, Any]]]:
    """For each way of starting a sub-agent: the toolloop arguments of a parent run whose
    sub-agent (tool ``helper``) has ``tools``."""
    overrides = {"deploy": deploy_permission} if deploy_permission else {}

    def spawn(tools: list[AnyTool]) -> dict[str, Any]:
        Agent("boss", tools=[*tools, "spawn_agent"],
              permissions={"spawn_agent": "allow", **overrides})  # type: ignore[dict-item]
        return {"agent": "boss"}

    def as_tool(tools: list[AnyTool]) -> dict[str, Any]:
        worker = Agent("worker", tools=list(tools), permissions=overrides)  # type: ignore[arg-type]
        extra = {} if max_rounds is None else {"max_rounds": max_rounds}
        return {"tools": [agent_tool(worker, name="helper", requires_approval=False, **extra)]}

    return {"spawn_agent": spawn, "agent_tool": as_tool}


def _delegate(name: str) -> dict[str, Any]:
    return call("spawn_agent" if name == "spawn_agent" else "helper", {"task": "Work."}, id="s1")


def _noop() -> AnyTool:
    @tool
    def noop() -> str:
        """Do nothing."""
        return "ok"

    return noop


def _deploy(calls: list[str]) -> AnyTool:
    @tool(requires_approval=True)
    def deploy(target: str) -> str:
        """Deploy somewhere."""
        calls.append(target)
        return f"deployed {target}"

    return deploy


@pytest.mark.parametrize("how", ["spawn_agent", "agent_tool"])
def test_a_sub_agent_makes_at_most_30_requests_final_answer_included(
        server: ScriptedOpenAI, how: str) -> None:
    # The agent_tool asks for far more rounds: the limit holds anyway.
    make = _sub_tools(max_rounds=500)[how]
    kwargs = make([_noop()])
    server.enqueue(tool_calls([_delegate(how)]))
    for i in range(SUB_AGENT_MAX_ROUNDS - 1):  # a model that would call tools forever
        server.enqueue(tool_calls([call("noop", {}, id=f"n{i}")]))
    server.enqueue(text("gave up"), text("parent done"))

    run = toolloop("delegate", **kwargs)

    assert run.status == "done" and run.answer == "parent done"
    sub = server.requests[1:-1]
    assert len(sub) == SUB_AGENT_MAX_ROUNDS == 30
    assert sub[-1]["tool_choice"] == "none"  # the last one asks for the final answer
    assert sum(bool(r.get("tools")) for r in sub) == 30  # each one a round of the nested loop
    result = _results(server.requests[-1])["s1"]
    assert result.endswith("gave up") and result.startswith("[The sub-agent")
    assert last_run() is run  # the sub-run never becomes the user's last run
    # Every sub-agent request was billed to the parent run.
    assert len([e for e in run.events if e.type == "usage"]) == 2 + 30


@pytest.mark.parametrize("how", ["spawn_agent", "agent_tool"])
def test_a_tool_that_would_ask_is_denied_to_a_sub_agent(server: ScriptedOpenAI,
                                                        how: str) -> None:
    calls: list[str] = []
    kwargs = _sub_tools()[how]([_deploy(calls)])
    server.enqueue(tool_calls([_delegate(how)]),
                   tool_calls([call("deploy", {"target": "prod"}, id="d1")]),
                   text("deploy was refused"),
                   text("the sub-agent could not deploy"))

    run = toolloop("delegate", **kwargs)

    assert run.status == "done" and calls == []  # never ran, and nothing waits for a click
    assert _results(server.requests[2])["d1"] == DENIED
    assert not [e for e in run.events if e.type == "ask_pending"]
    assert run.pending is None


@pytest.mark.parametrize("how", ["spawn_agent", "agent_tool"])
def test_what_the_rules_allow_still_runs_in_a_sub_agent(server: ScriptedOpenAI,
                                                        how: str) -> None:
    calls: list[str] = []
    kwargs = _sub_tools(deploy_permission="allow")[how]([_deploy(calls)])
    server.enqueue(tool_calls([_delegate(how)]),
                   tool_calls([call("deploy", {"target": "prod"}, id="d1")]),
                   text("deployed"), text("ok"))

    assert toolloop("delegate", **kwargs).status == "done"
    assert calls == ["prod"] and _results(server.requests[2])["d1"] == "deployed prod"


@pytest.mark.parametrize("how", ["spawn_agent", "agent_tool"])
def test_a_failing_sub_agent_is_a_tool_error_and_its_calls_are_still_billed(
        server: ScriptedOpenAI, fast_retries: None, how: str) -> None:
    kwargs = _sub_tools()[how]([_noop()])
    server.enqueue(tool_calls([_delegate(how)]),
                   tool_calls([call("noop", {}, id="n1")]),
                   error(400, "bad request"),  # the sub-agent's second request fails
                   text("it failed"))

    run = toolloop("delegate", **kwargs)

    assert run.status == "done"
    result = _results(server.requests[-1])["s1"]
    assert result.startswith("Tool error:") and "failed: " in result and "bad request" in result
    assert len([e for e in run.events if e.type == "usage"]) == 2 + 1  # the paid sub call


def test_both_tools_hold_the_one_runner() -> None:
    from jupyter_agent.agents.turn.options import TurnOptions
    from jupyter_agent.agents.turn.setup import setup_turn

    setup = setup_turn("toolloop", "x", TurnOptions(store=None, session=None),
                       ["spawn_agent"], run_sub_agent=driver.run_sub_agent)
    assert setup.spawn is not None and setup.spawn.run_sub_agent is driver.run_sub_agent
    assert subagents.run_as_sub_agent is driver.run_sub_agent


def test_a_failover_inside_spawn_agent_is_shown_on_the_parent_run(
        server: ScriptedOpenAI, fast_retries: None) -> None:
    """The sub-agent shares the parent's failover client: when the primary profile fails under
    the sub-agent, the switch is reported where the user looks (the parent run)."""
    from jupyter_agent.base import config
    from jupyter_agent.llm.profiles import ModelProfile, register_profile

    register_profile(ModelProfile(name="primary", model="model-a"))
    register_profile(ModelProfile(name="backup", model="model-b"))
    config.settings.fallback_models = ["backup"]
    Agent("boss", tools=["spawn_agent"], permissions={"spawn_agent": "allow"})
    served: dict[str, int] = {"model-a": 0, "model-b": 0}

    def turn(body: dict[str, Any]) -> Any:
        served[body["model"]] += 1
        if body["model"] == "model-a":
            return tool_calls([_delegate("spawn_agent")]) if served["model-a"] == 1 else \
                error(500, "primary is down")
        return text("sub done") if served["model-b"] == 1 else text("parent done")

    server.default = turn
    run = toolloop("delegate", agent="boss", model="primary")

    assert run.status == "done" and run.answer == "parent done"
    assert _results(server.requests[-1])["s1"] == "sub done"
    warnings = [i["message"] for i in run.view["items"] if i["kind"] == "warning"]
    assert any("'primary' failed" in w for w in warnings), warnings
