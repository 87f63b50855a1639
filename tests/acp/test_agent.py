"""``python -m jupyter_agent.acp`` driven by the SDK's own client against the scripted model.

Each test spawns the real agent process with ``acp.spawn_agent_process`` (the whole environment
passed, as jupyter-ai does), the model being the scripted OpenAI server over real HTTP; every
raw JSON-RPC message the client receives is kept and scanned for the key.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

acp = pytest.importorskip("acp")

from acp import text_block  # noqa: E402
from acp.schema import (  # noqa: E402
    AllowedOutcome,
    DeniedOutcome,
    RequestPermissionResponse,
)

from tests.fakes.openai_server import ScriptedOpenAI, call, hang, text, tool_calls  # noqa: E402

KEY = "sk-acp-marker-5f3e9a1c7b2d4e6f"
REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.timeout(120)


class Recorder:
    """An ACP client: keeps every update and answers permissions as told."""

    def __init__(self, answers: list[str | None] | None = None) -> None:
        self.updates: list[Any] = []
        self.permissions: list[Any] = []
        self.answers = list(answers or [])
        self.raw: list[dict[str, Any]] = []
        self.on_permission: Callable[[], Awaitable[None]] | None = None

    async def request_permission(self, options: Any, session_id: str, tool_call: Any,
                                 **kw: Any) -> RequestPermissionResponse:
        self.permissions.append((options, tool_call))
        if self.on_permission is not None:
            await self.on_permission()
        choice = self.answers.pop(0) if self.answers else None
        if choice is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected",
                                                                option_id=choice))

    async def session_update(self, session_id: str, update: Any, **kw: Any) -> None:
        self.updates.append(update)

    def kinds(self) -> list[str]:
        return [u.session_update for u in self.updates]

    def text(self, kind: str = "agent_message_chunk") -> str:
        return "".join(u.content.text for u in self.updates if u.session_update == kind)

    def observe(self, event: Any) -> None:
        if event.direction.value == "incoming":  # what the agent sent
            self.raw.append(event.message)


def agent_env(server: ScriptedOpenAI, home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(OPENAI_API_KEY=KEY, OPENAI_BASE_URL=server.base_url,
               JUPYTER_AGENT_HOME=str(home),
               PYTHONPATH=os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p))
    return env


async def session(client: Recorder, env: dict[str, str], cwd: Path,
                  body: Callable[[Any, Any], Awaitable[Any]], *args: str) -> Any:
    async with acp.spawn_agent_process(client, sys.executable, "-m", "jupyter_agent.acp", *args,
                                       env=env, cwd=str(cwd),
                                       observers=[client.observe]) as (conn, proc):
        await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
        return await body(conn, proc)


def prompt(conn: Any, sid: str, words: str) -> Awaitable[Any]:
    return conn.prompt(session_id=sid, prompt=[text_block(words)])


def no_key(client: Recorder) -> None:
    blob = json.dumps(client.raw)
    assert client.raw and KEY not in blob and KEY[6:20] not in blob


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "home"
    h.mkdir()
    return h


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    w = tmp_path / "ws"
    w.mkdir()
    return w


def test_initialize_and_a_streamed_answer(home: Path, ws: Path) -> None:
    """Name, loadSession, modes; text and reasoning stream as chunks; end_turn."""
    with ScriptedOpenAI() as srv:
        srv.enqueue(text(f"Hello there, the key is {KEY}.", reasoning="thinking hard"))
        client = Recorder()

        async def body(conn: Any, proc: Any) -> Any:
            init = client.raw[0]["result"]
            new = await conn.new_session(cwd=str(ws), mcp_servers=[])
            res = await prompt(conn, new.session_id, "hi")
            return init, new, res

        init, new, res = asyncio.run(session(client, agent_env(srv, home), ws, body))
    assert init["agentInfo"]["name"] == "jupyter-agent"
    assert init["agentCapabilities"]["loadSession"] is True
    assert [m.id for m in new.modes.available_modes] == ["toolloop", "plan", "chat"]
    assert res.stop_reason == "end_turn"
    assert client.text().startswith("Hello there, the key is ")
    assert "thinking hard" in client.text("agent_thought_chunk")
    no_key(client)  # the model echoed the key: it reached the client masked


def test_context_blocks_of_a_prompt_reach_the_model_as_text(home: Path, ws: Path) -> None:
    """We announce embedded context: an embedded file brings its text, a link or an image
    its URI, a binary blob and an audio clip nothing; the blocks are joined in order."""
    with ScriptedOpenAI() as srv:
        srv.enqueue(text("Read."))
        client = Recorder()

        async def body(conn: Any, proc: Any) -> Any:
            sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
            return await conn.prompt(session_id=sid, prompt=[
                text_block("Summarise these."),
                acp.resource_block(acp.embedded_text_resource("file:///ws/notes.txt",
                                                              "alpha\nbeta")),
                acp.resource_link_block("spec", "file:///ws/spec.md"),
                acp.image_block("iVBORw0KGgo=", "image/png", uri="file:///ws/pic.png"),
                acp.image_block("iVBORw0KGgo=", "image/png"),
                acp.resource_block(acp.embedded_blob_resource("file:///ws/b.bin", "AAAA")),
                acp.audio_block("AAAA", "audio/wav"),
            ])

        res = asyncio.run(session(client, agent_env(srv, home), ws, body, "--mode", "chat"))
        user = [m for m in srv.requests[0]["messages"] if m["role"] == "user"]
    assert res.stop_reason == "end_turn"
    assert user[-1]["content"] == ("Summarise these.\nalpha\nbeta\nfile:///ws/spec.md\n"
                                   "file:///ws/pic.png")


def test_allow_once_runs_the_write_in_the_workspace(home: Path, ws: Path) -> None:
    """One permission request with the card's options in order; allow_once resumes the run
    through resume(): the file is written in cwd, and the tool call streams its states."""
    with ScriptedOpenAI() as srv:
        srv.enqueue(tool_calls([call("write_file", {"path": "a.txt", "content": "hi"},
                                     id="call_w1")]), text("Written."))
        client = Recorder(["allow_once"])

        async def body(conn: Any, proc: Any) -> Any:
            sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
            return await prompt(conn, sid, "write a.txt")

        res = asyncio.run(session(client, agent_env(srv, home), ws, body))
    assert res.stop_reason == "end_turn"
    assert (ws / "a.txt").read_text() == "hi"
    [(options, tool_call)] = client.permissions
    assert [(o.option_id, o.name, o.kind) for o in options] == [
        ("allow_once", "Allow once", "allow_once"),
        ("allow_always", "Allow for this session", "allow_always"),
        ("reject_once", "Deny", "reject_once")]
    assert tool_call.tool_call_id == "call_w1" and tool_call.kind == "edit"
    assert tool_call.content[0].type == "diff" and tool_call.content[0].new_text == "hi"
    calls = [u for u in client.updates if u.session_update in ("tool_call", "tool_call_update")]
    assert calls[0].session_update == "tool_call" and calls[0].tool_call_id == "call_w1"
    assert calls[0].kind == "edit" and calls[0].raw_input == {"path": "a.txt", "content": "hi"}
    assert [u.status for u in calls if u.tool_call_id == "call_w1"][-1] == "completed"
    assert "Written." in client.text()
    no_key(client)


def test_deny_and_cancelled_permission_never_write(home: Path, ws: Path) -> None:
    """reject_once and a cancelled request both deny: nothing written, the run goes on."""
    with ScriptedOpenAI() as srv:
        srv.enqueue(tool_calls([call("write_file", {"path": "x.txt", "content": "1"})]),
                    text("Denied, fine."),
                    tool_calls([call("write_file", {"path": "y.txt", "content": "2"})]),
                    text("Also fine."))
        client = Recorder(["reject_once", None])

        async def body(conn: Any, proc: Any) -> Any:
            sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
            return await prompt(conn, sid, "one"), await prompt(conn, sid, "two")

        first, second = asyncio.run(session(client, agent_env(srv, home), ws, body))
    assert first.stop_reason == second.stop_reason == "end_turn"
    assert not (ws / "x.txt").exists() and not (ws / "y.txt").exists()
    assert len(client.permissions) == 2
    assert "Also fine." in client.text()


def test_allow_always_asks_once_per_session(home: Path, ws: Path) -> None:
    """After "Allow for this session" the second write in the session runs without a request."""
    with ScriptedOpenAI() as srv:
        srv.enqueue(tool_calls([call("write_file", {"path": "a.txt", "content": "1"})]),
                    text("one"),
                    tool_calls([call("write_file", {"path": "b.txt", "content": "2"})]),
                    text("two"))
        client = Recorder(["allow_always"])

        async def body(conn: Any, proc: Any) -> Any:
            sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
            return await prompt(conn, sid, "first"), await prompt(conn, sid, "second")

        asyncio.run(session(client, agent_env(srv, home), ws, body))
    assert (ws / "a.txt").read_text() == "1" and (ws / "b.txt").read_text() == "2"
    assert len(client.permissions) == 1


def test_cancel_during_a_slow_model_reply(home: Path, ws: Path) -> None:
    """session/cancel while the model holds its reply: the prompt ends cancelled, promptly."""
    with ScriptedOpenAI() as srv:
        srv.enqueue(hang(60, then=text("too late")))
        client = Recorder()

        async def body(conn: Any, proc: Any) -> Any:
            sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
            task = asyncio.create_task(prompt(conn, sid, "slow please"))
            for _ in range(300):  # the request reached the model
                if srv.requests:
                    break
                await asyncio.sleep(0.05)
            await conn.cancel(session_id=sid)
            return await asyncio.wait_for(task, 30)  # generous: far below the 60 s hold

        res = asyncio.run(session(client, agent_env(srv, home), ws, body))
        srv.release_hangs()
    assert res.stop_reason == "cancelled"
    assert "too late" not in client.text()


def test_cancel_while_a_permission_is_open_denies(home: Path, ws: Path) -> None:
    """Stop with an approval open: the client answers cancelled, the write never happens."""
    with ScriptedOpenAI() as srv:
        srv.enqueue(tool_calls([call("write_file", {"path": "z.txt", "content": "1"})]),
                    text("after"))
        client = Recorder(["allow_once"])  # would allow, but the cancel comes first
        holder: dict[str, Any] = {}

        async def cancel_first() -> None:
            await holder["conn"].cancel(session_id=holder["sid"])

        client.on_permission = cancel_first

        async def body(conn: Any, proc: Any) -> Any:
            holder["conn"] = conn
            holder["sid"] = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
            return await prompt(conn, holder["sid"], "write")

        res = asyncio.run(session(client, agent_env(srv, home), ws, body))
    assert res.stop_reason == "cancelled"
    assert not (ws / "z.txt").exists()


def test_plan_mode_sends_plan_updates(home: Path, ws: Path) -> None:
    plan = {"updates": [{"action": "set_plan", "plan": {
        "task": "Count", "description": "count things",
        "steps": [{"id": "s1", "title": "Look", "description": "look around"},
                  {"id": "s2", "title": "Report", "description": "say it"}]}}]}
    with ScriptedOpenAI() as srv:
        srv.enqueue(tool_calls([call("update_plan", plan)]),
                    *[tool_calls([call("update_plan", {"updates": [
                        {"action": "update_step", "stepId": s, "status": "done",
                         "outputSummary": "did it"}]})]) for s in ("s1", "s2")],
                    text("All counted."))
        client = Recorder()

        async def body(conn: Any, proc: Any) -> Any:
            sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
            try:
                return await prompt(conn, sid, "count")
            except acp.RequestError as exc:
                return exc

        res = asyncio.run(session(client, agent_env(srv, home), ws, body, "--mode", "plan"))
        asked = [r["messages"][-1] for r in srv.requests]
    plans = [u for u in client.updates if u.session_update == "plan"]
    assert getattr(res, "stop_reason", None) == "end_turn", (res, [str(a)[:400] for a in asked][:3])
    assert plans and [e.content for e in plans[0].entries] == ["Look", "Report"]
    assert plans[-1].entries[0].status == "completed"
    assert not any(u.session_update == "tool_call" and u.title == "update_plan"
                   for u in client.updates)


def test_load_in_a_new_process_continues_the_session(home: Path, ws: Path) -> None:
    with ScriptedOpenAI() as srv:
        srv.enqueue(text("The answer is 42."), text("You asked about 42."))
        env = agent_env(srv, home)
        first = Recorder()

        async def one(conn: Any, proc: Any) -> Any:
            sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
            await prompt(conn, sid, "what is the answer?")
            return sid

        sid = asyncio.run(session(first, env, ws, one))
        second = Recorder()

        async def two(conn: Any, proc: Any) -> Any:
            await conn.load_session(cwd=str(ws), session_id=sid, mcp_servers=[])
            replayed = list(second.updates)
            await prompt(conn, sid, "what did I ask?")
            return replayed

        replayed = asyncio.run(session(second, env, ws, two))
        sent = srv.requests[-1]["messages"]
    assert [u.session_update for u in replayed] == ["user_message_chunk", "agent_message_chunk"]
    assert replayed[1].content.text == "The answer is 42."
    assert any(m.get("content") == "The answer is 42." for m in sent)  # history went along


def test_load_of_an_unknown_session_is_one_error_line(home: Path, ws: Path) -> None:
    with ScriptedOpenAI() as srv:
        client = Recorder()

        async def body(conn: Any, proc: Any) -> Any:
            with pytest.raises(acp.RequestError) as err:
                await conn.load_session(cwd=str(ws), session_id="nope", mcp_servers=[])
            return err.value

        err = asyncio.run(session(client, agent_env(srv, home), ws, body))
    assert "nope" in str(err.data) and "\n" not in str(err.data)


def test_model_error_is_a_masked_jsonrpc_error(home: Path, ws: Path) -> None:
    from tests.fakes.openai_server import error

    with ScriptedOpenAI() as srv:
        srv.enqueue(*[error(400, f"bad request for key {KEY}")] * 3)
        client = Recorder()

        async def body(conn: Any, proc: Any) -> Any:
            sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
            with pytest.raises(acp.RequestError) as err:
                await prompt(conn, sid, "hi")
            return err.value

        err = asyncio.run(session(client, agent_env(srv, home), ws, body))
    assert err.code == -32603
    no_key(client)


def test_stdout_is_protocol_only_and_eof_ends_the_process(home: Path, ws: Path) -> None:
    """A raw pipe: every stdout line is JSON-RPC, even when a tool prints; EOF exits."""
    with ScriptedOpenAI() as srv:
        srv.enqueue(text("fine"))
        lines = [
            {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}},
            {"jsonrpc": "2.0", "id": 1, "method": "session/new",
             "params": {"cwd": str(ws), "mcpServers": []}},
        ]
        # A stray print from another thread once the agent runs, and a chatty log level.
        stray = ("import runpy, threading; threading.Timer(0.5, print, ['stray print']).start();"
                 " runpy.run_module('jupyter_agent.acp', run_name='__main__', alter_sys=True)")
        proc = subprocess.Popen([sys.executable, "-c", stray, "--log-level", "DEBUG"], cwd=ws,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=agent_env(srv, home))
        assert proc.stdin is not None and proc.stdout is not None
        for x in lines:
            proc.stdin.write(json.dumps(x) + "\n")
        proc.stdin.flush()
        out = [json.loads(proc.stdout.readline()) for _ in lines]
        time.sleep(1.5)  # the stray print has happened
        proc.stdin.close()  # EOF: the agent ends
        rest = proc.stdout.read()
        proc.wait(60)
        assert proc.stderr is not None
        err = proc.stderr.read()
        proc.stderr.close()
        proc.stdout.close()
    assert "stray print" in err
    assert [m.get("id") for m in out] == [0, 1] and all(m["jsonrpc"] == "2.0" for m in out)
    assert rest == "" and proc.returncode == 0


def test_without_the_sdk_one_line_and_exit_2(tmp_path: Path) -> None:
    """A Python where ``acp`` cannot be imported: the install line, nothing else, exit 2."""
    block = tmp_path / "block"
    block.mkdir()
    (block / "acp.py").write_text("raise ImportError('no acp here')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join((str(block), str(REPO))))
    proc = subprocess.run([sys.executable, "-m", "jupyter_agent.acp"], capture_output=True,
                          text=True, env=env, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip() == 'ACP needs its SDK: pip install "jupyter-agent[acp]"'


def test_a_plan_question_ends_the_turn_and_the_next_prompt_answers_it(home: Path,
                                                                       ws: Path) -> None:
    """ask_agent: the turn ends as a numbered message; "2" picks option 2 for the model."""
    ask = {"reason": "need it", "blockerType": "ambiguous_goal", "question": "Which format?",
           "options": ["CSV", "JSON", "Parquet"]}
    with ScriptedOpenAI() as srv:
        srv.enqueue(tool_calls([call("ask_agent", ask)]), text("Going with JSON."))
        client = Recorder()

        async def body(conn: Any, proc: Any) -> Any:
            sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
            first = await prompt(conn, sid, "export the data")
            shown = client.text()
            second = await prompt(conn, sid, "2")
            return first, shown, second

        first, shown, second = asyncio.run(session(client, agent_env(srv, home), ws, body,
                                                   "--mode", "plan"))
        answered = srv.requests[-1]["messages"][-1]
    assert first.stop_reason == "end_turn" and second.stop_reason == "end_turn"
    assert "Which format?" in shown and "1. CSV" in shown and "2. JSON" in shown
    assert answered["role"] == "tool" and "JSON" in answered["content"]
    assert client.text().endswith("Going with JSON.")
    assert not client.permissions


def test_client_eof_with_a_permission_open_never_allows(home: Path, ws: Path) -> None:
    """The client dies while the agent waits on its permission: the process ends without
    going on; a new process loading the session dismisses that approval (denied)."""
    with ScriptedOpenAI() as srv:
        srv.enqueue(tool_calls([call("write_file", {"path": "gone.txt", "content": "1"})]),
                    text("Understood, not written."))
        env = agent_env(srv, home)
        client = Recorder()
        holder: dict[str, Any] = {}

        async def hang_up() -> None:
            holder["proc"].stdin.close()  # EOF to the agent, the request still open
            await asyncio.wait_for(holder["proc"].wait(), 30)

        client.on_permission = hang_up

        async def body(conn: Any, proc: Any) -> Any:
            holder["proc"] = proc
            sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
            task = asyncio.create_task(prompt(conn, sid, "write"))
            await asyncio.wait_for(proc.wait(), 60)
            task.cancel()
            return sid, proc.returncode

        sid, code = asyncio.run(session(client, env, ws, body))
        again = Recorder()

        async def reload(conn: Any, proc: Any) -> Any:
            await conn.load_session(cwd=str(ws), session_id=sid, mcp_servers=[])

        asyncio.run(session(again, env, ws, reload))
        denied = srv.requests[-1]["messages"][-1]
    assert code == 0
    assert not (ws / "gone.txt").exists()
    assert "Understood" not in client.text()  # the first process never went on
    # the new process dismissed the approval left open: the model was told it was denied
    assert denied["role"] == "tool" and "den" in denied["content"].lower()
    assert again.text().endswith("Understood, not written.")


def test_the_persona_module_without_jupyter_ai_is_one_import_error() -> None:
    """jupyter-ai's loader skips it; nothing else imports it, so the package is unaffected."""
    pytest.importorskip("acp")
    if any(m in sys.modules or _importable(m) for m in ("jupyter_ai_persona_manager",)):
        pytest.skip("jupyter-ai is installed here")
    with pytest.raises(ImportError, match=r'pip install "jupyter-agent\[acp\]" jupyter-ai'):
        import jupyter_agent.acp.persona  # noqa: F401


