"""Aborting the calling run (``Run.abort()``) stops a sub-agent's nested loop: no further model
request is made for it, for ``spawn_agent`` and for an agent used as a tool alike
(docs/behaviour.md §2.11)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jupyter_agent import Agent, agent_tool, toolloop
from jupyter_agent.agents.run import Run, last_run
from jupyter_agent.tools.registry import AnyTool, tool
from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(autouse=True)
def _workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def _parent_kwargs(how: str, tools: list[AnyTool]) -> dict[str, Any]:
    if how == "spawn_agent":
        Agent("boss", tools=[*tools, "spawn_agent"],  # type: ignore[list-item]
              permissions={"spawn_agent": "allow"})
        return {"agent": "boss"}
    worker = Agent("worker", tools=list(tools))  # type: ignore[arg-type]
    return {"tools": [agent_tool(worker, name="helper", requires_approval=False)]}


@pytest.mark.parametrize("how", ["spawn_agent", "agent_tool"])
def test_aborting_the_parent_stops_the_sub_agent_before_its_next_request(
        server: ScriptedOpenAI, how: str) -> None:
    parent: list[Run] = []
    steps: list[int] = []

    def remember_parent(event: Any) -> None:
        if event.type == "run_started" and not parent:
            parent.append(last_run())  # type: ignore[arg-type]

    @tool
    def step(n: int) -> str:
        """Do one step."""
        steps.append(n)
        parent[0].abort()  # the user presses Stop while the sub-agent works
        return f"step {n} done"

    kwargs = _parent_kwargs(how, [step])
    name = "spawn_agent" if how == "spawn_agent" else "helper"
    server.enqueue(tool_calls([call(name, {"task": "Work."}, id="s1")]),
                   tool_calls([call("step", {"n": 1}, id="a1")]),
                   # what a sub-agent that ignored the flag would go on with:
                   tool_calls([call("step", {"n": 2}, id="a2")]),
                   text("sub done"), text("parent done"))

    run = toolloop("delegate", listeners=[remember_parent], **kwargs)

    assert run is parent[0]
    assert run.status == "aborted"
    assert steps == [1]  # the sub-agent's tool ran once, then nothing more
    assert len(server.requests) == 2  # the parent's first request and the sub-agent's first
    # The history never ends with an unanswered call: the delegation got a result.
    tool_ids = {m.get("tool_call_id") for m in run.messages if m.get("role") == "tool"}
    assert "s1" in tool_ids


def test_a_sub_agent_of_a_run_that_is_not_aborted_still_runs_to_its_answer(
        server: ScriptedOpenAI) -> None:
    @tool
    def step(n: int) -> str:
        """Do one step."""
        return f"step {n} done"

    kwargs = _parent_kwargs("agent_tool", [step])
    server.enqueue(tool_calls([call("helper", {"task": "Work."}, id="s1")]),
                   tool_calls([call("step", {"n": 1}, id="a1")]),
                   text("sub done"), text("parent done"))
    run = toolloop("delegate", **kwargs)
    assert run.status == "done" and run.answer == "parent done"
    assert len(server.requests) == 4
