"""The client side of ``%%toolloop --acp "COMMAND"``: one ACP agent process per command and
kernel, on a private asyncio loop in a background thread (as ``tools/mcp.py`` runs MCP), and
one ACP session per jupyter-agent session.

What the agent sends arrives on the loop thread and is put, in order, on the queue of the
prompt that runs (:class:`PromptFeed`); the cell's thread reads it (``bridge.py``). A
permission request parks its JSON-RPC request on an asyncio future until a person answers it
(or a cancel answers it ``cancelled``). The client offers fs read/write confined to the
kernel's cwd and no terminal (docs/acp-in-a-cell.md).
"""

from __future__ import annotations

import asyncio
import atexit
import collections
import os
import queue
import threading
from collections.abc import Coroutine, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar, Union, cast

from ..base.jsontypes import JSONObject
from ..base.secrets import mask

if TYPE_CHECKING:
    from acp import Client
    from acp.client.connection import ClientSideConnection
    from acp.interfaces import Agent
    from acp.schema import (
        PermissionOption,
        ReadTextFileResponse,
        RequestPermissionResponse,
        ToolCallUpdate,
        Usage,
        WriteTextFileResponse,
    )
    from pydantic import BaseModel

__all__ = ["AcpError", "AcpAgent", "PromptFeed", "PermissionAsk", "FsCall", "PromptDone",
           "PromptFailed", "FeedItem", "agent_for", "shutdown_all", "INSTALL_HINT"]

T = TypeVar("T")

INSTALL_HINT = 'ACP needs its SDK: pip install "jupyter-agent[acp]"'
_STOP_GRACE = 2.0
"""Seconds between SIGTERM and SIGKILL when the agent is closed."""
_INIT_TIMEOUT = 30.0
_LINE_LIMIT = 50 * 1024 * 1024
"""The longest JSON-RPC line read from the agent (a file's text can be long)."""


class AcpError(Exception):
    """The agent could not start, died, or refused a request (one line)."""


@dataclass
class PermissionAsk:
    """An open ``session/request_permission``: answered by :meth:`answer` (thread-safe)."""

    tool_call: ToolCallUpdate
    options: list[PermissionOption]
    """The agent's options, in its order."""
    future: asyncio.Future[str | None]
    loop: asyncio.AbstractEventLoop
    answered: bool = False

    def answer(self, option_id: str | None) -> bool:
        """Answer with ``option_id`` (``None``: ``cancelled``). False when answered already."""
        if self.answered:
            return False
        self.answered = True

        def settle() -> None:
            if not self.future.done():
                self.future.set_result(option_id)
        self.loop.call_soon_threadsafe(settle)
        return True


@dataclass
class FsCall:
    """One fs call of the agent, shown as a tool row."""

    call_id: str
    name: str
    arguments: JSONObject
    output: str
    error: str | None


@dataclass(frozen=True)
class PromptDone:
    """The agent answered the prompt: why it stopped, and its token counts if it sent them."""

    stop_reason: str
    usage: Usage | None


@dataclass(frozen=True)
class PromptFailed:
    """The prompt ended without an answer (the process died, a JSON-RPC error): one line."""

    message: str


FeedItem = Union["BaseModel", PermissionAsk, FsCall, PromptDone, PromptFailed]
"""One item of a :class:`PromptFeed`: a session update (one of the SDK's
``SessionNotification.update`` models), an open permission, an fs call, or the end."""


@dataclass
class PromptFeed:
    """What one ``session/prompt`` brings, in order; it ends with a :class:`PromptDone` or a
    :class:`PromptFailed`."""

    items: queue.Queue[FeedItem] = field(default_factory=queue.Queue)
    future: Future[None] | None = None


