"""Issue 35: an approval names exactly one tool; MCP tools by server AND tool.

With MCP servers ``a`` (tool ``b_c``) and ``a_b`` (tool ``c``), ``mcp_a_b_c`` reads as either
server's tool (whichever connected first got the name). Approving it used to approve a name,
not a tool. Now it is refused in one line listing both, each spelled ``mcp:SERVER/TOOL``, and
that spelling approves exactly one, on every road: the Python API, a plain cell, ``--over``, a
resume, and ``%agent permissions revoke``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from jupyter_agent.agents.resume import Answer, resume
from jupyter_agent.agents.toolloop import toolloop
from jupyter_agent.base.errors import ParameterError
from tests.adversarial.test_boundary_approvals import _MCP
from tests.adversarial.test_boundary_approvals import ip as ip  # noqa: F401  # the fixture
from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(params=["a_b first", "a first"])
def servers(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, str]]:
    """Both servers connected, in either order: ``{spelling: the name the model calls}``."""
    pytest.importorskip("mcp")
    from jupyter_agent.tools.mcp import connect_mcp, disconnect_all

    good = tmp_path / "good.py"
    good.write_text(_MCP.format(name="c", answer="a_b's c answered"))
    evil = tmp_path / "evil.py"
    evil.write_text(_MCP.format(name="b_c", answer="a's b_c answered"))
    order = [("a_b", good), ("a", evil)]
    if request.param == "a first":
        order.reverse()
    try:
        names = {}
        with pytest.warns(UserWarning, match="mcp_a_b_c was taken"):
            for server_name, script in order:
                s = connect_mcp(server_name, command=[sys.executable, str(script)])
                names[f"mcp:{server_name}/{'c' if server_name == 'a_b' else 'b_c'}"] = \
                    s.tool_names[0]
        yield names
    finally:
        disconnect_all()


def _refusal(message: str) -> None:
    assert "\n" not in message
    assert "'mcp_a_b_c' names more than one tool" in message
    assert "mcp:a/b_c" in message and "mcp:a_b/c" in message and "mcp:SERVER/TOOL" in message


def _tool_results(server: ScriptedOpenAI) -> list[str]:
    return [m["content"] for b in server.requests for m in b["messages"] if m["role"] == "tool"]


def test_the_python_api_refuses_the_ambiguous_name_and_takes_the_spelling(
        servers: dict[str, str], server: ScriptedOpenAI, workspace: Path) -> None:
    tools = list(servers.values())
    with pytest.raises(ParameterError) as exc:
        toolloop("go", tools=tools, approve=["mcp_a_b_c"])
    _refusal(str(exc.value))
    assert server.requests == []  # refused before any request

    server.enqueue(tool_calls([call(servers["mcp:a/b_c"], {}, id="m1"),
                               call(servers["mcp:a_b/c"], {}, id="m2")]))
    run = toolloop("go", tools=tools, approve=["mcp:a/b_c"])
    # Exactly one tool approved: a's ran, a_b's waits for a person.
    assert run.status == "ask" and "MCP server 'a_b'" in run.view["ask"]["question"]
    # The resume keeps the approval of that one tool, and only it.
    server.enqueue(tool_calls([call(servers["mcp:a/b_c"], {}, id="m3"),
                               call(servers["mcp:a_b/c"], {}, id="m4")]), text("done"))
    run = resume(run.run_id, Answer("option", option_index=1), run=run)  # allow m2 once
    assert run.status == "ask" and "MCP server 'a_b'" in run.view["ask"]["question"]
    outputs = {c.get("call_id"): c.get("output") for c in run.tool_calls}
    assert outputs.get("m3") == "a's b_c answered", run.tool_calls  # ran without a card
    assert "a_b's c answered" in _tool_results(server)  # m2, allowed once by the click


def test_a_plain_cell_and_over_refuse_the_ambiguous_name(
        servers: dict[str, str], server: ScriptedOpenAI, workspace: Path,
        ip: InteractiveShell) -> None:  # noqa: F811
    tools = ",".join(servers.values())
    for line in (f"-t {tools} --approve mcp_a_b_c",
                 f"--over rows -t {tools} --approve mcp_a_b_c"):
        ip.user_ns["rows"] = ["x"]
        with pytest.raises(UsageError) as exc:
            ip.run_cell_magic("toolloop", line, "go {item}" if "--over" in line else "go")
        _refusal(str(exc.value))
        assert "--approve" in str(exc.value)
    assert server.requests == []
    server.enqueue(tool_calls([call(servers["mcp:a/b_c"], {}, id="m1")]), text("done"))
    ip.run_cell_magic("toolloop", f"-t {tools} --approve mcp:a/b_c", "go")
    assert ip.user_ns["_agent_run"].status == "done"
    assert _tool_results(server) == ["a's b_c answered"]


def test_revoke_refuses_the_ambiguous_name_and_takes_the_spelling(
        servers: dict[str, str], server: ScriptedOpenAI, workspace: Path,
        ip: InteractiveShell) -> None:  # noqa: F811
    from jupyter_agent.runtime.grants import GRANTS

    GRANTS.clear()
    tools = list(servers.values())
    for spelling in ("mcp:a/b_c", "mcp:a_b/c"):  # "Allow for this session" on each
        server.enqueue(tool_calls([call(servers[spelling], {}, id="m")]), text("ok"))
        run = toolloop("go", tools=tools, session="s")
        assert run.status == "ask"
        resume(run.run_id, Answer("option", option_index=2), run=run)
    assert len(GRANTS.listing()) == 2
    with pytest.raises(UsageError) as exc:
        ip.run_line_magic("agent", "permissions revoke mcp_a_b_c")
    _refusal(str(exc.value))
    assert len(GRANTS.listing()) == 2  # nothing revoked
    # `%agent permissions` prints its table and returns nothing (issue 37): the listing tells
    ip.run_line_magic("agent", "permissions revoke mcp:a/b_c")
    assert [g.identity.split(" (")[0] for g in GRANTS.listing()] == ["mcp:a_b/c"]
    GRANTS.clear()
