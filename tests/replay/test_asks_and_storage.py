"""Answers to asks are recorded and replayed; cassettes in notebook metadata; per-cell flags."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.testing.globalipapp import start_ipython
from IPython.utils.capture import capture_output

from jupyter_agent.agents.plan.agent import plan
from jupyter_agent.agents.resume import Answer, resume
from jupyter_agent.clients.replay import CassetteTransport
from jupyter_agent.llm.client import OpenAIClient
from jupyter_agent.llm.types import ChatRequest
from jupyter_agent.replay import NoRecordingError, go_live, load_cassette, replay_client, start
from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls
from tests.replay.conftest import comparable

ASK = {"reason": "The format decides the whole report.", "blockerType": "ambiguous_goal",
       "question": "Which format should the report use?", "options": ["Markdown", "HTML", "PDF"]}
TASK = "Write a short report about apples."


def _script(server: ScriptedOpenAI) -> None:
    server.enqueue(tool_calls([call("ask_agent", ASK)]), text("I will write it in HTML."))


def test_a_clicked_answer_is_recorded_and_answered_from_the_cassette(
        server: ScriptedOpenAI, tmp_path: Path, offline: Any) -> None:
    _script(server)
    start("record", tmp_path / "plan.cassette.json")
    run = plan(TASK)
    assert run.status == "ask"
    # A click on option 2 (the widget passes the call id it shows).
    run = resume(run.run_id, Answer("option", option_index=2), run=run,
                 expected_call_id=run.pending.call_id)
    recorded = run.events_json()
    go_live()
    offline()

    start("replay", tmp_path / "plan.cassette.json")
    replayed = plan(TASK)  # headless: nobody clicks, the cassette answers

    assert replayed.status == "done" and replayed.answer == "I will write it in HTML."
    assert comparable(replayed.events_json()) == comparable(recorded)
    answered = [e for e in replayed.events_json() if e["type"] == "ask_answered"]
    assert answered[0]["answer"] == "HTML" and answered[0]["option_index"] == 2


def test_an_answer_given_by_a_cell_is_given_again_by_that_cell(
        server: ScriptedOpenAI, tmp_path: Path, offline: Any) -> None:
    _script(server)
    start("record", tmp_path / "plan.cassette.json")
    run = plan(TASK)
    resume(None, Answer("option", option_index=3))  # `%agent resume --option 3`
    cassette = load_cassette(tmp_path / "plan.cassette.json")
    assert [(a.how, a.option_index, a.via) for a in cassette.answers] == [("option", 3, "code")]
    go_live()
    offline()

    start("replay", tmp_path / "plan.cassette.json")
    replayed = plan(TASK)
    assert replayed.status == "ask"  # left for the notebook's own `%agent resume` cell
    done = resume(None, Answer("option", option_index=3))
    assert done.status == "done" and done.answer == "I will write it in HTML."
    assert run.run_id != done.run_id


def test_a_cassette_in_notebook_metadata(server: ScriptedOpenAI, tmp_path: Path,
                                         offline: Any) -> None:
    path = tmp_path / "nb.ipynb"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("%%chat\nHello")])
    nbformat.write(nb, str(path))
    server.enqueue(text("Hi there."))
    start("record", path)
    from jupyter_agent.agents.chat import chat

    chat("Hello", history=0)
    go_live()
    offline()

    saved = nbformat.read(str(path), as_version=4)
    nbformat.validate(saved)
    assert saved.cells[0].source == "%%chat\nHello"
    assert len(saved.metadata["jupyter_agent"]["cassette"]["interactions"]) == 1
    start("replay", path)
    assert chat("Hello", history=0).answer == "Hi there."


@pytest.fixture
def ip() -> Iterator[InteractiveShell]:
    """The test session's IPython shell (shared with other test modules), markdown output."""
    shell = start_ipython() or InteractiveShell.instance()
    assert shell.run_cell("%load_ext jupyter_agent").success
    shell.run_cell("%config AgentMagics.widgets = False")
    yield shell
    shell.run_cell("%config AgentMagics.widgets = True")
    shell.user_ns.pop("out", None)


def test_per_cell_record_and_replay_flags(ip: InteractiveShell, server: ScriptedOpenAI,
                                          tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          offline: Any) -> None:
    monkeypatch.chdir(tmp_path)
    server.enqueue(text("Recorded answer."))
    with capture_output():
        first = ip.run_cell("%%chat --record --no-history -o out\nA question")
    assert first.success and ip.user_ns["out"] == "Recorded answer."
    assert Path("jupyter-agent.cassette.json").exists()  # the default cassette, here
    offline()
    with capture_output() as cap:
        again = ip.run_cell("%%chat --replay --no-history -o out\nA question")
    assert again.success, cap.stderr
    assert ip.user_ns["out"] == "Recorded answer." and len(server.requests) == 1
    with capture_output() as cap:
        ip.run_cell("%%chat --replay --no-history\nAnother question")
    assert "No recording for this request: messages[0].content differs" in cap.stderr


def test_agent_record_replay_live_commands(ip: InteractiveShell, server: ScriptedOpenAI,
                                           tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           offline: Any) -> None:
    monkeypatch.chdir(tmp_path)
    server.enqueue(text("One."))
    with capture_output() as cap:
        ip.run_cell("%agent record demo.cassette.json --model scripted-model")
        ip.run_cell("%%chat\nCount")
        ip.run_cell("%agent live")
    assert "Recording model calls (scripted-model)" in cap.stdout
    assert "1 call(s) in demo.cassette.json" in cap.stdout
    offline()
    with capture_output() as cap:
        ip.run_cell("%agent replay demo.cassette.json")
        ip.run_cell("%agent cassette")
        ok = ip.run_cell("%%chat -o out\nCount")
    assert ok.success, cap.stderr
    assert "Replaying 1 recorded model call(s) of scripted-model from demo.cassette.json" in cap.stdout
    assert "replay: 1 recorded model call(s)" in cap.stdout
    assert ip.user_ns["out"] == "One."
    assert str(tmp_path) not in cap.stdout


def test_replaying_an_empty_cassette_is_refused(ip: InteractiveShell, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with capture_output() as cap:
        result = ip.run_cell("%agent replay nothing.cassette.json")
    assert not result.success
    assert "Nothing recorded in nothing.cassette.json" in cap.stderr


def test_a_replay_client_is_the_production_client_without_key_or_network(
        tmp_path: Path) -> None:
    """A replay is the regular client over a cassette transport: built without a key (none
    is set here), it answers a request it has no recording for with the miss, never a call."""
    replay = replay_client("gpt-4.1-mini", load_cassette(tmp_path / "none.json"))
    assert isinstance(replay, OpenAIClient) and isinstance(replay.transport, CassetteTransport)
    with pytest.raises(NoRecordingError, match="the cassette in none.json is empty"):
        replay.complete(ChatRequest(model="gpt-4.1-mini",
                                    messages=[{"role": "user", "content": "hi"}]))
