"""Named agents: instructions, tools, model and workspace; ``--agent``; session binding."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython import get_ipython
from IPython.core.interactiveshell import InteractiveShell
from IPython.testing.globalipapp import start_ipython
from IPython.utils.capture import capture_output

from jupyter_agent import Agent
from jupyter_agent.agents.toolloop import toolloop
from jupyter_agent.base.errors import ConfigError
from jupyter_agent.runtime.agents import list_agents, resolve_agent
from jupyter_agent.session import default_store
from jupyter_agent.tools.registry import tool
from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls


def _system(request: dict[str, Any]) -> str:
    return request["messages"][0]["content"] if request["messages"][0]["role"] == "system" else ""


def _tool_names(request: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in request.get("tools") or []]


def test_an_agent_gives_the_turn_its_instructions_tools_model_and_workspace(
        server: ScriptedOpenAI, workspace: Path) -> None:
    data = workspace / "data"
    data.mkdir()
    (data / "a.csv").write_text("x\n1\n2\n")
    analyst = Agent("analyst", instructions="You analyse CSV files.", workspace=data,
                    tools=["read_file", "glob_files"], model="gpt-4.1-nano")
    server.enqueue(tool_calls([call("glob_files", {"pattern": "*.csv"}, id="g")]),
                   text("a.csv has 2 rows."))
    run = toolloop("Which file has the most rows?", agent=analyst)

    assert run.status == "done" and run.answer == "a.csv has 2 rows."
    first = server.requests[0]
    assert "You analyse CSV files." in _system(first)
    assert _tool_names(first) == ["read_file", "glob_files"]
    assert first["model"] == "gpt-4.1-nano"
    # glob_files ran inside the agent's workspace, not the current directory
    assert [m["content"] for m in server.requests[1]["messages"] if m["role"] == "tool"] == ["a.csv"]
    turn = default_store().list_turns("default")[-1]
    assert turn.agent == "analyst" and turn.model == "gpt-4.1-nano"


def test_agents_are_registered_by_name_and_recreating_replaces() -> None:
    Agent("helper", instructions="v1")
    Agent("helper", instructions="v2")
    assert resolve_agent("helper").instructions == "v2"  # type: ignore[union-attr]
    assert [a.name for a in list_agents()] == ["helper"]
    with pytest.raises(ConfigError, match="Unknown agent 'nobody'. Defined agents: helper"):
        resolve_agent("nobody")
    with pytest.raises(ValueError):
        Agent("two words")


def test_cell_model_wins_over_the_agent_model(server: ScriptedOpenAI, workspace: Path) -> None:
    Agent("m", model="gpt-4.1-nano")
    server.enqueue(text("ok"))
    toolloop("hi", agent="m", model="gpt-4o-mini")
    assert server.requests[0]["model"] == "gpt-4o-mini"


def test_the_chosen_agent_is_bound_to_the_session_and_kept(server: ScriptedOpenAI,
                                                           workspace: Path) -> None:
    Agent("writer", instructions="You write haiku.", tools=[])
    Agent("coder", instructions="You write code.", tools=[])
    server.enqueue(text("one"), text("two"), text("three"))
    toolloop("a poem", agent="writer", session="q3")
    rec = default_store().get_session("q3")
    assert rec is not None and rec.agent == "writer"
    toolloop("another poem", session="q3")  # no --agent: the session's agent
    assert "You write haiku." in _system(server.requests[1])
    toolloop("now code", agent="coder", session="q3")  # the user switches the main agent
    assert "You write code." in _system(server.requests[2])
    assert default_store().get_session("q3").agent == "coder"  # type: ignore[union-attr]


def test_a_bound_agent_missing_in_this_kernel_keeps_its_workspace(
        server: ScriptedOpenAI, workspace: Path) -> None:
    sub = workspace / "sub"
    sub.mkdir()
    (sub / "inside.txt").write_text("i")
    default_store().bind_agent("old", "ghost", sub)
    server.enqueue(tool_calls([call("glob_files", {"pattern": "*"}, id="g")]), text("ok"))
    run = toolloop("list files", tools=["glob_files"], session="old")
    assert run.status == "done"
    assert any(i["kind"] == "warning" and "ghost" in i["message"] for i in run.view["items"])
    assert [m["content"] for m in server.requests[1]["messages"] if m["role"] == "tool"] == [
        "inside.txt"]


def test_intent_picks_the_role_only_when_nobody_chose_one(server: ScriptedOpenAI,
                                                          workspace: Path) -> None:
    Agent("publisher", instructions="You publish posts.", intents=["content_publishing"],
          tools=[])
    Agent("plain", instructions="You are plain.", tools=[])
    server.enqueue(text("a"), text("b"), text("c"), text("d"))
    toolloop("Publish a blog post about our release", session="s1")
    assert "You publish posts." in _system(server.requests[0])
    assert default_store().list_turns("s1")[-1].agent == "publisher"
    assert default_store().get_session("s1").agent is None  # type: ignore[union-attr]
    toolloop("Publish a blog post", agent="plain", session="s2")  # the user's choice wins
    assert "You publish posts." not in _system(server.requests[1])
    toolloop("Publish a blog post", session="s2")  # and so does the session binding
    assert "You are plain." in _system(server.requests[2])
    toolloop("hmm", session="s3")  # no confident intent: the default role
    assert "You publish posts." not in _system(server.requests[3])


# ---------------------------------------------------------------------------- the magics
@pytest.fixture
def shell() -> Iterator[InteractiveShell]:
    ip = start_ipython() or get_ipython()
    assert ip is not None
    ip.run_cell("%load_ext jupyter_agent")
    yield ip
    for name in ("analyst", "_agent_run", "count_rows"):
        ip.user_ns.pop(name, None)


def test_agent_flag_takes_a_variable_or_a_name(shell: InteractiveShell, server: ScriptedOpenAI,
                                               workspace: Path) -> None:
    @tool
    def count_rows(path: str) -> int:
        """Count rows."""
        return 3

    shell.user_ns["count_rows"] = count_rows
    shell.user_ns["analyst"] = Agent("data-analyst", instructions="Analyse.",
                                     tools=["count_rows"])
    server.enqueue(text("by variable"), text("by name"))
    with capture_output():
        r1 = shell.run_cell("%%toolloop --agent analyst --session q3\nHow many rows?")
        r2 = shell.run_cell("%%toolloop --agent data-analyst --session q4\nHow many rows?")
    assert r1.success and r2.success, (r1.error_in_exec, r2.error_in_exec)
    for req in server.requests:
        assert "Analyse." in _system(req) and _tool_names(req) == ["count_rows"]
    with capture_output() as cap:
        bad = shell.run_cell("%%toolloop --agent nobody\nhi")
    assert not bad.success and "Unknown agent 'nobody'" in cap.stderr


def test_the_next_cell_offers_what_it_asks_and_the_card_names_the_agent(
        server: ScriptedOpenAI, workspace: Path) -> None:
    """Issue 37: after a ``--agent sh`` cell, a plain cell offered only ``bash`` and no card
    said which agent ran. The cell's own request decides the offer; the card names the agent
    and why (the cell named it, or it is the session's)."""
    from jupyter_agent import tool
    from jupyter_agent.view.bundle import render_markdown

    Agent("sh", instructions="You run shell commands.", tools=["bash"])

    @tool
    def count_rows(name: str) -> int:
        """Rows of a table."""
        return 3

    server.enqueue(text("one"), text("two"), text("three"))
    first = toolloop("list files", agent="sh", session="s37")
    assert first.view["tools"] == ["bash"]
    assert first.view["role"] == {"name": "sh", "source": "user"}
    assert "Agent sh · Tools: bash" in render_markdown(first.view)
    plain = toolloop("count the rows", session="s37")  # names no agent, no tools
    offered = [t["function"]["name"] for t in server.requests[1].get("tools") or []]
    assert "count_rows" in offered and offered != ["bash"]
    assert "You run shell commands." in _system(server.requests[1])  # the role is kept
    assert plain.view["role"] == {"name": "sh", "source": "session"}
    assert "Agent sh (this session's agent) · Tools:" in render_markdown(plain.view)
    named = toolloop("just bash", tools=["bash"], session="s37")
    assert named.view["tools"] == ["bash"]
    assert [t["function"]["name"] for t in server.requests[2]["tools"]] == ["bash"]
