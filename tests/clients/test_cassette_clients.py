"""Record and replay as wrappers: answers travel as an answer source / answer log, a cell's
own --record/--replay client keeps its cassette across the click that resumes it, and the
hostile cases (a tampered cassette, a dropped stream, concurrent calls) stay safe."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.agents.held import HELD
from jupyter_agent.agents.pending import load_pending
from jupyter_agent.agents.plan.agent import plan
from jupyter_agent.agents.resume import Answer, resume
from jupyter_agent.base import config
from jupyter_agent.base.errors import ResumeError
from jupyter_agent.clients.cassette import Cassette, NoRecordingError
from jupyter_agent.clients.factory import client_for
from jupyter_agent.clients.failover import clear_marks
from jupyter_agent.clients.record import RecordingClient
from jupyter_agent.clients.replay import replay_client
from jupyter_agent.clients.turn_client import bind_client
from jupyter_agent.llm.client import OpenAIClient, RetryPolicy
from jupyter_agent.llm.profiles import BUILTIN_PROFILES, ModelProfile, register_profile
from jupyter_agent.llm.types import ChatRequest
from jupyter_agent.replay import go_live, load_cassette, start
from jupyter_agent.replay.mode import cell_client
from jupyter_agent.session import default_store
from tests.fakes.openai_server import ScriptedOpenAI, call, disconnect, error, text, tool_calls

pytestmark = pytest.mark.timeout(60)

ASK = {"reason": "The format decides the whole report.", "blockerType": "ambiguous_goal",
       "question": "Which format should the report use?", "options": ["Markdown", "HTML", "PDF"]}
TASK = "Write a short report about apples."
KEY = "sk-test-key-0123456789"  # the ``server`` fixture's key


@pytest.fixture(autouse=True)
def _live_afterwards() -> Iterator[None]:
    yield
    from jupyter_agent.clients.cassettes import forget_cassettes

    go_live()
    forget_cassettes()
    HELD.clear()



def _ask_then_answer(server: ScriptedOpenAI) -> None:
    server.enqueue(tool_calls([call("ask_agent", ASK)]), text("I will write it in HTML."))


def test_a_cells_own_recording_keeps_the_click_that_comes_after_the_cell(
        server: ScriptedOpenAI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        offline: Any) -> None:
    """``--record`` in a live process: the run suspends, the cell ends, a click resumes it.
    The click must go into that cell's cassette (the process is live, so nothing but the
    cell's client knows about the cassette), and the cell's ``--replay`` answers it again."""
    monkeypatch.chdir(tmp_path)
    _ask_then_answer(server)
    # No history: the cell's runs share the real session (no scratch store in a live process).
    run = plan(TASK, client=cell_client("record", None), history=0)
    assert run.status == "ask" and config.settings.cassette_mode == "live"
    done = resume(run.run_id, Answer("option", option_index=2), run=run,
                  expected_call_id=run.pending.call_id)
    assert done.status == "done"
    saved = load_cassette(tmp_path / "jupyter-agent.cassette.json")
    assert [(a.how, a.option_index, a.via) for a in saved.answers] == [("option", 2, "click")]
    assert len(saved.interactions) == 2
    offline()

    replayed = plan(TASK, client=cell_client("replay", None), history=0)
    assert replayed.status == "done" and replayed.answer == "I will write it in HTML."
    answered = [e for e in replayed.events_json() if e["type"] == "ask_answered"]
    assert [(a["answer"], a["option_index"]) for a in answered] == [("HTML", 2)]
    assert len(server.requests) == 2  # the replay sent nothing
    assert len(HELD) == 0  # nothing waits any more, so no client is held


def test_a_tampered_answer_in_a_cassette_loses_nothing(
        server: ScriptedOpenAI, tmp_path: Path, offline: Any) -> None:
    """A cassette whose recorded click names option 7 of 3: the replay stops with one clear
    error, the question stays waiting, and a real answer still finishes the run."""
    path = tmp_path / "plan.cassette.json"
    _ask_then_answer(server)
    start("record", path)
    run = plan(TASK)
    resume(run.run_id, Answer("option", option_index=2), run=run,
           expected_call_id=run.pending.call_id)
    go_live()
    data = json.loads(path.read_text(encoding="utf-8"))
    data["answers"][0]["option_index"] = 7
    path.write_text(json.dumps(data), encoding="utf-8")
    offline()

    start("replay", path)
    with pytest.raises(ResumeError, match="between 1 and 3; nothing changed"):
        plan(TASK)
    (waiting,) = default_store().list_pending()
    assert load_pending(waiting.pending).card.question == ASK["question"]
    done = resume(waiting.run_id, Answer("option", option_index=2))  # the replay client kept
    assert done.status == "done" and done.answer == "I will write it in HTML."
    assert len(server.requests) == 2


@pytest.fixture
def two_profiles() -> Iterator[None]:
    register_profile(ModelProfile(name="primary", model="model-a"))
    register_profile(ModelProfile(name="backup", model="model-b"))
    config.settings.fallback_models = ["backup"]
    clear_marks()
    yield
    clear_marks()
    BUILTIN_PROFILES.pop("primary", None)
    BUILTIN_PROFILES.pop("backup", None)


def test_a_recording_with_fallback_profiles_keeps_its_answers(
        server: ScriptedOpenAI, tmp_path: Path, offline: Any, two_profiles: None,
        fast_retries: None) -> None:
    """Record mode with a failover over two profiles: the primary fails, the backup answers,
    and the answer to its question still goes into the cassette (the failover belongs to the
    recording like its profiles' clients do), so the replay runs through without anyone."""
    replies = iter([tool_calls([call("ask_agent", ASK)]), text("HTML it is.")])
    server.default = lambda body: (error(500, "primary is down") if body["model"] == "model-a"
                                   else next(replies))
    path = tmp_path / "fo.cassette.json"
    start("record", path)
    assert bind_client(client_for("primary")).answer_log is not None
    run = plan(TASK, model="primary")
    assert run.status == "ask"
    done = resume(run.run_id, Answer("option", option_index=2), run=run,
                  expected_call_id=run.pending.call_id)
    assert done.status == "done" and default_store().list_turns("default")[-1].profile == "backup"
    go_live()
    assert [(a.option_index, a.via) for a in load_cassette(path).answers] == [(2, "click")]
    offline()
    clear_marks()
    sent = len(server.requests)

    start("replay", path)
    replayed = plan(TASK, model="primary")
    assert replayed.status == "done" and replayed.answer == "HTML it is."
    assert len(server.requests) == sent


def test_a_stream_dropped_mid_answer_records_only_the_attempt_that_answered(
        server: ScriptedOpenAI) -> None:
    server.enqueue(disconnect(after_chunks=2), text("The whole answer, at last."))
    base = OpenAIClient("gpt-4.1-mini", api_key=KEY, base_url=server.base_url,
                        retry=RetryPolicy(2, 0.001, 0.002))
    cassette = Cassette()
    recorder = RecordingClient(base, cassette)
    deltas: list[tuple[str, Any]] = []
    req = ChatRequest(model="gpt-4.1-mini", messages=[{"role": "user", "content": "hi"}])
    resp = recorder.complete(req, lambda kind, data: deltas.append((kind, data)))

    assert resp.text == "The whole answer, at last." and len(server.requests) == 2
    assert ("reset", {}) in deltas  # the partial round was withdrawn live
    (item,) = cassette.interactions
    assert item.error is None and item.chunks is not None
    replayed = replay_client("gpt-4.1-mini", cassette).complete(req)
    assert replayed.text == resp.text and replayed.usage == resp.usage


def test_concurrent_calls_through_one_recording_client_do_not_mix(
        server: ScriptedOpenAI) -> None:
    """Parallel tools may call one recording client at once: each recorded request keeps the
    answer it got, so each replays to what the live call returned."""
    server.default = lambda body: text("echo: " + body["messages"][-1]["content"])
    base = OpenAIClient("gpt-4.1-mini", api_key=KEY, base_url=server.base_url)
    cassette = Cassette()
    recorder = RecordingClient(base, cassette)
    prompts = [f"question {i}" for i in range(8)]
    live: dict[str, str] = {}

    def ask(prompt: str) -> None:
        req = ChatRequest(model="gpt-4.1-mini", messages=[{"role": "user", "content": prompt}])
        live[prompt] = recorder.complete(req).text

    threads = [threading.Thread(target=ask, args=(p,)) for p in prompts]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(cassette.interactions) == len(prompts)
    replay = replay_client("gpt-4.1-mini", cassette)
    for p in prompts:
        req = ChatRequest(model="gpt-4.1-mini", messages=[{"role": "user", "content": p}])
        assert replay.complete(req).text == live[p] == f"echo: {p}"


def test_an_unrecorded_request_fails_loudly_and_a_recorded_error_fails_the_same_way() -> None:
    """A replay never answers from a wrong recording and never goes to the network: a miss
    raises, a recorded HTTP error comes back as that error (not retried)."""
    cassette = Cassette()
    body = {"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": "hi"}],
            "stream": True, "stream_options": {"include_usage": True}}
    cassette.add(body, error="HTTP 400: This model does not exist.", status_code=400)
    replay = replay_client("gpt-4.1-mini", cassette)
    resp = replay.complete(ChatRequest(model="gpt-4.1-mini",
                                       messages=[{"role": "user", "content": "hi"}]))
    assert resp.error == "HTTP 400: This model does not exist." and resp.status_code == 400
    with pytest.raises(NoRecordingError, match="messages\\[0\\].content differs"):
        replay.complete(ChatRequest(model="gpt-4.1-mini",
                                    messages=[{"role": "user", "content": "hello"}]))
