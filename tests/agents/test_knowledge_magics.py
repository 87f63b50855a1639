"""``--knowledge VAR`` reaches the request messages of all three magics."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from IPython import get_ipython
from IPython.core.interactiveshell import InteractiveShell
from IPython.testing.globalipapp import start_ipython
from IPython.utils.capture import capture_output

from tests.fakes.openai_server import ScriptedOpenAI, text

pytestmark = pytest.mark.timeout(60)

FACT = "Refunds are possible within 30 days."


@pytest.fixture
def shell() -> Iterator[InteractiveShell]:
    ip = start_ipython() or get_ipython()
    assert ip is not None and ip.run_cell("%load_ext jupyter_agent").success
    ip.run_cell("%config AgentMagics.widgets = False")
    ip.user_ns["docs"] = [{"q": "Refund window?", "a": FACT}]
    yield ip
    ip.user_ns.pop("docs", None)
    ip.run_cell("%config AgentMagics.widgets = True")


@pytest.mark.parametrize("magic", ["chat", "toolloop", "plan"])
def test_knowledge_reaches_the_system_prompt(shell: InteractiveShell, server: ScriptedOpenAI,
                                             magic: str) -> None:
    server.enqueue(text("Within 30 days."))
    with capture_output():
        result = shell.run_cell(f"%%{magic} --knowledge docs\nHow long can I ask for a refund?")
    assert result.success, result.error_in_exec
    messages = server.requests[0]["messages"]
    assert messages[0]["role"] == "system"
    assert f"Refund window?\n{FACT}" in messages[0]["content"]
    assert "<knowledge>" in messages[0]["content"]
    assert messages[-1] == {"role": "user", "content": "How long can I ask for a refund?"}
    assert shell.user_ns["_agent_run"].answer == "Within 30 days."