def _importable(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


def test_bash_runs_sandboxed_in_the_workspace_and_broken_arguments_fail_cleanly(
        home: Path, ws: Path) -> None:
    """An allowed bash call runs in cwd (execute kind, output as content); a call whose
    arguments are not JSON is a failed tool call with its raw text, and the run goes on."""
    with ScriptedOpenAI() as srv:
        srv.enqueue(tool_calls([call("bash", {"command": "pwd"}, id="call_b1")]),
                    tool_calls([call("read_file", '{"path": "a.txt"', id="call_r1")]),
                    text("ok"))
        client = Recorder(["allow_once"])

        async def body(conn: Any, proc: Any) -> Any:
            sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
            return await prompt(conn, sid, "where am I?")

        res = asyncio.run(session(client, agent_env(srv, home), ws, body))
    assert res.stop_reason == "end_turn"
    by_id: dict[str, list[Any]] = {}
    for u in client.updates:
        if u.session_update in ("tool_call", "tool_call_update"):
            by_id.setdefault(u.tool_call_id, []).append(u)
    bash, read = by_id["call_b1"], by_id["call_r1"]
    assert bash[0].kind == "execute" and bash[0].raw_input == {"command": "pwd"}
    assert bash[-1].status == "completed" and str(ws) in bash[-1].content[0].content.text
    assert read[0].kind == "read" and read[0].raw_input == '{"path": "a.txt"'
    assert read[-1].status == "failed"
    assert client.text() == "ok"


def test_a_second_prompt_while_one_runs_is_refused(home: Path, ws: Path) -> None:
    with ScriptedOpenAI() as srv:
        srv.enqueue(hang(60, then=text("first")))
        client = Recorder()

        async def body(conn: Any, proc: Any) -> Any:
            sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
            first = asyncio.create_task(prompt(conn, sid, "one"))
            for _ in range(300):
                if srv.requests:
                    break
                await asyncio.sleep(0.05)
            with pytest.raises(acp.RequestError) as err:
                await prompt(conn, sid, "two")
            await conn.cancel(session_id=sid)
            return err.value, await asyncio.wait_for(first, 30)

        err, first = asyncio.run(session(client, agent_env(srv, home), ws, body))
        srv.release_hangs()
    assert "already running" in str(err.data)
    assert first.stop_reason == "cancelled"


def test_a_question_left_open_is_answered_after_load_in_a_new_process(home: Path,
                                                                      ws: Path) -> None:
    ask = {"reason": "need it", "blockerType": "ambiguous_goal", "question": "Which format?",
           "options": ["CSV", "JSON", "Parquet"]}
    with ScriptedOpenAI() as srv:
        srv.enqueue(tool_calls([call("ask_agent", ask)]), text("Parquet it is."))
        env = agent_env(srv, home)
        first = Recorder()

        async def one(conn: Any, proc: Any) -> Any:
            sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
            await prompt(conn, sid, "export")
            return sid

        sid = asyncio.run(session(first, env, ws, one, "--mode", "plan"))
        second = Recorder()

        async def two(conn: Any, proc: Any) -> Any:
            await conn.load_session(cwd=str(ws), session_id=sid, mcp_servers=[])
            return await prompt(conn, sid, "3")

        res = asyncio.run(session(second, env, ws, two, "--mode", "plan"))
        answered = srv.requests[-1]["messages"][-1]
    assert res.stop_reason == "end_turn"
    assert answered["role"] == "tool" and "Parquet" in answered["content"]
    assert second.text().endswith("Parquet it is.")


def test_the_command_the_extra_and_the_persona_are_declared() -> None:
    """``jupyter-agent-acp`` and the ``jupyter_ai.personas`` entry point name real objects;
    the SDK pin admits jupyter-ai's 0.11 and the 0.12 line."""
    import importlib

    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    meta = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert meta["optional-dependencies"]["acp"] == ["agent-client-protocol>=0.11,<0.13"]
    assert "agent-client-protocol>=0.11,<0.13" in meta["optional-dependencies"]["test"]
    module, _, attr = meta["scripts"]["jupyter-agent-acp"].partition(":")
    assert callable(getattr(importlib.import_module(module), attr))
    persona = meta["entry-points"]["jupyter_ai.personas"]["jupyter-agent-acp"]
    assert persona == "jupyter_agent.acp.persona:JupyterAgentPersona"
    assert (REPO / "jupyter_agent/acp/persona.py").exists()
    assert (REPO / "jupyter_agent/acp/avatar.svg").exists()


def test_cancel_after_an_allow_stops_the_resumed_run(home: Path, ws: Path) -> None:
    """The run goes on after "Allow once" (a resume); a cancel while the model then holds its
    reply stops that run: the prompt ends cancelled, the allowed write was made."""
    with ScriptedOpenAI() as srv:
        srv.enqueue(tool_calls([call("write_file", {"path": "a.txt", "content": "1"})]),
                    hang(60, then=text("too late")))
        client = Recorder(["allow_once"])

        async def body(conn: Any, proc: Any) -> Any:
            sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
            task = asyncio.create_task(prompt(conn, sid, "write then think"))
            for _ in range(600):  # the second model request (after the write) has started
                if len(srv.requests) >= 2:
                    break
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.3)
            await conn.cancel(session_id=sid)
            return await asyncio.wait_for(task, 30)

        res = asyncio.run(session(client, agent_env(srv, home), ws, body))
        srv.release_hangs()
    assert res.stop_reason == "cancelled"
    assert (ws / "a.txt").read_text() == "1" and "too late" not in client.text()