class _Client:
    """The ACP client object the SDK calls (on the loop thread)."""

    def __init__(self, owner: AcpAgent) -> None:
        self.owner = owner

    def on_connect(self, conn: Agent) -> None:
        pass

    def _feed(self, session_id: str) -> PromptFeed | None:
        return self.owner.feeds.get(session_id)

    async def session_update(self, session_id: str, update: BaseModel, **kwargs: object) -> None:
        feed = self._feed(session_id)
        if feed is not None:
            feed.items.put(update)

    async def request_permission(self, options: list[PermissionOption], session_id: str,
                                 tool_call: ToolCallUpdate,
                                 **kwargs: object) -> RequestPermissionResponse:
        from acp.schema import AllowedOutcome, DeniedOutcome, RequestPermissionResponse

        loop = asyncio.get_running_loop()
        ask = PermissionAsk(tool_call=tool_call, options=list(options),
                            future=loop.create_future(), loop=loop)
        feed = self._feed(session_id)
        if feed is None or not options:  # nobody could answer it, or nothing to choose
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        open_asks = self.owner.open_asks.setdefault(session_id, [])
        open_asks.append(ask)  # an agent may ask several at once: each waits its turn
        feed.items.put(ask)
        try:
            chosen = await ask.future
        finally:
            open_asks.remove(ask)
        if chosen is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected",
                                                                option_id=chosen))

    def _confined(self, path: str) -> Path:
        from acp import RequestError

        root = Path(self.owner.cwd).resolve()
        target = Path(path) if os.path.isabs(path) else root / path
        resolved = target.resolve()
        if resolved != root and root not in resolved.parents:
            raise RequestError(-32602, f"{path} is outside the notebook's folder; this "
                                       "client reads and writes only there.")
        return resolved

    def _row(self, session_id: str, name: str, args: JSONObject, output: str,
             error: str | None) -> None:
        feed = self._feed(session_id)
        self.owner.fs_calls += 1
        if feed is not None:
            feed.items.put(FsCall(f"acp-fs-{self.owner.fs_calls}", name, args, output, error))

    async def read_text_file(self, path: str, session_id: str, limit: int | None = None,
                             line: int | None = None, **kwargs: object) -> ReadTextFileResponse:
        from acp.schema import ReadTextFileResponse

        args: JSONObject = {"path": path}
        try:
            text = self._confined(path).read_text(encoding="utf-8")
        except Exception as exc:
            self._row(session_id, "fs/read_text_file", args, "", _line(exc))
            raise _as_request_error(exc) from None
        lines = text.splitlines(keepends=True)
        start = max((line or 1) - 1, 0)
        text = "".join(lines[start:start + limit] if limit else lines[start:])
        self._row(session_id, "fs/read_text_file", args, text, None)
        return ReadTextFileResponse(content=text)

    async def write_text_file(self, content: str, path: str, session_id: str,
                              **kwargs: object) -> WriteTextFileResponse:
        from acp.schema import WriteTextFileResponse

        args: JSONObject = {"path": path, "chars": len(content)}
        try:
            target = self._confined(path)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content, encoding="utf-8")
        except Exception as exc:
            self._row(session_id, "fs/write_text_file", args, "", _line(exc))
            raise _as_request_error(exc) from None
        self._row(session_id, "fs/write_text_file", args, f"wrote {len(content)} characters",
                  None)
        return WriteTextFileResponse()

    async def ext_method(self, method: str, params: JSONObject) -> JSONObject:
        from acp import RequestError

        raise RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: JSONObject) -> None:
        return None


def _line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__


def _as_request_error(exc: Exception) -> Exception:
    from acp import RequestError

    return exc if isinstance(exc, RequestError) else RequestError(-32603, _line(exc))


