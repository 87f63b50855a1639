"""MCP servers as tools: a small server written by the test, over stdio and streamable HTTP."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from jupyter_agent.agents.resume import Answer, resume
from jupyter_agent.agents.toolloop import toolloop
from jupyter_agent.base.errors import ConfigError, ToolError
from jupyter_agent.runtime.agents import Agent
from jupyter_agent.tools.mcp import connect_mcp, disconnect_mcp, mcp_servers
from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls

pytest.importorskip("mcp")
pytestmark = pytest.mark.timeout(120)

SERVER = '''
import sys
try:
    from mcp.server.mcpserver import MCPServer as Server  # mcp 2.x
except ImportError:
    from mcp.server.fastmcp import FastMCP as Server  # mcp 1.x

app = Server("calc")


@app.tool()
def add(a: int, b: int) -> int:
    """Add two whole numbers."""
    return a + b


@app.tool()
def fail(reason: str) -> str:
    """Always fails with the reason."""
    raise ValueError(reason)


if __name__ == "__main__":
    if len(sys.argv) > 1:
        port = int(sys.argv[1])
        try:
            app.run("streamable-http", host="127.0.0.1", port=port)
        except TypeError:
            app.settings.host, app.settings.port = "127.0.0.1", port
            app.run("streamable-http")
    else:
        app.run()
'''


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "calc_server.py"
    path.write_text(SERVER)
    return path


def _tool_results(request: dict[str, Any]) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in request["messages"] if m["role"] == "tool"}


def _children_running(script: Path) -> list[psutil.Process]:
    out = []
    for p in psutil.Process().children(recursive=True):
        try:
            if str(script) in " ".join(p.cmdline()):
                out.append(p)
        except psutil.Error:
            continue
    return out


def test_the_loop_calls_a_stdio_mcp_tool(server: ScriptedOpenAI, workspace: Path,
                                         script: Path) -> None:
    calc = connect_mcp("calc", command=[sys.executable, str(script)])
    assert calc.tool_names == ["mcp_calc_add", "mcp_calc_fail"]
    add = calc.tools[0]
    assert add.description == "Add two whole numbers."
    assert set(add.parameters["properties"]) == {"a", "b"}
    assert add.origin == "mcp"

    Agent("calculator", tools=["mcp_calc"], permissions={"mcp_calc_add": "allow",
                                                          "mcp_calc_fail": "allow"})
    server.enqueue(tool_calls([call("mcp_calc_add", {"a": 2, "b": 3}, id="a1"),
                               call("mcp_calc_fail", {"reason": "on purpose"}, id="f1")]),
                   text("2 + 3 = 5"))
    run = toolloop("What is 2 + 3?", agent="calculator")

    assert run.status == "done" and run.answer == "2 + 3 = 5"
    assert [t["function"]["name"] for t in server.requests[0]["tools"]] == [
        "mcp_calc_add", "mcp_calc_fail"]
    results = _tool_results(server.requests[1])
    assert results["a1"] == "5"
    # The tool's error comes back as the result (how much of it depends on the server).
    assert results["f1"].startswith("Tool error: ToolError:") and "fail" in results["f1"]

    assert _children_running(script)
    disconnect_mcp("calc")
    assert mcp_servers() == []
    deadline = time.monotonic() + 10
    while _children_running(script) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _children_running(script)  # the server process is gone


def test_mcp_tools_ask_by_default(server: ScriptedOpenAI, workspace: Path, script: Path) -> None:
    connect_mcp("calc", command=[sys.executable, str(script)])
    server.enqueue(tool_calls([call("mcp_calc_add", {"a": 20, "b": 22}, id="a1")]),
                   text("42"))
    run = toolloop("add", tools=["mcp_calc_add"])
    assert run.status == "ask" and run.view["ask"]["detail"]["tool"] == "mcp_calc_add"
    resume(run.run_id, Answer("option", option_index=1), run=run)
    assert run.status == "done" and _tool_results(server.requests[1]) == {"a1": "42"}


def test_connection_errors_are_clear(script: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text("import sys\nprint('boom on stderr', file=sys.stderr)\nsys.exit(3)\n")
    with pytest.raises(ConfigError, match="Could not connect to MCP server 'bad'") as info:
        connect_mcp("bad", command=[sys.executable, str(broken)], timeout=20)
    assert "boom on stderr" in str(info.value)
    with pytest.raises(ConfigError, match="exactly one of"):
        connect_mcp("x")
    with pytest.raises(ToolError, match="Unknown tool 'mcp_nothing'"):
        toolloop("hi", tools=["mcp_nothing"])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def http_server(script: Path) -> Iterator[str]:
    port = _free_port()
    proc = subprocess.Popen([sys.executable, str(script), str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        else:
            pytest.fail("the MCP HTTP server did not start")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_the_loop_calls_a_streamable_http_mcp_tool(server: ScriptedOpenAI, workspace: Path,
                                                   http_server: str) -> None:
    remote = connect_mcp("remote", url=http_server)
    assert remote.tool_names == ["mcp_remote_add", "mcp_remote_fail"]
    server.enqueue(tool_calls([call("mcp_remote_add", {"a": 1, "b": 1}, id="a1")]), text("2"))
    run = toolloop("1 + 1?", tools=["mcp_remote"], auto_approve=True)
    assert run.status == "done" and _tool_results(server.requests[1]) == {"a1": "2"}
