"""Record a run against the scripted server, replay it with no key and no network."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent import tool
from jupyter_agent.agents.chat import chat
from jupyter_agent.agents.toolloop import toolloop
from jupyter_agent.base import config
from jupyter_agent.replay import NoRecordingError, go_live, load_cassette, start
from tests.fakes.openai_server import ScriptedOpenAI, call, error, text, tool_calls
from tests.replay.conftest import comparable

KEY = "sk-test-key-0123456789"  # the ``server`` fixture's key


def test_a_recorded_chat_replays_without_key_or_server(server: ScriptedOpenAI, tmp_path: Path,
                                                       offline: Any) -> None:
    start("record", tmp_path / "chat.cassette.json")
    server.enqueue(text("Hello from the model."))
    recorded = chat("Say hello")
    go_live()
    offline()

    start("replay", tmp_path / "chat.cassette.json")
    replayed = chat("Say hello")

    assert replayed.answer == recorded.answer == "Hello from the model."
    assert len(server.requests) == 1  # the replay sent nothing
    assert comparable(replayed.events_json()) == comparable(recorded.events_json())


def test_replay_fidelity_of_a_tool_loop(server: ScriptedOpenAI, tmp_path: Path,
                                        offline: Any) -> None:
    """Parallel tools, a failing tool, reasoning, streamed arguments: the same event log."""

    @tool
    def weather(city: str) -> str:
        """The weather in a city."""
        return {"Paris": "sunny, 21 °C", "Oslo": "rain, 9 °C"}[city]

    @tool
    def forecast(city: str) -> str:
        """Tomorrow's weather."""
        raise RuntimeError(f"no forecast service for {city}")

    server.enqueue(
        tool_calls([call("weather", {"city": "Paris"}), call("weather", {"city": "Oslo"}),
                    call("forecast", {"city": "Oslo"})], reasoning="Look both up at once."),
        text("Paris is sunny (21 °C), Oslo rainy (9 °C); no forecast today.",
             reasoning="Both answered."),
    )
    start("record", tmp_path / "tools.cassette.json")
    recorded = toolloop("Weather in Paris and Oslo, and tomorrow in Oslo?", parallel=True)
    go_live()
    offline()
    start("replay", tmp_path / "tools.cassette.json")
    replayed = toolloop("Weather in Paris and Oslo, and tomorrow in Oslo?", parallel=True)

    a, b = comparable(recorded.events_json()), comparable(replayed.events_json())
    assert a == b
    types = [e["type"] for e in b]
    assert types.count("text_delta") > 1 and "reasoning_delta" in types  # streamed, chunk by chunk
    returned = [e for e in b if e["type"] == "tool_returned"]
    assert [r["name"] for r in returned] == ["weather", "weather", "forecast"]
    assert returned[2]["error"] and "no forecast service" in returned[2]["output"]
    assert replayed.messages == recorded.messages
    assert replayed.answer == recorded.answer and replayed.status == "done"
    assert (replayed.input_tokens, replayed.output_tokens) == (recorded.input_tokens,
                                                               recorded.output_tokens)


def test_a_request_with_no_recording_names_the_first_difference(server: ScriptedOpenAI,
                                                                 tmp_path: Path,
                                                                 offline: Any) -> None:
    server.enqueue(text("Four."))
    start("record", tmp_path / "c.json")
    chat("What is 2 + 2?", history=0)
    go_live()
    offline()
    start("replay", tmp_path / "c.json")

    with pytest.raises(NoRecordingError) as exc:
        chat("What is 2 + 3?", history=0)

    assert str(exc.value).startswith(
        'No recording for this request: messages[0].content differs ("What is 2 + 3?" vs '
        '"What is 2 + 2?")')
    assert "c.json" in str(exc.value) and str(tmp_path) not in str(exc.value)


def test_a_changed_parameter_is_named_too(server: ScriptedOpenAI, tmp_path: Path) -> None:
    server.enqueue(text("Four."))
    start("record", tmp_path / "c.json")
    chat("What is 2 + 2?", history=0, temperature=0.2)
    start("replay", tmp_path / "c.json")

    with pytest.raises(NoRecordingError, match=r"temperature differs \(0\.7 vs 0\.2\)"):
        chat("What is 2 + 2?", history=0, temperature=0.7)


