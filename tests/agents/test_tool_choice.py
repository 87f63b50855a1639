"""``tool_choice``: forced on the run's first request only, auto with the guard after
(docs/behaviour.md §5.1). The request bodies are asserted, not what a model happens to pick."""

from __future__ import annotations

import pytest

from jupyter_agent import tool, toolloop
from jupyter_agent.base.errors import ParameterError
from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls

pytestmark = pytest.mark.timeout(60)


def _tools() -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @tool
    def echo(s: str) -> str:
        """Echo."""
        return s


@pytest.mark.parametrize(("choice", "wire"), [
    ("add", {"type": "function", "function": {"name": "add"}}),
    ("required", "required"),
    ("none", "none"),
])
def test_the_first_request_is_forced_and_later_ones_are_auto(
        server: ScriptedOpenAI, choice: str, wire: object) -> None:
    _tools()
    server.enqueue(tool_calls([call("add", {"a": 1, "b": 2})]),
                   tool_calls([call("add", {"a": 3, "b": 4})]), text("Done."))
    run = toolloop("Add things.", tool_choice=choice)
    assert run.status == "done"
    assert server.requests[0]["tool_choice"] == wire
    assert [r["tool_choice"] for r in server.requests[1:]] == ["auto", "auto"]
    labels = [e.tool_choice for e in run.events if e.type == "round_started"]
    assert labels[0] == (choice if choice != "add" else "add") and labels[1:] == ["auto", "auto"]


def test_auto_forces_nothing(server: ScriptedOpenAI) -> None:
    _tools()
    server.enqueue(text("Hi."))
    toolloop("Hi.", tool_choice="auto")
    assert server.requests[0]["tool_choice"] == "auto"


@pytest.mark.parametrize("bad", ["nope", "", "  ", 3])
def test_an_unknown_or_empty_choice_fails_before_anything_is_recorded(
        server: ScriptedOpenAI, bad: object) -> None:
    from jupyter_agent.session import default_store

    _tools()
    server.enqueue(text("Never requested."))
    with pytest.raises(ParameterError, match="tool_choice"):
        toolloop("Hi.", tool_choice=bad)  # type: ignore[arg-type]
    assert server.requests == []
    assert default_store().history_messages("default", 6) == []


def test_a_forced_tool_outside_the_cells_tools_is_refused(server: ScriptedOpenAI) -> None:
    _tools()
    with pytest.raises(ParameterError, match="echo"):
        toolloop("Hi.", tools=["add"], tool_choice="echo")
    assert server.requests == []


def test_the_magic_flag_reaches_the_request(server: ScriptedOpenAI) -> None:
    from IPython.core.error import UsageError
    from IPython.testing.globalipapp import start_ipython
    from IPython.utils.capture import capture_output

    shell = start_ipython()
    if shell is None:
        from IPython import get_ipython
        shell = get_ipython()
    shell.run_cell("%load_ext jupyter_agent")
    _tools()
    server.enqueue(tool_calls([call("echo", {"s": "x"})]), text("Done."))
    with capture_output():
        result = shell.run_cell("%%toolloop --tool-choice echo --no-history\nEcho x.")
    assert result.success, result.error_in_exec
    assert server.requests[0]["tool_choice"] == {"type": "function",
                                                 "function": {"name": "echo"}}
    assert server.requests[1]["tool_choice"] == "auto"
    with capture_output():
        result = shell.run_cell("%%toolloop --tool-choice nope --no-history\nEcho x.")
    assert isinstance(result.error_in_exec, UsageError)
    assert "--tool-choice" in str(result.error_in_exec)
    assert len(server.requests) == 2
