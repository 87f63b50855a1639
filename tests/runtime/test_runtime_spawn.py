"""``spawn_agent``: a nested, unpersisted loop inside the parent's workspace."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jupyter_agent.agents.resume import Answer, resume
from jupyter_agent.agents.toolloop import toolloop
from jupyter_agent.runtime.agents import Agent
from jupyter_agent.session import default_store
from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls
from tests.stored import stored_messages

ALLOW_SPAWN = {"spawn_agent": "allow"}


def _tool_results(request: dict[str, Any]) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in request["messages"] if m["role"] == "tool"}


def _tools(request: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in request.get("tools") or []]


def test_a_sub_agent_works_in_a_folder_and_reports_back(server: ScriptedOpenAI,
                                                        workspace: Path) -> None:
    (workspace / "sub").mkdir()
    (workspace / "sub" / "notes.txt").write_text("the answer is 42")
    Agent("boss", tools=["read_file", "spawn_agent"], permissions=ALLOW_SPAWN)
    server.enqueue(
        tool_calls([call("spawn_agent", {"task": "Read notes.txt and report.", "cwd": "sub"},
                         id="s1")]),
        # the sub-agent's two rounds
        tool_calls([call("read_file", {"path": "notes.txt"}, id="r1")]),
        text("notes.txt says the answer is 42."),
        # the parent again
        text("The sub-agent found 42."))
    run = toolloop("Delegate reading the notes.", agent="boss")

    assert run.status == "done" and run.answer == "The sub-agent found 42."
    parent_first, sub_first, sub_second, parent_last = server.requests
    assert _tools(parent_first) == ["read_file", "spawn_agent"]
    assert _tools(sub_first) == ["read_file"]  # no nested spawn_agent
    assert sub_first["messages"][-1] == {"role": "user", "content": "Read notes.txt and report."}
    assert str(workspace / "sub") in sub_first["messages"][0]["content"]
    assert "the answer is 42" in _tool_results(sub_second)["r1"]
    assert _tool_results(parent_last) == {"s1": "notes.txt says the answer is 42."}
    # The sub-agent's calls count into the parent run; its messages are not persisted.
    modules = [e.module for e in run.events if e.type == "usage"]
    assert modules.count("spawn_agent") == 2 and modules.count("agent_call") == 2
    assert run.input_tokens == sum(_input_tokens(run)) > sum(
        e.input_tokens for e in run.events if e.type == "usage" and e.module == "agent_call")
    history = stored_messages(default_store(), "default")
    assert [m["role"] for m in history] == ["user", "assistant", "tool", "assistant"]


def _input_tokens(run: Any) -> list[int]:
    return [e.input_tokens for e in run.events if e.type == "usage"]


def test_the_sub_agent_may_not_leave_the_workspace(server: ScriptedOpenAI,
                                                   workspace: Path) -> None:
    Agent("boss", tools=["spawn_agent"], permissions=ALLOW_SPAWN)
    server.enqueue(tool_calls([call("spawn_agent", {"task": "look around", "cwd": "../.."},
                                    id="s1")]),
                   text("could not"))
    toolloop("go", agent="boss")
    result = _tool_results(server.requests[1])["s1"]
    assert result.startswith("Tool error: WorkspaceError") and "escapes the workspace" in result
    assert len(server.requests) == 2  # no nested loop ran


def test_asks_are_denied_to_a_sub_agent_unless_the_session_allows(server: ScriptedOpenAI,
                                                                  workspace: Path) -> None:
    Agent("boss", tools=["bash", "spawn_agent"], permissions=ALLOW_SPAWN)
    task = {"task": "run echo hi"}
    server.enqueue(tool_calls([call("spawn_agent", task, id="s1")]),
                   tool_calls([call("bash", {"command": "echo hi"}, id="b1")]),
                   text("bash was refused"),
                   text("ok"))
    assert toolloop("delegate", agent="boss", session="s").status == "done"
    refused = _tool_results(server.requests[2])["b1"]
    assert refused == ("Permission denied by policy (a sub-agent cannot ask for approval): "
                       "bash was not run.")

    # The user allows bash for the session; the sub-agent inherits that.
    server.enqueue(tool_calls([call("bash", {"command": "echo direct"}, id="b0")]), text("ok"))
    run = toolloop("run it yourself", agent="boss", session="s")
    resume(run.run_id, Answer("option", option_index=2), run=run)
    server.enqueue(tool_calls([call("spawn_agent", task, id="s2")]),
                   tool_calls([call("bash", {"command": "echo hi"}, id="b2")]),
                   text("printed hi"), text("ok"))
    toolloop("delegate again", agent="boss", session="s")
    assert _tool_results(server.requests[-2])["b2"] == "hi\n[exit code 0]"


def test_spawn_agent_asks_first_by_default(server: ScriptedOpenAI, workspace: Path) -> None:
    server.enqueue(tool_calls([call("spawn_agent", {"task": "say hi"}, id="s1")]),
                   text("hi"), text("the sub-agent said hi"))
    run = toolloop("delegate", tools=["spawn_agent"])
    assert run.status == "ask" and run.view["ask"]["detail"]["tool"] == "spawn_agent"
    resume(run.run_id, Answer("option", option_index=1), run=run)
    assert run.status == "done" and run.answer == "the sub-agent said hi"
    assert _tool_results(server.requests[-1]) == {"s1": "hi"}


def test_the_nested_loop_stops_at_30_rounds(server: ScriptedOpenAI, workspace: Path) -> None:
    Agent("boss", tools=["glob_files", "spawn_agent"], permissions=ALLOW_SPAWN)
    server.enqueue(tool_calls([call("spawn_agent", {"task": "loop forever"}, id="s1")]))
    for i in range(29):
        server.enqueue(tool_calls([call("glob_files", {"pattern": "*"}, id=f"g{i}")]))
    server.enqueue(text("gave up"),  # the final-answer request: the 30th of the nested loop
                   text("parent done"))
    run = toolloop("delegate", agent="boss")
    assert run.status == "done"
    sub_requests = server.requests[1:-1]
    assert len(sub_requests) == 30  # at most 30 requests, the final-answer one included
    assert sub_requests[-1].get("tool_choice") == "none"
    assert _tool_results(server.requests[-1])["s1"].startswith(
        "[The sub-agent reached its limit of 30 rounds.]")
