"""Replay that forgives: the other option, a cell run again, a kernel restart.

Real parts: the real client over HTTP to the scripted server while recording, the cassette
transport while replaying, SQLite stores.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.agents.chat import chat
from jupyter_agent.agents.plan.agent import plan
from jupyter_agent.agents.resume import Answer, resume
from jupyter_agent.base.errors import ResumeError
from jupyter_agent.replay import NoRecordingError, go_live, start
from jupyter_agent.replay.mode import replay_store_dir
from jupyter_agent.session import default_store
from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls

ASK = {"reason": "The format decides the whole report.", "blockerType": "ambiguous_goal",
       "question": "Which format should the report use?", "options": ["Markdown", "HTML", "PDF"]}
TASK = "Write a short report about apples."



def _record_ask(server: ScriptedOpenAI, cassette: Path) -> None:
    server.enqueue(tool_calls([call("ask_agent", ASK)]), text("I will write it in HTML."))
    start("record", cassette)
    plan(TASK)
    resume(None, Answer("option", option_index=2))  # the notebook's `%agent resume --option 2`
    go_live()


def test_another_option_in_replay_is_refused_once_and_the_question_still_waits(
        server: ScriptedOpenAI, tmp_path: Path, offline: Any) -> None:
    cassette = tmp_path / "plan.cassette.json"
    _record_ask(server, cassette)
    offline()
    start("replay", cassette)
    run = plan(TASK)
    assert run.status == "ask"

    for other in (Answer("option", option_index=1), Answer("other", text="LaTeX"),
                  Answer("dismissed")):
        with pytest.raises(ResumeError) as exc:
            resume(run.run_id, other, run=run, expected_call_id=run.pending.call_id)
        message = str(exc.value)
        assert "\n" not in message and "option 2" in message and "%agent live" in message
    # Nothing changed: the run still waits, with no error, and the recorded answer goes on.
    assert [r.run_id for r in default_store().list_pending()] == [run.run_id]
    assert run.status == "ask" and not run.error
    done = resume(run.run_id, Answer("option", option_index=2), run=run,
                  expected_call_id=run.pending.call_id)
    assert done.status == "done" and done.answer == "I will write it in HTML."
    go_live()


def test_a_cell_run_again_gets_its_own_recording_despite_the_longer_history(
        server: ScriptedOpenAI, tmp_path: Path, offline: Any) -> None:
    cassette = tmp_path / "chat.cassette.json"
    server.enqueue(text("Apples are red."), text("Pears are green."))
    start("record", cassette)
    chat("Tell me about apples.")
    chat("Tell me about pears.")
    go_live()
    offline()

    start("replay", cassette)
    assert chat("Tell me about apples.").answer == "Apples are red."
    assert chat("Tell me about pears.").answer == "Pears are green."
    # Re-running the second cell: the session now holds both turns, the recording only one.
    assert chat("Tell me about pears.").answer == "Pears are green."
    assert chat("Tell me about apples.").answer == "Apples are red."
    # A prompt never recorded still misses, with one line that says what to do.
    with pytest.raises(NoRecordingError) as exc:
        _miss()
    assert "\n" not in str(exc.value) and "Restart Kernel and Run All" in str(exc.value)
    go_live()


def _miss() -> None:
    from jupyter_agent.clients.cassettes import active_cassette

    active_cassette().find({"model": "x", "messages": [{"role": "user", "content": "plums"}]})


def test_the_replay_store_survives_a_restart_only_while_a_question_waits(
        server: ScriptedOpenAI, tmp_path: Path, offline: Any) -> None:
    cassette = tmp_path / "plan.cassette.json"
    _record_ask(server, cassette)
    offline()
    start("replay", cassette)
    waiting = plan(TASK)
    assert waiting.status == "ask"
    where = replay_store_dir(cassette)
    assert (where / "store.sqlite3").exists()
    go_live()  # what a restart leaves: the store file, not the process state

    start("replay", cassette)  # the notebook's `%agent replay` cell, in the new kernel
    assert [r.run_id for r in default_store().list_pending()] == [waiting.run_id]
    done = resume(None, Answer("option", option_index=2))
    assert done.status == "done" and done.answer == "I will write it in HTML."
    go_live()

    start("replay", cassette)  # Run All again: nothing waits, so the store starts empty
    assert default_store().list_pending() == [] and default_store().list_runs() == []
    assert plan(TASK).status == "ask"
    go_live()
