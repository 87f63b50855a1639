"""The project as an ACP agent: sessions, prompts, permissions (docs/acp.md).

Each prompt runs one ``toolloop``/``plan``/``chat`` turn in a worker thread; its events are
queued onto the connection's loop in order (:mod:`.updates`). An approval card becomes one
``session/request_permission`` and the answer goes through the public
:func:`jupyter_agent.agents.resume.resume`, the same road as a click on the card.
"""

from __future__ import annotations

import asyncio
import logging
import os
import queue
import re
import secrets as _random
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, TypeVar

from acp import PROTOCOL_VERSION, RequestError, update_agent_message_text
from acp.schema import (
    AgentCapabilities,
    AllowedOutcome,
    ClientCapabilities,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    Implementation,
    InitializeResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    ResourceContentBlock,
    SessionMode,
    SessionModeState,
    SetSessionModeResponse,
    StopReason,
    TextContentBlock,
    TextResourceContents,
)

from ..base.answers import Answer
from ..base.events import AskPending, BaseEvent, RunStarted
from ..base.secrets import mask
from .updates import (
    Update,
    UpdateMapper,
    history_updates,
    option_index,
    permission_call,
    permission_options,
)

if TYPE_CHECKING:
    from acp import Client
    from acp.helpers import ContentBlock

    from ..agents.run import Run
    from ..session.store import Store

__all__ = ["AgentConfig", "JupyterAcpAgent", "MainThreadRunner", "MODES", "DEFAULT_TOOLS"]

log = logging.getLogger("jupyter_agent.acp")

MODES = ("toolloop", "plan", "chat")
DEFAULT_TOOLS = ("bash", "read_file", "write_file")
_STOP: dict[str, StopReason] = {"done": "end_turn", "incomplete": "end_turn", "invalid": "end_turn",
         "max_rounds": "max_turn_requests", "aborted": "cancelled"}
# One turn at a time in this process: the tools are confined to the workspace through the
# process's current directory (docs/acp.md), which two sessions cannot share at once.
_RUN_LOCK = threading.Lock()
T = TypeVar("T")


@dataclass
class AgentConfig:
    """What the command line chose (``--model``, ``--tools``, ``--mode``)."""

    model: str | None = None
    tools: tuple[str, ...] = DEFAULT_TOOLS
    mode: str = "toolloop"


@dataclass
class _Session:
    id: str
    cwd: str
    mode: str
    run: Run | None = None
    """The live Run while a turn runs (to abort it)."""
    cancelled: bool = False
    question: AskPending | None = None
    question_run: str | None = None
    """A plan question that ended the last turn: the next prompt answers it."""
    asks: list[AskPending] = field(default_factory=list)
    busy: bool = False


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("jupyter-agent")
    except PackageNotFoundError:  # a source checkout that was never installed
        return "0"


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return mask(text[0] if text else type(exc).__name__)


def _prompt_text(blocks: Sequence[ContentBlock]) -> str:
    parts = []
    for b in blocks:
        if isinstance(b, TextContentBlock):
            parts.append(b.text)
        elif isinstance(b, EmbeddedResourceContentBlock):  # its text (a blob: nothing)
            if isinstance(b.resource, TextResourceContents):
                parts.append(b.resource.text)
        elif isinstance(b, (ResourceContentBlock, ImageContentBlock)) and b.uri:
            parts.append(b.uri)  # a link
    return "\n".join(parts).strip()