class AcpAgent:
    """One running agent process (its command, the kernel's cwd and environment)."""

    def __init__(self, argv: Sequence[str], cwd: str) -> None:
        self.argv = list(argv)
        self.cwd = cwd
        self.name = Path(self.argv[0]).name
        self.feeds: dict[str, PromptFeed] = {}
        self.open_asks: dict[str, list[PermissionAsk]] = {}
        self.sessions: dict[str, str] = {}
        """Our session name -> the agent's session id."""
        self.agent_name = self.name
        self.fs_calls = 0
        self.stderr: collections.deque[str] = collections.deque(maxlen=20)
        self.pid: int | None = None
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True,
                                        name=f"acp-{self.name}")
        self._conn: ClientSideConnection | None = None
        self._proc: asyncio.subprocess.Process | None = None
        self.closed = False

    # ------------------------------------------------------------------ the loop thread
    def _call(self, coro: Coroutine[object, object, T], timeout: float | None = None) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def _connection(self) -> ClientSideConnection:
        """The connection (opened by :meth:`start`, which raises when it cannot)."""
        if self._conn is None:
            raise AcpError(f"The ACP agent `{self.name}` is not connected.")
        return self._conn

    def start(self) -> None:
        """Spawn the process and initialize it; raises :class:`AcpError` with its stderr."""
        self._thread.start()
        try:
            self._call(self._open(), _INIT_TIMEOUT)
        except BaseException as exc:
            self.close()
            tail = "\n".join(self.stderr)
            why = ("no answer to initialize" if isinstance(exc, TimeoutError) else
                   "interrupted while it started" if isinstance(exc, KeyboardInterrupt) else
                   _line(exc))
            raise AcpError(f"The ACP agent `{' '.join(self.argv)}` did not start: {why}"
                           + (f"\n{tail}" if tail else "")) from None

    async def _open(self) -> None:
        from acp import PROTOCOL_VERSION
        from acp.client.connection import ClientSideConnection
        from acp.schema import ClientCapabilities, FileSystemCapabilities, Implementation

        # The whole kernel environment: the SDK's spawn passes only HOME, PATH and a few,
        # and a real agent needs its keys (jupyter-ai passes its server's the same way). Its
        # own session: a kernel interrupt signals the kernel's process group, and must reach
        # the agent as session/cancel, not as a SIGINT that kills it.
        proc = await asyncio.create_subprocess_exec(
            self.argv[0], *self.argv[1:], stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            env=dict(os.environ), cwd=self.cwd, start_new_session=True, limit=_LINE_LIMIT)
        self._proc, self.pid = proc, proc.pid
        if proc.stderr is not None:
            self._loop.create_task(self._drain(proc.stderr))
        # Not every method of the SDK's Client: no terminal (we offer none), no elicitation.
        # The SDK answers "method not found" for what a client leaves out (it casts the same).
        client = cast("Client", _Client(self))
        assert proc.stdin is not None and proc.stdout is not None
        conn = ClientSideConnection(client, proc.stdin, proc.stdout)
        self._conn = conn
        reply = await conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(
                fs=FileSystemCapabilities(read_text_file=True, write_text_file=True),
                terminal=False),
            client_info=Implementation(name="jupyter-agent", version="1"))
        info = getattr(reply, "agent_info", None)
        if info is not None and getattr(info, "name", None):
            self.agent_name = str(info.name)

    async def _drain(self, stream: asyncio.StreamReader) -> None:
        while True:
            raw = await stream.readline()
            if not raw:
                return
            # Masked as it comes: the agent has the kernel's environment, keys included, and
            # its stderr reaches the cell's error line (docs/security.md).
            self.stderr.append(mask(raw.decode("utf-8", "replace").rstrip()[:500]))

    async def _stop(self) -> None:
        """Close stdin, then SIGTERM, then SIGKILL after :data:`_STOP_GRACE` s."""
        proc = self._proc
        if proc is None:
            return
        if self._conn is not None:
            try:
                await self._conn.close()
            except Exception:
                pass
        if proc.stdin is not None:
            proc.stdin.close()
        for step in (None, proc.terminate, proc.kill):
            if proc.returncode is not None:
                return
            if step is not None:
                try:
                    step()
                except ProcessLookupError:
                    return
            try:
                await asyncio.wait_for(proc.wait(), _STOP_GRACE if step else 0.5)
            except asyncio.TimeoutError:
                continue

    def alive(self) -> bool:
        """Whether the process still runs."""
        return not self.closed and self._proc is not None and self._proc.returncode is None

    def session_id(self, session: str) -> str:
        """The agent's session for our ``session`` (made with ``session/new`` the first time)."""
        sid = self.sessions.get(session)
        if sid is None:
            async def new() -> str:
                reply = await self._connection().new_session(cwd=self.cwd, mcp_servers=[])
                return reply.session_id
            try:
                sid = self._call(new(), _INIT_TIMEOUT)
            except Exception as exc:
                raise AcpError(f"The ACP agent `{self.name}` refused session/new: {_line(exc)}"
                               + self._tail()) from None
            self.sessions[session] = sid
        return sid

    def _tail(self) -> str:
        return ("\n" + "\n".join(list(self.stderr)[-5:])) if self.stderr else ""

    def prompt(self, session_id: str, text: str) -> PromptFeed:
        """Send ``session/prompt``; what it brings arrives on the returned feed."""
        from acp import text_block

        feed = PromptFeed()
        self.feeds[session_id] = feed

        async def run() -> None:
            proc = self._proc
            try:
                reply = await self._connection().prompt(session_id=session_id,
                                                        prompt=[text_block(text)])
                feed.items.put(PromptDone(str(reply.stop_reason), getattr(reply, "usage", None)))
            except BaseException as exc:  # the process died, a JSON-RPC error
                from acp import RequestError

                if proc is not None and not isinstance(exc, RequestError):
                    try:  # a closed pipe, not the agent's answer: its exit status comes just
                        await asyncio.wait_for(proc.wait(), 1.0)  # after; wait a little
                    except Exception:
                        pass
                code = proc.returncode if proc is not None else None
                msg = (f"The ACP agent `{self.name}` ended (exit {code})" if code is not None
                       else f"The ACP agent `{self.name}` failed: {_line(exc)}")
                feed.items.put(PromptFailed(msg + self._tail()))
        feed.future = asyncio.run_coroutine_threadsafe(run(), self._loop)
        return feed

    def cancel(self, session_id: str) -> None:
        """``session/cancel``, and the open permission of that session answered ``cancelled``."""
        for ask in list(self.open_asks.get(session_id, [])):
            ask.answer(None)
        if self.alive():
            try:
                self._call(self._connection().cancel(session_id=session_id), 5)
            except Exception:  # a dead or hung agent: the caller's wait decides
                pass

    def close(self) -> None:
        """Close stdin, SIGTERM, SIGKILL after 2 s (the SDK's transport does the steps)."""
        if self.closed:
            return
        self.closed = True
        for asks in list(self.open_asks.values()):
            for ask in list(asks):
                ask.answer(None)
        if self._proc is not None and self._thread.is_alive():
            try:
                self._call(self._stop(), _STOP_GRACE * 3)
            except BaseException:
                pass
        if self._proc is not None and self._proc.returncode is None:
            try:  # the loop did not get to it: make sure
                self._proc.kill()
            except ProcessLookupError:
                pass
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)


_AGENTS: dict[tuple[tuple[str, ...], str], AcpAgent] = {}
_LOCK = threading.Lock()


def agent_for(argv: Sequence[str], cwd: str | None = None) -> AcpAgent:
    """The running agent of ``argv`` in this kernel (started now if needed or dead)."""
    cwd = cwd or os.getcwd()
    key = (tuple(argv), cwd)
    with _LOCK:
        agent = _AGENTS.get(key)
        if agent is not None and agent.alive():
            return agent
        if agent is not None:
            agent.close()
        agent = AcpAgent(argv, cwd)
        agent.start()
        _AGENTS[key] = agent
        return agent


def shutdown_all() -> None:
    """Close every agent of this kernel (atexit: the agent never outlives its kernel)."""
    with _LOCK:
        agents = list(_AGENTS.values())
        _AGENTS.clear()
    for agent in agents:
        agent.close()


atexit.register(shutdown_all)
