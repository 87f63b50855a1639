"""Every error a newcomer meets first names its fix: a server that is down (its URL and the
setting), a mistyped model (the closest known names, not "No API key"), a mistyped flag ("did
you mean"), and a ``@tool`` the model could only guess at (a warning when it is registered)."""

from __future__ import annotations

import socket
import warnings
from collections.abc import Iterator
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from jupyter_agent import tool
from jupyter_agent.base.errors import ToolDefinitionWarning
from tests.fakes.openai_server import ScriptedOpenAI, text
from tests.magics.test_magics import assert_one_usage_error

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def shell(ip: InteractiveShell) -> Iterator[InteractiveShell]:
    ip.run_cell("%config AgentMagics.widgets = False")
    ip.run_cell("%config AgentMagics.max_retries = 0")
    yield ip
    ip.run_cell("%config AgentMagics.max_retries = 3")
    ip.run_cell("%config AgentMagics.widgets = True")
    ip.user_ns.pop("add", None)


def run(shell: InteractiveShell, source: str) -> tuple[Any, Any]:
    with capture_output() as cap:
        result = shell.run_cell(source)
    return result, cap


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_server_that_is_down_names_its_url_and_the_setting(
        shell: InteractiveShell, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key-0123456789")
    result, cap = run(shell, "%%chat\nHello?")
    assert_one_usage_error(result, cap, "connection error", f"Is the server at {url} running?",
                           "OPENAI_BASE_URL", "%config AgentMagics.base_url")
    assert "sk-test-key" not in cap.stderr


def test_a_mistyped_model_gets_the_closest_known_name_not_no_api_key(
        shell: InteractiveShell) -> None:
    result, cap = run(shell, "%%chat --model locl\nHello?")
    assert_one_usage_error(result, cap, "unknown model 'locl'; did you mean 'local'?")
    assert "No API key" not in cap.stderr
    result, cap = run(shell, "%%chat --model gpt-4.1-mnii\nHello?")
    assert_one_usage_error(result, cap, "unknown model 'gpt-4.1-mnii'; did you mean 'gpt-4.1-mini'")


def test_a_model_name_like_nothing_known_lists_the_known_ones(shell: InteractiveShell) -> None:
    result, cap = run(shell, "%%chat --model zzzzqqqq\nHello?")
    assert_one_usage_error(result, cap, "unknown model 'zzzzqqqq'; known models: local, gpt-4.1-mini")


def test_any_model_name_still_reaches_a_configured_server(
        shell: InteractiveShell, server: ScriptedOpenAI) -> None:
    # With a key (your own server serving "llama3" under that name) nothing is guessed.
    server.enqueue(text("Hi."))
    result, _ = run(shell, "%%chat --model llama3\nHello?")
    assert result.success, result.error_in_exec
    assert server.requests[-1]["model"] == "llama3"


def test_a_flag_typo_gets_did_you_mean(shell: InteractiveShell) -> None:
    result, cap = run(shell, "%%toolloop --max-rouns 3\nWhat is 2 + 2?")
    assert_one_usage_error(result, cap, "unrecognized arguments: --max-rouns 3",
                           "did you mean --max-rounds?")
    result, cap = run(shell, "%%chat --modle local\nHello?")
    assert_one_usage_error(result, cap, "did you mean --model?")


def test_a_flag_like_nothing_known_keeps_argparse_s_own_line(shell: InteractiveShell) -> None:
    result, cap = run(shell, "%%chat --zzzzqq\nHello?")
    assert_one_usage_error(result, cap, "unrecognized arguments: --zzzzqq")
    assert "did you mean" not in cap.stderr


def test_a_tool_without_docstring_or_type_hints_warns_at_registration() -> None:
    with pytest.warns(ToolDefinitionWarning) as caught:
        @tool
        def add(a, b):  # type: ignore[no-untyped-def]
            return a + b
    message = str(caught[0].message)
    assert message.startswith("@tool add: no docstring")
    assert "no type hint on a, b" in message and "`a: int`" in message
    assert add(1, 2) == 3  # registered and usable all the same

    with pytest.warns(ToolDefinitionWarning, match="no type hint on unit"):
        @tool(name="convert")
        def convert(value: float, unit) -> float:  # type: ignore[no-untyped-def]
            """Convert a value."""
            return value


def test_a_described_typed_tool_warns_about_nothing() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", ToolDefinitionWarning)

        @tool
        def add(a: int, b: int) -> int:
            """Add two integers."""
            return a + b

        @tool(description="Multiply two integers.")
        def mul(a: int, b: int) -> int:
            return a * b
