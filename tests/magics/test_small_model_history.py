"""A tool loop on a very small model starts fresh (``Capabilities.history_in_tool_loop``): the
README's ``%%chat`` then ``%%toolloop`` must call ``add`` and answer 42 on the embedded model,
which copied the chat turn's arithmetic when it got it as history (docs/behaviour.md §9.9)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from jupyter_agent.base.events import RUN_MIME_TYPE
from jupyter_agent.llm.local import local_available
from jupyter_agent.llm.profiles import Capabilities, ModelProfile, register_profile
from jupyter_agent.view.bundle import render_markdown
from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls

pytestmark = pytest.mark.timeout(60)

ADD = ("from jupyter_agent import tool\n\n"
       "@tool\n"
       "def add(a: int, b: int) -> int:\n"
       "    '''Add two integers.'''\n"
       "    return a + b\n")
NOTICE = "Earlier turns were not sent"


@pytest.fixture
def shell(ip: InteractiveShell) -> Iterator[InteractiveShell]:
    ip.run_cell("%config AgentMagics.widgets = False")
    assert ip.run_cell(ADD).success
    ip.user_ns["topic"] = "photosynthesis"
    yield ip
    ip.run_cell("%config AgentMagics.widgets = True")
    for name in ("add", "topic", "answer"):
        ip.user_ns.pop(name, None)


def run_cell(shell: InteractiveShell, source: str) -> dict[str, Any]:
    """Run a cell; the run's view from its last bundle."""
    with capture_output() as cap:
        result = shell.run_cell(source)
    assert result.success, result.error_in_exec
    return dict(cap.outputs[-1].data[RUN_MIME_TYPE]["view"])


def warnings_of(view: dict[str, Any]) -> list[str]:
    return [str(i.get("message") or i.get("text") or "") for i in view.get("items", [])
            if i.get("kind") == "warning"]


def test_a_small_model_s_tool_loop_gets_no_history_and_the_card_says_so(
        shell: InteractiveShell, server: ScriptedOpenAI) -> None:
    register_profile(ModelProfile(name="tiny", model="tiny",
                                  capabilities=Capabilities(history_in_tool_loop=False)))
    server.enqueue(text("Photosynthesis makes sugar. 17 + 25 = 32."),
                   tool_calls([call("add", {"a": 17, "b": 25})]), text("42"))
    run_cell(shell, "%%chat --model tiny\nExplain {topic} in two sentences.")
    view = run_cell(shell, "%%toolloop --model tiny\nWhat is 17 + 25? Use the tools.")
    first_loop_request = server.requests[1]["messages"]
    assert [m["role"] for m in first_loop_request if m["role"] != "system"] == ["user"]
    assert "photosynthesis" not in json.dumps(first_loop_request).lower()
    assert any(w.startswith(NOTICE) and "tiny is a small model" in w for w in warnings_of(view))
    # A calm note, not a warning: nothing went wrong (issue #22: an orange warning at a
    # newcomer's second agent cell).
    note = next(i for i in view["items"] if str(i.get("message", "")).startswith(NOTICE))
    assert note["level"] == "note"
    md = render_markdown(view)
    assert "> *Note:* Earlier turns were not sent" in md and "**Warning:** Earlier" not in md

    # Said once per session: the next tool loop starts fresh as well, without repeating it.
    server.enqueue(tool_calls([call("add", {"a": 1, "b": 2})]), text("3"))
    again = run_cell(shell, "%%toolloop --model tiny\nWhat is 1 + 2? Use the tools.")
    assert [m["role"] for m in server.requests[3]["messages"] if m["role"] != "system"] == ["user"]
    assert not any(w.startswith(NOTICE) for w in warnings_of(again))

    # A new session is told again.
    assert shell.run_cell("%agent new other-session").success
    server.enqueue(text("Hi."), tool_calls([call("add", {"a": 2, "b": 2})]), text("4"))
    run_cell(shell, "%%chat --model tiny\nHello.")
    third = run_cell(shell, "%%toolloop --model tiny\nWhat is 2 + 2? Use the tools.")
    assert any(w.startswith(NOTICE) for w in warnings_of(third))


def test_a_capable_model_keeps_the_history_and_no_notice(
        shell: InteractiveShell, server: ScriptedOpenAI) -> None:
    server.enqueue(text("Photosynthesis makes sugar."),
                   tool_calls([call("add", {"a": 17, "b": 25})]), text("42"))
    run_cell(shell, "%%chat\nExplain {topic} in two sentences.")
    view = run_cell(shell, "%%toolloop\nWhat is 17 + 25? Use the tools.")
    assert "photosynthesis" in json.dumps(server.requests[1]["messages"]).lower()
    assert not any(w.startswith(NOTICE) for w in warnings_of(view))


def test_a_small_model_s_first_agent_cell_has_nothing_to_leave_out(
        shell: InteractiveShell, server: ScriptedOpenAI) -> None:
    register_profile(ModelProfile(name="tiny", model="tiny",
                                  capabilities=Capabilities(history_in_tool_loop=False)))
    server.enqueue(tool_calls([call("add", {"a": 17, "b": 25})]), text("42"))
    view = run_cell(shell, "%%toolloop --model tiny\nWhat is 17 + 25? Use the tools.")
    assert not any(w.startswith(NOTICE) for w in warnings_of(view))


@pytest.mark.local_model
@pytest.mark.timeout(900)
@pytest.mark.skipif(not local_available(), reason="needs the `local` extra")
def test_the_readme_sequence_on_the_embedded_model_answers_42_ten_times(
        shell: InteractiveShell) -> None:
    # No key: the embedded model, in the README's order, ten times over (a new session each
    # time, as ten newcomers would).
    for attempt in range(10):
        assert shell.run_cell(f"%agent new readme-{attempt}").success
        run_cell(shell, "%%chat --out answer\nExplain {topic} in two sentences.")
        view = run_cell(shell, "%%toolloop\nWhat is 17 + 25? Use the tools.")
        tools = [i for i in view.get("items", []) if i.get("kind") == "tool"]
        assert any(t.get("name") == "add" for t in tools), (attempt, view)
        assert "42" in str(view.get("answer") or view.get("text") or ""), (attempt, view)
        assert view.get("status") == "done", (attempt, view.get("status"))
        assert any(w.startswith(NOTICE) for w in warnings_of(view)), attempt