def test_the_key_is_never_in_a_cassette(server: ScriptedOpenAI, tmp_path: Path) -> None:
    config.settings.api_key = "sk-configured-key-9876543210"  # type: ignore[assignment]
    server.expected_key = None
    server.enqueue(text("ok"), text("ok"))
    path = tmp_path / "c.json"
    start("record", path)
    chat("Hello", history=0)
    chat(f"My key is {KEY}, keep it safe.", history=0)  # pasted into a prompt
    go_live()

    stored = path.read_text(encoding="utf-8")
    assert "sk-configured-key-9876543210" not in stored and KEY not in stored
    assert server.base_url not in stored  # nor the base URL
    cassette = load_cassette(path)
    assert len(cassette.interactions) == 2
    assert all("api_key" not in json.dumps(i.request) for i in cassette.interactions)


def test_non_streamed_calls_and_errors_replay_too(server: ScriptedOpenAI, tmp_path: Path,
                                                   offline: Any, fast_retries: None) -> None:
    server.enqueue(text("Not streamed."), error(400, "This model does not exist."))
    start("record", tmp_path / "c.json")
    plain = chat("One", history=0, stream=False)
    failed = chat("Two", history=0)
    go_live()
    offline()
    start("replay", tmp_path / "c.json")

    assert chat("One", history=0, stream=False).answer == plain.answer == "Not streamed."
    again = chat("Two", history=0)
    assert failed.status == again.status == "error"
    assert again.error == failed.error and "This model does not exist." in (again.error or "")


def test_identical_requests_are_served_in_recorded_order(server: ScriptedOpenAI,
                                                         tmp_path: Path) -> None:
    server.enqueue(text("First."), text("Second."))
    start("record", tmp_path / "c.json")
    chat("Again?", history=0)
    chat("Again?", history=0)
    start("replay", tmp_path / "c.json")

    assert [chat("Again?", history=0).answer for _ in range(3)] == ["First.", "Second.",
                                                                    "Second."]


def test_recorded_timing_replays_the_same_run(server: ScriptedOpenAI, tmp_path: Path) -> None:
    server.enqueue(text("Slowly streamed.", delay=0.01, chunk_size=4))
    start("record", tmp_path / "c.json")
    recorded = chat("Hi", history=0)
    cassette = load_cassette(tmp_path / "c.json")
    chunks = cassette.interactions[0].chunks or []
    assert len(chunks) > 3 and chunks[-1].t >= chunks[0].t  # relative times kept, in order
    start("replay", tmp_path / "c.json", timing="recorded")
    assert comparable(chat("Hi", history=0).events_json()) == comparable(recorded.events_json())


def test_chunks_keep_the_wire_envelope(server: ScriptedOpenAI, tmp_path: Path) -> None:
    """Each chunk's repeated envelope (id, model, created…) is stored once and restored."""
    server.enqueue(text("Four words, four chunks.", chunk_size=5))
    start("record", tmp_path / "c.json")
    chat("Hi", history=0)
    item = load_cassette(tmp_path / "c.json").interactions[0]
    stored, wire = item.chunks or [], item.chunk_payloads()
    assert len(wire) == len(stored) > 4
    assert all(w["id"] == wire[0]["id"] and w["model"] == wire[0]["model"] for w in wire)
    assert all("id" not in c.data for c in stored[1:])  # stored once, on the first chunk
    assert "".join((w["choices"][0]["delta"].get("content") or "") for w in wire if w["choices"]) \
        == "Four words, four chunks."


def test_recording_into_a_notebook_that_does_not_exist_yet(server: ScriptedOpenAI,
                                                           tmp_path: Path) -> None:
    import nbformat

    server.enqueue(text("ok"))
    start("record", tmp_path / "new.ipynb")
    chat("Hi", history=0)
    nb = nbformat.read(str(tmp_path / "new.ipynb"), as_version=4)
    nbformat.validate(nb)
    assert len(nb.metadata["jupyter_agent"]["cassette"]["interactions"]) == 1