class MainThreadRunner:
    """Runs the turns on the process's main thread while the protocol loop runs in another.

    Why: stopping a run (``session/cancel``) interrupts the thread running it, and only the
    main thread can be woken from a blocking read (a model holding its reply) by a signal;
    another thread would notice only when the next byte arrives (docs/acp.md).
    """

    def __init__(self) -> None:
        self.jobs: queue.Queue[Callable[[], None] | None] = queue.Queue()
        """Each job runs one call and settles its caller's future; ``None`` stops."""

    async def call(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the main thread and wait for its result (or exception)."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[T] = loop.create_future()

        def job() -> None:
            settle: Callable[[], None]
            try:
                settle = partial(_set_result, fut, fn())
            except BaseException as exc:  # an interrupted run included: the caller decides
                settle = partial(_set_exception, fut, exc)
            try:
                loop.call_soon_threadsafe(settle)
            except RuntimeError:  # the protocol loop has ended (client EOF): no one waits
                log.debug("a turn ended after its client left")

        self.jobs.put(job)
        return await fut

    def stop(self) -> None:
        """Let :meth:`serve` return after the job it runs."""
        self.jobs.put(None)

    def serve(self) -> None:
        """The main thread's loop: one job at a time until :meth:`stop`."""
        while True:
            try:
                job = self.jobs.get()
                if job is None:
                    return
                job()
            except KeyboardInterrupt:  # a stop that arrived after its run ended
                continue


def _set_result(fut: asyncio.Future[T], value: T) -> None:
    if not fut.done():
        fut.set_result(value)


def _set_exception(fut: asyncio.Future[T], exc: BaseException) -> None:
    if not fut.done():
        fut.set_exception(exc)


class JupyterAcpAgent:
    """The ``acp.Agent`` implementation; one per process (``python -m jupyter_agent.acp``)."""

    def __init__(self, config: AgentConfig | None = None,
                 runner: MainThreadRunner | None = None) -> None:
        self.config = config or AgentConfig()
        self.runner = runner
        self.conn: Client | None = None
        self.sessions: dict[str, _Session] = {}
        self.closed = False

    def on_connect(self, conn: Client) -> None:
        """Keep the client proxy (updates, permission requests)."""
        self.conn = conn

    def _client(self) -> Client:
        if self.conn is None:  # the SDK connects before it routes the first request
            raise ConnectionError("no ACP client is connected")
        return self.conn

    async def initialize(self, protocol_version: int,
                         client_capabilities: ClientCapabilities | None = None,
                         client_info: Implementation | None = None,
                         **kwargs: object) -> InitializeResponse:
        """Our name and capabilities; we never use the client's fs or terminal."""
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=True, prompt_capabilities=PromptCapabilities(embedded_context=True),
                mcp_capabilities=McpCapabilities(http=False, sse=False)),
            agent_info=Implementation(name="jupyter-agent", title="Jupyter Agent",
                                      version=_version()),
            auth_methods=[])

    def _modes(self, current: str) -> SessionModeState:
        names = {"toolloop": "Tool loop", "plan": "Plan", "chat": "Chat"}
        return SessionModeState(current_mode_id=current, available_modes=[
            SessionMode(id=m, name=names[m]) for m in MODES])

    def _open(self, session_id: str, cwd: str) -> _Session:
        if not os.path.isabs(cwd) or not os.path.isdir(cwd):
            raise RequestError.invalid_params({"message": f"cwd is not a folder: {mask(cwd)}"})
        sess = _Session(id=session_id, cwd=os.path.realpath(cwd), mode=self.config.mode)
        self.sessions[session_id] = sess
        return sess

    async def new_session(self, cwd: str, mcp_servers: Sequence[object] | None = None,
                          **kwargs: object) -> NewSessionResponse:
        """A new project session in the store; ``cwd`` is its workspace."""
        from ..session import default_store

        sid = "acp-" + _random.token_hex(6)
        sess = self._open(sid, cwd)
        await asyncio.to_thread(default_store().ensure_session, sid)
        return NewSessionResponse(session_id=sid, modes=self._modes(sess.mode))

    async def load_session(self, cwd: str, session_id: str,
                           mcp_servers: Sequence[object] | None = None,
                           **kwargs: object) -> LoadSessionResponse:
        """Stream the stored conversation back, then continue it with the next prompt."""
        from ..session import default_store

        store = default_store()
        if await asyncio.to_thread(store.get_session, session_id) is None:
            raise RequestError.invalid_params({"message": f"No session {mask(session_id)!r}."})
        sess = self._open(session_id, cwd)
        await self._settle_left_open(sess, store)
        messages = await asyncio.to_thread(store.history_messages, session_id, None)
        for update in history_updates(messages):
            await self._client().session_update(session_id, update)
        return LoadSessionResponse(modes=self._modes(sess.mode))

    async def _settle_left_open(self, sess: _Session, store: Store) -> None:
        """What the last process left waiting: an approval is dismissed (denied: its client is
        gone, nobody saw the request answered), a question waits for the next prompt."""
        for record in await asyncio.to_thread(store.list_pending, sess.id):
            events = await asyncio.to_thread(store.get_events, record.run_id)
            asks = [e for e in events if e.get("type") == "ask_pending"]
            if not asks:
                continue
            ask = AskPending.model_validate(asks[-1])
            if ask.kind != "approval":
                sess.question, sess.question_run = ask, record.run_id
                continue

            def deny(run_id: str = record.run_id, call_id: str = ask.call_id) -> Run:
                from ..agents.resume import resume

                with _RUN_LOCK:
                    os.chdir(sess.cwd)
                    return resume(run_id, Answer("dismissed"), expected_call_id=call_id)

            try:
                await self._call(deny)
            except Exception as exc:  # superseded meanwhile, or its model is gone: say why
                log.warning("open approval of %s not dismissed: %s", record.run_id,
                            _one_line(exc))

    async def set_session_mode(self, session_id: str, mode_id: str,
                               **kwargs: object) -> SetSessionModeResponse:
        """Switch the session between toolloop, plan and chat."""
        sess = self._session(session_id)
        if mode_id not in MODES:
            raise RequestError.invalid_params({"message": f"Unknown mode {mode_id!r}."})
        sess.mode = mode_id
        return SetSessionModeResponse()

    def _session(self, session_id: str) -> _Session:
        sess = self.sessions.get(session_id)
        if sess is None:
            raise RequestError.invalid_params({"message": f"No session {mask(session_id)!r}."})
        return sess

    async def cancel(self, session_id: str, **kwargs: object) -> None:
        """Abort the session's run; the prompt then ends ``cancelled``."""
        sess = self.sessions.get(session_id)
        if sess is None:
            return
        sess.cancelled = True
        if sess.run is not None:
            sess.run.abort()

    def abort_all(self) -> None:
        """The client went away: stop every run (an open approval is never allowed)."""
        self.closed = True
        for sess in self.sessions.values():
            sess.cancelled = True
            if sess.run is not None:
                sess.run.abort()

    # -- prompts ------------------------------------------------------------------------------

    async def prompt(self, session_id: str, prompt: list[ContentBlock],
                     **kwargs: object) -> PromptResponse:
        """Run one turn; approvals become permission requests; a question ends the turn."""
        sess = self._session(session_id)
        if sess.busy:  # a second prompt while the first runs: refused, the first goes on
            raise RequestError.invalid_request({"message": "A turn is already running in this "
                                                "session; wait for it or cancel it."})
        sess.busy, sess.cancelled = True, False
        try:
            return await self._prompt(sess, prompt)
        finally:
            sess.busy = False

    async def _prompt(self, sess: _Session, prompt: list[ContentBlock]) -> PromptResponse:
        session_id = sess.id
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Update | None] = asyncio.Queue()
        pump = asyncio.create_task(self._pump(session_id, queue))
        mapper = UpdateMapper()

        def listen(event: BaseEvent) -> None:
            if isinstance(event, RunStarted) or sess.run is None:
                from ..agents.run import last_run

                # The Run announcing itself, or one resume() rebuilt from the store: the
                # newest Run made, as turns run one at a time (_RUN_LOCK).
                run = last_run()
                if run is not None and (not isinstance(event, RunStarted)
                                        or run.run_id == event.run_id):
                    sess.run = run
                    if sess.cancelled:
                        run.abort()
            if isinstance(event, AskPending):
                sess.asks.append(event)
            for update in mapper.updates(event):
                loop.call_soon_threadsafe(queue.put_nowait, update)

        try:
            run = await self._first_turn(sess, _prompt_text(prompt), listen)
            while run.status == "ask" and not sess.cancelled:
                ask = sess.asks[-1] if sess.asks else None
                if ask is None:
                    break
                if ask.kind != "approval":  # a plan question: the next prompt answers it
                    sess.question, sess.question_run = ask, run.run_id
                    queue.put_nowait(update_agent_message_text(_numbered(ask)))
                    break
                answer = await self._permission(sess, ask)
                sess.asks.clear()
                run = await self._resume(sess, run.run_id, answer, ask.call_id, listen, live=run)
        finally:
            queue.put_nowait(None)
            await pump
            sess.run = None
        if sess.cancelled:
            return PromptResponse(stop_reason="cancelled")
        if run.status == "error":
            raise RequestError(-32603, _one_line(Exception(run.error or "The run failed.")))
        return PromptResponse(stop_reason=_STOP.get(run.status, "end_turn"))

    async def _pump(self, session_id: str, queue: asyncio.Queue[Update | None]) -> None:
        while (update := await queue.get()) is not None:
            if self.closed:
                continue
            try:
                await self._client().session_update(session_id, update)
            except Exception as exc:  # a closed pipe: the run goes on to its end
                log.debug("session update not sent: %s", _one_line(exc))

    async def _permission(self, sess: _Session, ask: AskPending) -> Answer:
        """Ask the client; a cancelled request, a dead client or an unknown id denies."""
        try:
            reply = await self._client().request_permission(
                sess.id, permission_call(ask.call_id, ask.question, ask.detail),
                permission_options())
        except Exception as exc:
            if self.closed or isinstance(exc, ConnectionError):
                raise  # the client is gone: the card stays open in the store, never allowed
            log.info("permission request failed, denied: %s", _one_line(exc))
            return Answer("dismissed")
        outcome = reply.outcome
        index = option_index(outcome.option_id) if isinstance(outcome, AllowedOutcome) else None
        if index is None or sess.cancelled:  # cancelled, or an id that is not ours
            return Answer("dismissed")
        return Answer("option", option_index=index)

    async def _first_turn(self, sess: _Session, text: str,
                          listen: Callable[[BaseEvent], None]) -> Run:
        if sess.question is not None and sess.question_run is not None:
            ask, run_id = sess.question, sess.question_run
            sess.question = sess.question_run = None
            sess.asks.clear()
            return await self._resume(sess, run_id, _typed_answer(ask, text), ask.call_id, listen)
        if not text:
            raise RequestError.invalid_params({"message": "The prompt is empty."})
        return await self._call(lambda: self._run_turn(sess, text, listen))

    async def _call(self, fn: Callable[[], T]) -> T:
        if self.runner is not None:
            return await self.runner.call(fn)
        return await asyncio.to_thread(fn)

    def _run_turn(self, sess: _Session, text: str, listen: Callable[[BaseEvent], None]) -> Run:
        with _RUN_LOCK:
            os.chdir(sess.cwd)  # the workspace the file tools and bash are confined to
            session, model = sess.id, self.config.model
            try:
                if sess.mode == "chat":
                    from ..agents.chat import chat

                    return chat(text, session=session, listeners=[listen], model=model)
                if sess.mode == "plan":
                    from ..agents.plan.agent import plan

                    return plan(text, tools=list(self.config.tools), session=session,
                                listeners=[listen], model=model)
                from ..agents.toolloop import toolloop

                return toolloop(text, tools=list(self.config.tools), session=session,
                                listeners=[listen], model=model)
            except Exception as exc:
                raise RequestError(-32603, _one_line(exc)) from None

    async def _resume(self, sess: _Session, run_id: str, answer: Answer, call_id: str,
                      listen: Callable[[BaseEvent], None], live: Run | None = None) -> Run:
        """Answer the run through resume(), as a click does; ``live``: the Run this process
        still holds, so a cancel during the resumed part aborts the run that goes on."""
        sess.run = live

        def go() -> Run:
            from ..agents.resume import resume

            with _RUN_LOCK:
                os.chdir(sess.cwd)
                try:
                    return resume(run_id, answer, run=live, listeners=[listen],
                                  expected_call_id=call_id)
                except Exception as exc:
                    raise RequestError(-32603, _one_line(exc)) from None

        return await self._call(go)


def _numbered(ask: AskPending) -> str:
    lines = [mask(ask.question)]
    lines += [f"{i}. {mask(o)}" for i, o in enumerate(ask.options, start=1)]
    if ask.allow_other:
        lines.append("Reply with a number, or type your own answer.")
    else:
        lines.append("Reply with a number.")
    return "\n\n" + "\n".join(lines)


def _typed_answer(ask: AskPending, text: str) -> Answer:
    """The next prompt as the answer: ``2`` is option 2, other text is Other."""
    m = re.fullmatch(r"\s*(\d+)\s*\.?\s*", text)
    if m and 1 <= int(m.group(1)) <= len(ask.options):
        return Answer("option", option_index=int(m.group(1)))
    for i, option in enumerate(ask.options, start=1):
        if text.strip().casefold() == option.strip().casefold():
            return Answer("option", option_index=i)
    if ask.allow_other:
        return Answer("other", text=text)
    return Answer("dismissed")
