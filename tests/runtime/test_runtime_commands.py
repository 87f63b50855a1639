"""``%agent`` session subcommands: sessions, session, new, reset, usage, history, export,
agents."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest
from IPython import get_ipython
from IPython.core.interactiveshell import InteractiveShell
from IPython.testing.globalipapp import start_ipython
from IPython.utils.capture import capture_output

from jupyter_agent.agents.chat import chat
from jupyter_agent.agents.toolloop import toolloop
from jupyter_agent.base import config
from jupyter_agent.base.errors import MagicUsageError
from jupyter_agent.base.events import RUN_MIME_TYPE
from jupyter_agent.edge.commands import run_command
from jupyter_agent.runtime.agents import Agent
from jupyter_agent.session import default_store
from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls
from tests.stored import stored_messages


def agent(line: str, capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    run_command(line, {})
    return capsys.readouterr().out


def test_switching_sessions(server: ScriptedOpenAI, capsys: pytest.CaptureFixture[str]) -> None:
    assert "current session is 'default'" in agent("sessions", capsys)
    out = agent("session q3", capsys)
    assert out.startswith("session: q3, 0 turns")
    assert config.settings.session == "q3"
    out = agent("sessions", capsys)
    assert "* q3" in out


def test_new_session_in_a_group_and_listing_by_group(capsys: pytest.CaptureFixture[str]) -> None:
    assert "New session 'work-1' in group 'work' is now current." in agent(
        "new work-1 --group work", capsys)
    agent("new", capsys)  # a generated name
    generated = config.settings.session
    assert generated.startswith("session-") and generated != "work-1"
    out = agent("sessions --group work", capsys)
    assert "work-1" in out and generated not in out
    with pytest.raises(MagicUsageError, match="exists"):
        run_command("new work-1", {})


def test_session_binds_an_agent_and_a_model(capsys: pytest.CaptureFixture[str],
                                            tmp_path: Path) -> None:
    Agent("writer", workspace=tmp_path)
    out = agent("session q --agent writer --model gpt-4o-mini", capsys)
    assert "agent: writer" in out and "model: gpt-4o-mini" in out and str(tmp_path) in out
    rec = default_store().get_session("q")
    assert rec is not None and (rec.agent, rec.model) == ("writer", "gpt-4o-mini")
    agent("session q --unbind", capsys)
    rec = default_store().get_session("q")
    assert rec is not None and (rec.agent, rec.model) == (None, None)


def test_usage_history_and_reset(server: ScriptedOpenAI, workspace: Path,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    agent("session talk", capsys)
    server.enqueue(text("Hi there."),
                   tool_calls([call("glob_files", {"pattern": "*"}, id="g1")]), text("Empty."))
    chat("Hello", session="talk")
    toolloop("List files", tools=["glob_files"], session="talk")

    usage = agent("usage", capsys)
    assert usage.startswith("session talk: 2 turns,") and "gpt-4.1-mini: 2 turns" in usage
    history = agent("history", capsys).splitlines()
    assert history[0] == "[1] user: Hello"
    assert history[1] == "[2] assistant: Hi there."
    assert history[2] == "[3] user: List files"
    assert history[3] == '[4]   -> glob_files({"pattern": "*"})'
    assert history[4].startswith("[5]   <- glob_files: No paths match")
    assert agent("history -n 1", capsys) == "[6] assistant: Empty.\n"

    assert "cleared" in agent("reset", capsys)
    assert stored_messages(default_store(), "talk") == []
    assert "has no messages" in agent("history", capsys)
    with pytest.raises(MagicUsageError, match="no session 'nope'"):
        run_command("reset nope", {})


def test_sessions_and_history_come_a_page_at_a_time(capsys: pytest.CaptureFixture[str]) -> None:
    store = default_store()
    for n in range(120):
        store.ensure_session(f"s{n:03d}", "odd" if n % 2 else None)
    first = agent("sessions", capsys).splitlines()
    assert len(first) == 51 and first[0].startswith("  s119")  # newest first
    assert first[-1] == "(sessions 1-50 of 120; next: %agent sessions --page 2)"
    last = agent("sessions --page 3", capsys).splitlines()
    assert len(last) == 21 and last[-1] == "(sessions 101-120 of 120)"
    assert agent("sessions --page 4", capsys) == "No sessions on page 4 (there are 120).\n"
    odd = agent("sessions --group odd --page 2", capsys).splitlines()
    assert odd[0].startswith("  s019") and odd[-1] == "(sessions 51-60 of 60)"
    with pytest.raises(MagicUsageError, match="--page: must be an integer of 1 or more"):
        run_command("sessions --page 0", {})

    turn = store.start_turn("long")
    store.append_messages("long", turn, [{"role": "user" if n % 2 == 0 else "assistant",
                                          "content": f"m{n}"} for n in range(130)])
    page1 = agent("history long", capsys).splitlines()
    assert page1[0] == "[81] user: m80" and page1[49] == "[130] assistant: m129"
    assert page1[50] == "(older messages: %agent history long --page 2)"
    page3 = agent("history long --page 3", capsys).splitlines()
    assert page3 == [f"[{n + 1}] {'user' if n % 2 == 0 else 'assistant'}: m{n}"
                     for n in range(30)]
    assert agent("history long -n 2 --page 2", capsys).splitlines() == [
        "[127] user: m126", "[128] assistant: m127",
        "(older messages: %agent history long -n 2 --page 3)"]
    assert "has no messages on page 9" in agent("history long --page 9", capsys)


def test_export_writes_a_valid_notebook(server: ScriptedOpenAI, workspace: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    server.enqueue(text("Paris."),
                   tool_calls([call("bash", {"command": "echo hi"}, id="b1")]))
    chat("Capital of France?", session="trip")
    toolloop("Say hi with bash", tools=["bash"], session="trip")  # left waiting for approval
    out = agent(f"export {workspace / 'trip.ipynb'} --session trip", capsys)
    assert out.startswith("Exported session 'trip'")

    nb = nbformat.read(str(workspace / "trip.ipynb"), as_version=4)
    nbformat.validate(nb)
    kinds = [c.cell_type for c in nb.cells]
    assert kinds == ["markdown", "markdown", "code", "markdown", "markdown", "code", "markdown"]
    assert "# Session `trip`" in nb.cells[0].source
    assert "Capital of France?" in nb.cells[1].source
    assert nb.cells[2].source == "%%chat --session trip\nCapital of France?"
    bundle = nb.cells[2].outputs[0]["data"]
    assert set(bundle) >= {RUN_MIME_TYPE, "text/markdown", "text/plain"}
    assert bundle[RUN_MIME_TYPE]["view"]["answer"] == "Paris."
    assert nb.cells[3].source == "**Assistant:**\n\nParis."
    approval = nb.cells[5].outputs[0]["data"][RUN_MIME_TYPE]["view"]["ask"]
    assert approval["kind"] == "approval" and approval["detail"]["command"] == "echo hi"
    assert "Waiting for an answer" in nb.cells[6].source
    with pytest.raises(MagicUsageError):
        run_command("export", {})
    from jupyter_agent.base.errors import ConfigError

    with pytest.raises(ConfigError, match=".ipynb"):
        run_command(f"export {workspace / 'trip.txt'} --session trip", {})


def test_agents_lists_the_defined_agents(capsys: pytest.CaptureFixture[str]) -> None:
    assert "No agents defined" in agent("agents", capsys)
    Agent("analyst", tools=["read_file", "bash"], model="gpt-4.1-mini", description="Data work",
          intents=["tool_execution"])
    out = agent("agents", capsys)
    assert out.startswith("analyst: Data work  (model gpt-4.1-mini; tools read_file, bash;")
    assert "intents tool_execution" in out
    assert "sessions" in agent("help", capsys) and "export" in agent("help", capsys)


@pytest.fixture
def shell() -> Iterator[InteractiveShell]:
    ip = start_ipython() or get_ipython()
    assert ip is not None
    ip.run_cell("%load_ext jupyter_agent")
    yield ip
    ip.user_ns.pop("_agent_run", None)


def test_cells_use_the_current_session(shell: InteractiveShell, server: ScriptedOpenAI) -> None:
    server.enqueue(text("one"), text("two"))
    with capture_output():
        shell.run_cell("%agent session notes")
        r = shell.run_cell("%%chat\nRemember the number 7.")
        assert r.success, r.error_in_exec
        r = shell.run_cell("%%chat --session elsewhere\nHi")
        assert r.success, r.error_in_exec
    assert [m["content"] for m in stored_messages(default_store(), "notes")] == [
        "Remember the number 7.", "one"]
    assert len(stored_messages(default_store(), "elsewhere")) == 2


def test_a_toolloop_cell_waiting_for_approval_says_how_to_answer(
        shell: InteractiveShell, server: ScriptedOpenAI, workspace: Path) -> None:
    server.enqueue(tool_calls([call("bash", {"command": "echo hi"}, id="b1")]), text("denied"))
    with capture_output() as cap:
        r = shell.run_cell("%%toolloop --tools bash --session cells\nSay hi")
    assert r.success, r.error_in_exec
    run = shell.user_ns["_agent_run"]
    assert run.status == "ask"
    # The hint is a display under the run (so it can be cleared once the card is answered).
    hints = [o.data.get("text/plain", "") for o in cap.outputs]
    assert any(f"%agent resume {run.run_id} --option N" in h for h in hints)
    with capture_output() as cap:
        r = shell.run_cell(f"%agent resume {run.run_id} --option 3")
    assert r.success, r.error_in_exec
    assert shell.user_ns["_agent_run"].status == "done"
    assert shell.user_ns["_agent_run"].answer == "denied"
    # Its own cell says what it resumed and how that ended (headless, nothing else is there).
    assert cap.stdout == (f"Resumed run {run.run_id} with option 3: it finished (its card, in "
                          "the cell that asked, shows the rest).\n")
