"""The magics in a real IPython shell: ``%%chat``, ``%%toolloop``, ``%agent``, bad input."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import CapturedIO, capture_output

from jupyter_agent.base.events import RUN_MIME_TYPE
from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls

pytestmark = pytest.mark.timeout(60)

KEY = "sk-test-key-0123456789"  # the ``server`` fixture's key


@pytest.fixture
def shell(ip: InteractiveShell) -> Iterator[InteractiveShell]:
    yield ip
    for name in ("answer", "out", "_agent_run", "topic", "add"):
        ip.user_ns.pop(name, None)
    ip.run_cell("%config AgentMagics.widgets = True")


def run(shell: InteractiveShell, source: str) -> tuple[Any, CapturedIO]:
    with capture_output() as cap:
        result = shell.run_cell(source)
    return result, cap


def final_bundle(cap: CapturedIO) -> tuple[dict[str, Any], dict[str, Any]]:
    """The last display (the run's complete bundle) and its metadata."""
    assert cap.outputs, "nothing was displayed"
    out = cap.outputs[-1]
    return out.data, out.metadata


def assert_one_usage_error(result: Any, cap: CapturedIO, *fragments: str) -> None:
    assert isinstance(result.error_in_exec, UsageError), result.error_in_exec
    assert "Traceback" not in cap.stderr + cap.stdout
    lines = [line for line in cap.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("UsageError: "), cap.stderr
    for fragment in fragments:
        assert fragment in lines[0]


def test_chat_cell_with_interpolation(shell: InteractiveShell, server: ScriptedOpenAI) -> None:
    server.enqueue(text("Photosynthesis turns light into sugar.", reasoning="Biology."))
    shell.user_ns["topic"] = "photosynthesis"
    result, cap = run(shell, "%%chat --out answer\n"
                             "Explain {topic} in two sentences. Keep {{braces}} as typed.")
    assert result.success, result.error_in_exec
    assert shell.user_ns["answer"] == "Photosynthesis turns light into sugar."
    assert server.requests[0]["messages"] == [{
        "role": "user",
        "content": "Explain photosynthesis in two sentences. Keep {braces} as typed."}]
    data, metadata = final_bundle(cap)
    assert {RUN_MIME_TYPE, "text/markdown", "text/plain"} <= set(data)
    assert "Photosynthesis turns light into sugar." in data["text/markdown"]
    assert "<summary>Reasoning</summary>" in data["text/markdown"]
    assert data["text/plain"].startswith("Photosynthesis turns light into sugar.")
    payload = data[RUN_MIME_TYPE]
    assert payload["view"]["answer"] == shell.user_ns["answer"]
    assert payload["view"]["status"] == "done" and "events" not in payload  # the view only
    info = metadata[RUN_MIME_TYPE]
    assert info["status"] == "done" and info["model"] == "gpt-4.1-mini"
    assert info["input_tokens"] > 0 and info["output_tokens"] > 0 and info["cost"] > 0
    assert shell.user_ns["_agent_run"].answer == shell.user_ns["answer"]
    assert KEY not in json.dumps([o.data for o in cap.outputs] + [o.metadata for o in cap.outputs])


def test_chat_options_reach_the_request(shell: InteractiveShell, server: ScriptedOpenAI) -> None:
    server.enqueue(text("one"), text("two"))
    run(shell, "%%chat\nfirst")
    result, _ = run(shell, "%%chat --model gpt-4.1 --system 'Be terse.' --temperature 0.2 "
                           "--max-tokens 50 --no-history --no-stream\nsecond")
    assert result.success, result.error_in_exec
    body = server.requests[1]
    assert body["model"] == "gpt-4.1"
    assert body["messages"] == [{"role": "system", "content": "Be terse."},
                                {"role": "user", "content": "second"}]
    assert (body["temperature"], body["max_tokens"]) == (0.2, 50)
    assert "stream" not in body


def test_toolloop_cell(shell: InteractiveShell, server: ScriptedOpenAI) -> None:
    result, _ = run(shell, "from jupyter_agent import tool\n\n"
                           "@tool\n"
                           "def add(a: int, b: int) -> int:\n"
                           "    '''Add two integers.'''\n"
                           "    return a + b\n\n"
                           "@tool\n"
                           "def unused() -> str:\n"
                           "    '''Not offered.'''\n"
                           "    return ''\n")
    assert result.success
    server.enqueue(tool_calls([call("add", {"a": 17, "b": 25}, id="call_add")]),
                   text("The sum is 42."))
    result, cap = run(shell, "%%toolloop -t add --out out\nWhat is 17 + 25? Use the tools.")
    assert result.success, result.error_in_exec
    assert shell.user_ns["out"] == "The sum is 42."
    assert [t["function"]["name"] for t in server.requests[0]["tools"]] == ["add"]
    assert server.requests[1]["messages"][-1] == {"role": "tool", "tool_call_id": "call_add",
                                                  "content": "42"}
    data, _ = final_bundle(cap)
    cards = [i for i in data[RUN_MIME_TYPE]["view"]["items"] if i["kind"] == "tool"]
    assert [(i["call_id"], i["name"], i["output"], i["state"]) for i in cards] == [
        ("call_add", "add", "42", "done")]
    assert "**Tool `add`**" in data["text/markdown"]
    assert shell.user_ns["_agent_run"].tool_values == {"call_add": 42}


def test_markdown_only_without_widgets(shell: InteractiveShell, server: ScriptedOpenAI) -> None:
    shell.run_cell("%config AgentMagics.widgets = False")
    server.enqueue(text("plain"))
    result, cap = run(shell, "%%chat\nhi")
    assert result.success
    data, _ = final_bundle(cap)
    assert "application/vnd.jupyter.widget-view+json" not in data
    assert data["text/plain"].startswith("plain")


def test_bad_option(shell: InteractiveShell, server: ScriptedOpenAI) -> None:
    result, cap = run(shell, "%%chat --bogus\nhi")
    assert_one_usage_error(result, cap, "--bogus")
    assert server.requests == []


@pytest.mark.parametrize("cell", ["%%chat\n", "%%chat\n   \n\n", "%%toolloop\n"])
def test_empty_cell(shell: InteractiveShell, server: ScriptedOpenAI, cell: str) -> None:
    result, cap = run(shell, cell)
    assert_one_usage_error(result, cap, "empty")
    assert server.requests == []


def test_unknown_tool_name(shell: InteractiveShell, server: ScriptedOpenAI) -> None:
    result, cap = run(shell, "%%toolloop --tools nope\nhi")
    assert_one_usage_error(result, cap, "nope")
    assert server.requests == []


def test_unknown_variable(shell: InteractiveShell, server: ScriptedOpenAI) -> None:
    result, cap = run(shell, "%%chat\nTell me about {no_such_variable}")
    assert_one_usage_error(result, cap, "no_such_variable", "{{")
    assert server.requests == []


def test_missing_key(shell: InteractiveShell, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUPYTER_AGENT_MODEL", "gpt-4.1-mini")
    result, cap = run(shell, "%%chat\nhi")
    assert_one_usage_error(result, cap, "OPENAI_API_KEY")


def test_unreachable_server(shell: InteractiveShell, monkeypatch: pytest.MonkeyPatch,
                            fast_retries: None) -> None:
    with socket.socket() as s:  # a port that was free a moment ago: nothing listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{port}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    result, cap = run(shell, "%%chat --out answer\nhi")
    assert_one_usage_error(result, cap, "connection")
    assert shell.user_ns["answer"] == ""  # never the error text
    data, metadata = final_bundle(cap)
    assert metadata[RUN_MIME_TYPE]["status"] == "error"
    assert "connection" in data["text/markdown"]
    assert KEY not in cap.stderr + json.dumps([o.data for o in cap.outputs])


def test_api_key_from_config_is_used_and_never_shown(shell: InteractiveShell,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-configured-5566778899"
    with ScriptedOpenAI(expected_key=secret) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        result, cap = run(shell, f"%config AgentMagics.api_key = '{secret}'")
        assert result.success
        _, shown = run(shell, "%config AgentMagics")
        _, shown_one = run(shell, "%config AgentMagics.api_key")
        srv.enqueue(text("authorised"))
        result, chat_cap = run(shell, "%%chat --out answer\nhi")
    assert result.success, result.error_in_exec
    assert shell.user_ns["answer"] == "authorised"  # the server accepted the configured key
    assert "api_key" in shown.stdout
    everything = (cap.stdout + cap.stderr + shown.stdout + shown.stderr + shown_one.stdout
                  + json.dumps([o.data for o in chat_cap.outputs])
                  + json.dumps([o.metadata for o in chat_cap.outputs]))
    assert secret not in everything
    assert secret not in json.dumps(srv.requests) + json.dumps(srv.request_headers)


def test_agent_help(shell: InteractiveShell) -> None:
    result, cap = run(shell, "%agent help")
    assert result.success
    assert cap.stdout.startswith("%agent commands:")
    assert "model" in cap.stdout and "resume" in cap.stdout
    result, cap = run(shell, "%agent")
    assert cap.stdout.startswith("%agent commands:")


def test_agent_permissions_prints_its_table_once(shell: InteractiveShell) -> None:
    """The table is the output: the list it returns (for Python callers) is not echoed under
    it as ``Out[n]`` (issue 37: it was)."""
    from jupyter_agent.runtime.grants import GRANTS

    GRANTS.clear()
    tool = type("T", (), {"name": "bash"})()
    GRANTS.remember("s1", tool, "allow")
    try:
        result, cap = run(shell, "%agent permissions")
    finally:
        GRANTS.clear()
    assert result.success and result.result is None
    assert len(cap.stdout.splitlines()) == 1 and cap.stdout.startswith("allow bash")
    assert "Grant(" not in cap.stdout
    assert not cap.outputs


def test_agent_model(shell: InteractiveShell, server: ScriptedOpenAI) -> None:
    result, cap = run(shell, "%agent model gpt-4o-mini")
    assert result.success
    assert cap.stdout.startswith("model: gpt-4o-mini")
    server.enqueue(text("ok"))
    run(shell, "%%chat\nhi")
    assert server.requests[0]["model"] == "gpt-4o-mini"
    result, cap = run(shell, "%agent model")
    assert cap.stdout.startswith("model: gpt-4o-mini")


def test_agent_bad_subcommand(shell: InteractiveShell) -> None:
    result, cap = run(shell, "%agent frobnicate")
    assert_one_usage_error(result, cap, "frobnicate")


@pytest.mark.parametrize("cell", ["%%plan\nPlan a trip.", "%%plan --over rows\nPlan {item}."])
def test_a_cell_whose_agent_cannot_be_imported_says_so_in_one_line(
        shell: InteractiveShell, server: ScriptedOpenAI, monkeypatch: pytest.MonkeyPatch,
        cell: str) -> None:
    # Both roads of a cell load the agent layer through agents/entries.py first: a part that
    # is missing (a broken install) is one line, and no request is made.
    from jupyter_agent.agents import entries

    monkeypatch.setitem(entries.ENTRIES, "plan", ("jupyter_agent.agents.no_such_module", "plan"))
    shell.user_ns["rows"] = [1, 2]
    try:
        result, cap = run(shell, cell)
    finally:
        shell.user_ns.pop("rows", None)
    assert_one_usage_error(result, cap, "%%plan is not available",
                           "jupyter_agent.agents.no_such_module")
    assert server.requests == []
