"""A small scripted ACP agent, shipped for the tutorial and the tests of
``%%toolloop --acp`` (``python -m jupyter_agent.acp.demo_agent``).

It is written with the SDK's agent side and speaks real ACP over stdio. Per prompt it shows
a plan, a tool call that reads a file through the client (``fs/read_text_file``), then asks
a permission with three options before writing through the client
(``fs/write_text_file``). Words in the prompt pick other scripts:

* ``hello``: one answer, nothing else;
* ``outside``: tries to write ``../acp-demo-outside.txt`` (beside its cwd) (a client confined to its cwd
  refuses it);
* ``capabilities``: what the client offered, the cwd and ``$ACP_DEMO_MARKER`` (the tests);
* ``crash``: one chunk, a line on stderr, then the process exits (status 5);
* ``shapes``: the update shapes a real agent sends besides text (a diff, a terminal, a call
  with no title, arguments as text, an image chunk, token usage) (the tests);
* ``stubborn``: like ``slow``, but ignores ``session/cancel`` (a hung agent);
* ``slow``: streams a dot every 0.1 s until cancelled;
* ``flood N``: N message chunks and N/10 tool calls, as fast as it can (the bench).

Each session remembers how many prompts it had, so a second cell can show it continues.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from acp import (
    PROTOCOL_VERSION,
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
    run_agent,
    text_block,
    update_agent_message_text,
)
from acp.helpers import (
    image_block,
    plan_entry,
    start_tool_call,
    tool_content,
    tool_diff_content,
    tool_terminal_ref,
    update_agent_thought,
    update_agent_thought_text,
    update_plan,
    update_tool_call,
)
from acp.schema import (
    AgentCapabilities,
    AllowedOutcome,
    ClientCapabilities,
    Implementation,
    PermissionOption,
    PermissionOptionKind,
    TextContentBlock,
    Usage,
)

if TYPE_CHECKING:
    from acp import Agent, Client
    from acp.helpers import ContentBlock

__all__ = ["DemoAgent", "main"]

OPTIONS: list[tuple[str, str, PermissionOptionKind]] = [
    ("allow", "Allow once", "allow_once"), ("always", "Always allow notes", "allow_always"),
    ("reject", "Reject", "reject_once")]


@dataclass
class _Session:
    cwd: str
    prompts: int = 0


class DemoAgent:
    """The scripted agent (one per process, any number of sessions)."""

    def __init__(self) -> None:
        self._conn: Client | None = None
        self.sessions: dict[str, _Session] = {}
        self.cancelled: set[str] = set()
        self.caps: ClientCapabilities | None = None

    def on_connect(self, conn: Client) -> None:
        self._conn = conn

    @property
    def conn(self) -> Client:
        """The client (the SDK connects it before the first request)."""
        assert self._conn is not None
        return self._conn

    async def initialize(self, protocol_version: int,
                         client_capabilities: ClientCapabilities | None = None,
                         client_info: Implementation | None = None,
                         **kwargs: object) -> InitializeResponse:
        self.caps = client_capabilities
        return InitializeResponse(protocol_version=PROTOCOL_VERSION,
                                  agent_capabilities=AgentCapabilities(load_session=False),
                                  agent_info=Implementation(name="demo-acp", version="1.0"))

    async def new_session(self, cwd: str, mcp_servers: Sequence[object] | None = None,
                          **kwargs: object) -> NewSessionResponse:
        sid = f"demo-{len(self.sessions) + 1}"
        self.sessions[sid] = _Session(cwd)
        return NewSessionResponse(session_id=sid)

    async def cancel(self, session_id: str, **kwargs: object) -> None:
        self.cancelled.add(session_id)

    async def _say(self, sid: str, text: str) -> None:
        await self.conn.session_update(sid, update_agent_message_text(text))

    async def prompt(self, prompt: list[ContentBlock], session_id: str, **kwargs: object
                     ) -> PromptResponse:
        sid = session_id
        self.cancelled.discard(sid)
        state = self.sessions[sid]
        state.prompts += 1
        text = " ".join(b.text if isinstance(b, TextContentBlock) else "" for b in prompt).lower()
        if "capabilities" in text:
            return await self._capabilities(sid)
        if "hello" in text:
            await self._say(sid, f"Hello from demo-acp (prompt {state.prompts} of this "
                                 "session).")
            return PromptResponse(stop_reason="end_turn")
        if text.startswith("flood"):
            n = int(text.split()[1]) if len(text.split()) > 1 else 1000
            for i in range(n):
                await self._say(sid, f"chunk {i} ")
                if i % 10 == 0:
                    await self.conn.session_update(sid, start_tool_call(
                        f"t{i}", "Look", kind="read", status="in_progress", raw_input={"i": i}))
                    await self.conn.session_update(sid, update_tool_call(
                        f"t{i}", status="completed", content=[tool_content(text_block("ok"))]))
            return PromptResponse(stop_reason="end_turn")
        if "shapes" in text:
            return await self._shapes(sid)
        if "crash" in text:
            await self._say(sid, "About to fail.")
            print("demo-acp: crashing on purpose", file=sys.stderr, flush=True)
            os._exit(5)
        if "stubborn" in text:  # ignores session/cancel (a hung agent)
            for _ in range(600):
                await self._say(sid, ".")
                await asyncio.sleep(0.1)
            return PromptResponse(stop_reason="end_turn")
        if "slow" in text:
            for _ in range(600):
                if sid in self.cancelled:
                    return PromptResponse(stop_reason="cancelled")
                await self._say(sid, ".")
                await asyncio.sleep(0.1)
            return PromptResponse(stop_reason="end_turn")
        if "outside" in text:
            return await self._write_outside(sid)
        return await self._script(sid, state)

    async def _capabilities(self, sid: str) -> PromptResponse:
        """Say what the client offered, the cwd and a marker variable (tests read them)."""
        fs = getattr(self.caps, "fs", None)
        await self._say(sid, f"fs read={getattr(fs, 'read_text_file', None)} "
                             f"write={getattr(fs, 'write_text_file', None)} "
                             f"terminal={getattr(self.caps, 'terminal', None)} "
                             f"cwd={os.getcwd()} "
                             f"env={os.environ.get('ACP_DEMO_MARKER', '(missing)')}")
        return PromptResponse(stop_reason="end_turn")

    async def _shapes(self, sid: str) -> PromptResponse:
        """A diff, a terminal and a text block in one result; a call with no title and text
        arguments; an update for a call never started, failed; an image thought; usage."""
        up = self.conn.session_update
        await up(sid, update_agent_thought(image_block("iVBORw0KGgo=", "image/png")))
        await up(sid, start_tool_call("e1", "", kind="edit", status="in_progress",
                                      raw_input="sed -i s/old/new/ a.txt"))
        await up(sid, update_tool_call("e1", status="completed", content=[
            tool_diff_content("a.txt", "new", "old"), tool_content(text_block("ok")),
            tool_terminal_ref("term-1")]))
        await up(sid, update_tool_call("x1", status="failed"))
        await self._say(sid, "Shapes sent.")
        return PromptResponse(stop_reason="end_turn",
                              usage=Usage(input_tokens=12, output_tokens=5, total_tokens=17))

    async def _write_outside(self, sid: str) -> PromptResponse:
        """Try to write outside the client's folder and report what the client said."""
        await self.conn.session_update(sid, start_tool_call(
            "w1", "Write ../acp-demo-outside.txt", kind="edit", status="in_progress",
            raw_input={"path": "../acp-demo-outside.txt"}))
        try:
            await self.conn.write_text_file(content="escaped", path="../acp-demo-outside.txt",
                                            session_id=sid)
            result = "written"
        except Exception as exc:  # the client refused: report it as the tool's failure
            result = f"refused: {exc}"
        await self.conn.session_update(sid, update_tool_call(
            "w1", status="failed" if result != "written" else "completed",
            content=[tool_content(text_block(result))]))
        await self._say(sid, f"The write outside was {result}.")
        return PromptResponse(stop_reason="end_turn")

    async def _script(self, sid: str, state: _Session) -> PromptResponse:
        conn = self.conn
        steps = ["Read notes.txt", "Write summary.txt"]
        await conn.session_update(sid, update_plan([plan_entry(s) for s in steps]))
        await conn.session_update(sid, update_agent_thought_text("The notes come first."))
        await conn.session_update(sid, start_tool_call(
            "read-1", "Read notes.txt", kind="read", status="in_progress",
            raw_input={"path": "notes.txt"}))
        try:
            notes = (await conn.read_text_file(path=f"{state.cwd}/notes.txt",
                                               session_id=sid)).content
        except Exception as exc:
            notes = f"(no notes: {exc})"
        await conn.session_update(sid, update_tool_call(
            "read-1", status="completed", content=[tool_content(text_block(notes[:200]))]))
        await conn.session_update(sid, update_plan([
            plan_entry(steps[0], status="completed"), plan_entry(steps[1], status="in_progress")]))
        summary = f"{len(notes.splitlines())} lines of notes."
        tool_call = update_tool_call("write-1", title="Write summary.txt", kind="edit",
                                     status="pending",
                                     raw_input={"path": "summary.txt", "content": summary})
        answer = await conn.request_permission(
            options=[PermissionOption(option_id=i, name=n, kind=k) for i, n, k in OPTIONS],
            session_id=sid, tool_call=tool_call)
        outcome = answer.outcome
        if not isinstance(outcome, AllowedOutcome) or sid in self.cancelled:
            return PromptResponse(stop_reason="cancelled")
        chosen = outcome.option_id
        if chosen == "reject":
            await conn.session_update(sid, update_tool_call("write-1", status="failed",
                                      content=[tool_content(text_block("rejected"))]))
            await self._say(sid, "You rejected the write (option id reject); nothing written.")
            return PromptResponse(stop_reason="end_turn")
        await conn.session_update(sid, start_tool_call(
            "write-1", "Write summary.txt", kind="edit", status="in_progress",
            raw_input={"path": "summary.txt"}))
        await conn.write_text_file(content=summary, path=f"{state.cwd}/summary.txt",
                                   session_id=sid)
        await conn.session_update(sid, update_tool_call(
            "write-1", status="completed", content=[tool_content(text_block("wrote summary.txt"))]))
        await conn.session_update(sid, update_plan([plan_entry(s, status="completed")
                                                    for s in steps]))
        await self._say(sid, f"Wrote summary.txt (option id {chosen}): {summary}")
        return PromptResponse(stop_reason="end_turn")


def main() -> None:
    """Serve the demo agent on stdio."""
    # Not every method of the SDK's Agent: the SDK answers what it does not define.
    asyncio.run(run_agent(cast("Agent", DemoAgent())))


if __name__ == "__main__":
    main()
