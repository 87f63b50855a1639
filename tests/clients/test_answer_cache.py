"""The answer cache (docs/behaviour.md §10.14): an identical request is answered from disk with
no call; nothing else ever is. A cache file edited by hand is ignored, never trusted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from jupyter_agent import chat as _chat
from jupyter_agent.clients.cache import cache_dir, cache_stats, clear_cache
from jupyter_agent.clients.factory import clear_client_cache
from tests.fakes.openai_server import ScriptedOpenAI, text

pytestmark = pytest.mark.timeout(60)

KEY = "sk-test-key-0123456789"


def chat(prompt: str, **options: object) -> Any:
    """A chat with no session history: the same prompt is then the same request."""
    return _chat(prompt, history=0, **options)


def _entries() -> list[Path]:
    return sorted(cache_dir().glob("*/*.json"))


def test_an_identical_request_is_answered_from_the_cache(server: ScriptedOpenAI) -> None:
    server.default = text("Paris.")
    first = chat("Capital of France?", cache=True, model="gpt-4.1-mini")
    second = chat("Capital of France?", cache=True, model="gpt-4.1-mini")
    assert len(server.requests) == 1  # the second sent nothing
    assert second.answer == first.answer == "Paris." and second.status == "done"
    assert second.cost == 0.0 and first.cost > 0
    f = second.view["footer"]
    assert f["cached"] == 1 and f["saved"] == pytest.approx(first.cost)
    assert "1 cached (saved $" in second._repr_markdown_()
    assert cache_stats().hits == 1
    # Anything different is another request: a word, the temperature, the model, no cache.
    chat("Capital of Spain?", cache=True, model="gpt-4.1-mini")
    chat("Capital of France?", cache=True, model="gpt-4.1-mini", temperature=0.5)
    chat("Capital of France?", cache=True, model="gpt-4.1")
    chat("Capital of France?", model="gpt-4.1-mini")
    assert len(server.requests) == 5


def test_the_schema_is_part_of_the_request(server: ScriptedOpenAI) -> None:
    class A(BaseModel):
        a: int

    class B(BaseModel):
        b: int

    server.default = text('{"a": 1, "b": 1}')
    chat("n?", cache=True, output=A)
    chat("n?", cache=True, output=B)
    chat("n?", cache=True, output=A)
    assert len(server.requests) == 2


def test_never_across_keys_or_base_urls(server: ScriptedOpenAI,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    server.default = text("from the first key")
    chat("Hi.", cache=True)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-another-key-9876543210")
    clear_client_cache()
    server.default = text("from the second key")
    assert chat("Hi.", cache=True).answer == "from the second key"
    with ScriptedOpenAI() as other:
        other.default = text("from another server")
        monkeypatch.setenv("OPENAI_BASE_URL", other.base_url)
        clear_client_cache()
        assert chat("Hi.", cache=True).answer == "from another server"
        assert len(other.requests) == 1
    assert len(server.requests) == 2


def test_no_entry_holds_the_key_or_the_prompt(server: ScriptedOpenAI) -> None:
    server.default = text(f"the key is {KEY}")
    chat("My private question about payroll.", cache=True)
    (entry,) = _entries()
    raw = entry.read_text()
    assert KEY not in raw and "payroll" not in raw and "[redacted]" in raw


def test_the_setting_turns_it_on(server: ScriptedOpenAI) -> None:
    from jupyter_agent.base import config

    server.default = text("ok")
    config.settings.cache = True
    chat("Hi.")
    chat("Hi.")
    assert len(server.requests) == 1
    assert chat("Hi.", cache=False).answer == "ok" and len(server.requests) == 2


@pytest.mark.parametrize("edit", ["corrupt", "shape", "list", "answer", "swap", "huge", "mac"])
def test_a_file_edited_by_hand_is_ignored(server: ScriptedOpenAI, edit: str) -> None:
    server.enqueue(text("A"), text("B"))
    chat("question A", cache=True)
    chat("question B", cache=True)
    a, b = _entries()
    answers = {json.loads(p.read_text())["answer"]["text"]: p for p in (a, b)}
    pa, pb = answers["A"], answers["B"]
    if edit == "corrupt":
        pa.write_text('{"format": 1, "digest": ')
    elif edit == "shape":
        pa.write_text(json.dumps({"format": 1, "digest": pa.stem, "answer": "A"}))
    elif edit == "list":
        pa.write_text("[1, 2, 3]")
    elif edit == "answer":  # the text changed, the MAC kept
        entry = json.loads(pa.read_text())
        entry["answer"]["text"] = "forged"
        pa.write_text(json.dumps(entry))
    elif edit == "swap":  # B's entry saved under A's name
        pa.write_text(pb.read_text())
    elif edit == "huge":
        pa.write_text(" " * (16 * 1024 * 1024 + 1))
    elif edit == "mac":  # an entry written for another key: its MAC cannot match
        entry = json.loads(pa.read_text())
        entry["mac"] = "0" * 64
        pa.write_text(json.dumps(entry))
    server.enqueue(text("A again"))
    run = chat("question A", cache=True)
    assert run.status == "done" and run.answer == "A again"  # asked again, never B's answer
    assert len(server.requests) == 3 and cache_stats().ignored >= 1
    assert chat("question A", cache=True).answer == "A again"  # rewritten whole
    assert len(server.requests) == 3


def test_clear_and_agent_cache(server: ScriptedOpenAI, capsys: pytest.CaptureFixture[str]) -> None:
    from jupyter_agent.edge.commands import run_command

    server.default = text("ok")
    chat("Hi.", cache=True)
    chat("Hi.", cache=True)
    run_command("cache", {})
    out = capsys.readouterr().out
    assert "1 entries" in out and "1 hits" in out and "Default: off" in out
    run_command("cache clear", {})
    assert "1 entries removed" in capsys.readouterr().out
    assert _entries() == [] and clear_cache() == 0
    chat("Hi.", cache=True)
    assert len(server.requests) == 2


def test_a_failed_call_is_not_cached(server: ScriptedOpenAI, fast_retries: None) -> None:
    from tests.fakes.openai_server import error

    server.enqueue(error(400, "bad"), text("fine"))
    assert chat("Hi.", cache=True).status == "error"
    assert chat("Hi.", cache=True).answer == "fine"
    assert _entries() and len(server.requests) == 2


def test_entries_are_private(server: ScriptedOpenAI) -> None:
    server.default = text("ok")
    chat("Hi.", cache=True)
    (entry,) = _entries()
    assert entry.stat().st_mode & 0o777 == 0o600
    assert cache_dir().stat().st_mode & 0o777 == 0o700
    assert entry.parent.stat().st_mode & 0o777 == 0o700
