"""Which tools a turn offers when it names none (docs/behaviour.md §5.1), and the card's
``Tools: ...`` line: a plain cell offers the notebook's ``@tool`` functions only; an agent with
a workspace and no ``tools`` offers its built-ins, the connected MCP servers' tools and the
``@tool`` functions; named tools always win."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent import chat, plan
from jupyter_agent.agents.resume import Answer, resume
from jupyter_agent.agents.toolloop import toolloop
from jupyter_agent.runtime.agents import Agent
from jupyter_agent.tools.builtin import BUILTIN_TOOL_NAMES
from jupyter_agent.tools.registry import tool
from jupyter_agent.view.bundle import build_bundle
from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(autouse=True)
def _cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def _offered(request: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in request.get("tools") or []]


def _probe() -> None:
    @tool
    def probe() -> str:
        """Look at something."""
        return "seen"


def _tools_line(run: Any) -> tuple[str, str]:
    bundle = build_bundle(run.view)
    return bundle["text/markdown"], bundle["text/plain"]


def test_a_plain_toolloop_offers_only_the_notebook_tools(server: ScriptedOpenAI) -> None:
    _probe()
    server.enqueue(text("ok"))
    run = toolloop("Look.")
    assert _offered(server.requests[0]) == ["probe"]  # no built-in sneaks in
    assert run.view["tools"] == ["probe"]
    markdown, plain = _tools_line(run)
    assert "*Tools: probe*" in markdown and "Tools: probe" in plain
    assert [e.tools for e in run.events if e.type == "tools_offered"] == [["probe"]]


def test_an_agent_with_a_workspace_gets_its_builtins_and_the_notebook_tools(
        server: ScriptedOpenAI, tmp_path: Path) -> None:
    _probe()
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("the answer is 42")
    Agent("analyst", workspace=ws)
    server.enqueue(tool_calls([call("read_file", {"path": "notes.txt"}, id="r1")]), text("42"))
    run = toolloop("Read the notes.", agent="analyst")
    assert run.status == "done" and run.answer == "42"
    assert _offered(server.requests[0]) == [*BUILTIN_TOOL_NAMES, "probe"]
    assert "the answer is 42" in server.requests[1]["messages"][-1]["content"]
    assert run.view["tools"] == [*BUILTIN_TOOL_NAMES, "probe"]


def test_a_risky_builtin_of_the_default_set_still_asks(server: ScriptedOpenAI,
                                                       tmp_path: Path) -> None:
    """Hostile: the model writes into the workspace the moment it gets the tool."""
    ws = tmp_path / "ws"
    ws.mkdir()
    Agent("writer", workspace=ws)
    server.enqueue(tool_calls([call("write_file", {"path": "x.txt", "content": "pwned"},
                                    id="w1")]),
                   text("not written"))
    run = toolloop("Write.", agent="writer")
    assert run.status == "ask" and not (ws / "x.txt").exists()
    done = resume(run.run_id, Answer("option", option_index=3))  # deny
    assert done.status == "done" and not (ws / "x.txt").exists()


def test_named_tools_win_over_every_default(server: ScriptedOpenAI, tmp_path: Path) -> None:
    _probe()
    Agent("analyst", workspace=tmp_path)
    Agent("narrow", workspace=tmp_path, tools=["read_file"])
    Agent("roleonly", instructions="Be brief.")
    server.enqueue(text("a"), text("b"), text("c"))
    toolloop("x", agent="analyst", tools=["probe"])
    toolloop("x", agent="narrow")
    toolloop("x", agent="roleonly")
    assert [_offered(r) for r in server.requests] == [["probe"], ["read_file"], ["probe"]]


def test_an_empty_tool_set_says_none_and_chat_draws_no_line(server: ScriptedOpenAI) -> None:
    server.enqueue(text("a"), text("b"))
    run = toolloop("x", tools=[])
    assert run.view["tools"] == [] and "Tools: none" in _tools_line(run)[1]
    said = chat("hi")
    assert said.view["tools"] is None
    assert "Tools:" not in _tools_line(said)[0] and "Tools:" not in _tools_line(said)[1]


def test_plan_with_a_workspace_agent_offers_the_same_runtime_set(server: ScriptedOpenAI,
                                                                 tmp_path: Path) -> None:
    _probe()
    Agent("planner", workspace=tmp_path)
    server.enqueue(text("done"), text("done"), text("done"), text("done"))
    run = plan("Say done.", agent="planner")
    offered = _offered(server.requests[0])
    assert set([*BUILTIN_TOOL_NAMES, "probe"]) <= set(offered)
    assert run.view["tools"] == [*BUILTIN_TOOL_NAMES, "probe"]  # without update_plan/ask_agent


def test_a_workspace_agent_gets_the_connected_mcp_tools(server: ScriptedOpenAI,
                                                        tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    from jupyter_agent.tools.mcp import connect_mcp, disconnect_mcp
    from tests.runtime.test_runtime_mcp import SERVER

    script = tmp_path / "calc_server.py"
    script.write_text(SERVER)
    connect_mcp("calc", command=[sys.executable, str(script)])
    try:
        _probe()
        Agent("calc", workspace=tmp_path)
        server.enqueue(tool_calls([call("mcp_calc_add", {"a": 2, "b": 3}, id="a1")]),
                       text("five"), text("plain"))
        run = toolloop("Add.", agent="calc")
        assert _offered(server.requests[0]) == [*BUILTIN_TOOL_NAMES, "mcp_calc_add",
                                                 "mcp_calc_fail", "probe"]
        assert run.status == "ask"  # an MCP tool asks by default: offered is not allowed
        toolloop("Plain.", session="other")  # a plain cell (no agent bound) offers @tool only
        assert _offered(server.requests[-1]) == ["probe"]
    finally:
        disconnect_mcp("calc")
