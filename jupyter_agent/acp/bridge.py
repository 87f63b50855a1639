"""``%%toolloop --acp``: an ACP agent's prompt turned into one of our runs.

The agent's session updates become the existing events (``events.py``), so the same card,
plan widget, tool rows, saved bundle and traces show it (docs/acp-in-a-cell.md has the mapping). A
permission request ends the cell at ``ask`` with an approval card whose options are the
agent's own; the JSON-RPC request stays open in this kernel (:data:`WAITING`) until
:func:`answer` (a click, ``%agent resume``) picks an option, and the run then streams on into
the card. Cancelling (an interrupt, Stop, ``--dismiss``) sends ``session/cancel``.
"""

from __future__ import annotations

import json
import queue
import shlex
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    ContentToolCallContent,
    FileEditToolCallContent,
    TerminalToolCallContent,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
)

from ..agents.resume import register_external
from ..agents.run import Run, RunRecorder
from ..base.answers import Answer
from ..base.errors import ResumeError
from ..base.events import (
    AskAnswered,
    AskPending,
    BaseEvent,
    PlanUpdated,
    ReasoningDelta,
    RoundStarted,
    RunStatus,
    TextDelta,
    ToolCalled,
    ToolReturned,
    ToolStarted,
    UsageRecorded,
)
from .client import (
    AcpAgent,
    FeedItem,
    FsCall,
    PermissionAsk,
    PromptDone,
    PromptFailed,
    PromptFeed,
    agent_for,
)

if TYPE_CHECKING:
    from acp.helpers import ToolCallContentVariant
    from pydantic import BaseModel

    from ..session.store import Store

__all__ = ["parse_command", "run_prompt", "answer", "WAITING", "Waiting", "CANCEL_WAIT"]

CANCEL_WAIT = 10.0
"""Seconds a cancelled prompt gets to answer ``cancelled`` before the run ends anyway."""
_STEP = {"pending": "pending", "in_progress": "in_progress", "completed": "done"}


def parse_command(value: object) -> list[str]:
    """``--acp``'s value: a command line (shlex-split) or a list of strings."""
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, str) for v in value):
        return [str(v) for v in value]
    if isinstance(value, str) and value.strip():
        return shlex.split(value)
    raise ValueError("--acp needs a command: --acp \"npx @zed-industries/claude-code-acp\".")


@dataclass
class _Call:
    """A tool call of the agent, as its rows are drawn."""

    name: str
    t: float
    """When it was first seen (``perf_counter``): its row's seconds."""
    returned: bool = False


@dataclass
class _Turn:
    """One prompt of an ACP session, as it streams into a run."""

    agent: AcpAgent
    session_id: str
    feed: PromptFeed
    run: Run
    task: str
    tools: dict[str, _Call] = field(default_factory=dict)
    text: list[str] = field(default_factory=list)
    ask: PermissionAsk | None = None
    call_id: str = ""
    on_end: Callable[[Run], None] | None = None
    """The cell's ``on_end`` (``--out``): told the run when each part of it ends."""


def _ended(turn: _Turn) -> None:
    if turn.on_end is not None:
        turn.on_end(turn.run)


@dataclass
class Waiting:
    """A run waiting on an agent's permission request (this kernel only)."""

    turn: _Turn
    call_id: str


WAITING: dict[str, Waiting] = {}
"""Run id -> its open permission request."""


def run_prompt(argv: Sequence[str], prompt: str, *, session: str, store: Store,
               listeners: Sequence[Callable[[BaseEvent], None]], origin: str | None = None,
               on_end: Callable[[Run], None] | None = None) -> Run:
    """Send ``prompt`` to the agent of ``argv`` (its session for ``session``) as a new run.

    ``on_end`` is told the run each time a part of it ends: the cell's, then the part an
    answer to a permission streams (the cell's ``--out``, as for every run)."""
    agent = agent_for(argv)
    sid = agent.session_id(session)
    _supersede(agent, sid, store)
    run = Run(agent="toolloop", model=f"acp:{agent.agent_name}", prompt=prompt, session=session)
    if store is not None:
        store.create_run(run.run_id, session, "toolloop", origin=origin)
    recorder = RunRecorder(run, store, list(listeners))
    recorder.start()
    recorder.emit(RoundStarted(round=1, model=run.model))
    run.rounds = 1
    turn = _Turn(agent, sid, agent.prompt(sid, prompt), run,
                 task=prompt.strip().splitlines()[0][:200] if prompt.strip() else "ACP task",
                 on_end=on_end)
    try:
        _drive(turn, recorder, store)
    finally:  # an interrupted prompt's --out holds what it streamed, as a plain cell's
        _ended(turn)
    return run


def _supersede(agent: AcpAgent, session_id: str, store: Store) -> None:
    """A new prompt of a session whose earlier prompt still waits on a permission (its cell
    run again, another cell): that prompt is cancelled first (``cancelled`` answered, then
    ``session/cancel``) and its run ends ``aborted``; an ACP session runs one prompt at a
    time."""
    for run_id, waiting in list(WAITING.items()):
        turn = waiting.turn
        if turn.agent is not agent or turn.session_id != session_id:
            continue
        WAITING.pop(run_id, None)
        if store is not None:
            store.claim_pending(run_id, waiting.call_id)
        listeners: list[Callable[[BaseEvent], None]] = []
        try:
            from ..ui.live import displays

            live = displays.get(run_id)
            if live is not None:
                listeners.append(live.on_event)
        except ImportError:  # no display layer (a script): the store still gets it
            pass
        recorder = RunRecorder(turn.run, store, listeners)
        recorder.emit(AskAnswered(call_id=waiting.call_id, how="dismissed"))
        with recorder.finishing():
            _cancel(turn, recorder)


def _drive(turn: _Turn, recorder: RunRecorder, store: Store) -> None:
    """Read the turn's feed until the prompt ends or a permission waits."""
    run = turn.run
    with recorder.finishing(), run.looping():
        try:
            while True:
                try:
                    item = turn.feed.items.get(timeout=0.1)
                except queue.Empty:
                    if run.abort_requested:
                        raise KeyboardInterrupt from None
                    continue
                if _apply(turn, recorder, store, item):
                    return
        except KeyboardInterrupt:
            _cancel(turn, recorder)


def _cancel(turn: _Turn, recorder: RunRecorder) -> None:
    """``session/cancel``, then up to :data:`CANCEL_WAIT` s for the prompt; ends ``aborted``."""
    WAITING.pop(turn.run.run_id, None)
    turn.agent.cancel(turn.session_id)
    deadline = time.monotonic() + CANCEL_WAIT
    while time.monotonic() < deadline:
        try:
            item = turn.feed.items.get(timeout=0.1)
        except queue.Empty:
            continue
        except KeyboardInterrupt:  # a second interrupt: the agent goes
            turn.agent.close()
            break
        if isinstance(item, (PromptDone, PromptFailed)):
            break
        if isinstance(item, PermissionAsk):
            item.answer(None)
            continue
        _apply(turn, recorder, None, item)
    recorder.finish("aborted", answer="".join(turn.text), error="Interrupted by the user.")


def _apply(turn: _Turn, recorder: RunRecorder, store: Store | None, item: FeedItem) -> bool:
    """One item of the feed; True when the cell's part of the run ends here."""
    if isinstance(item, FsCall):
        _fs_row(recorder, item)
    elif isinstance(item, PermissionAsk):
        _suspend(turn, recorder, store, item)
        return True
    elif isinstance(item, PromptDone):
        stop, usage = item.stop_reason, item.usage
        if usage is not None:  # the run's totals too: the store, a batch and run.cost read them
            turn.run.input_tokens += usage.input_tokens
            turn.run.output_tokens += usage.output_tokens
            recorder.emit(UsageRecorded(
                model=turn.run.model, input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens, priced=False))
        status: RunStatus = "aborted" if stop == "cancelled" else "done"
        recorder.finish(status, answer="".join(turn.text), finish_reason=stop)
        return True
    elif isinstance(item, PromptFailed):
        recorder.finish("error", answer="".join(turn.text), error=item.message)
        return True
    else:
        _update(turn, recorder, item)
    return False


def _update(turn: _Turn, recorder: RunRecorder, u: BaseModel) -> None:
    """One session update; the kinds not drawn (a usage gauge, the commands) are skipped."""
    if isinstance(u, (AgentMessageChunk, AgentThoughtChunk)):
        block = u.content
        text = block.text if isinstance(block, TextContentBlock) else ""
        if not text:
            return
        if isinstance(u, AgentMessageChunk):
            turn.text.append(text)
            recorder.emit(TextDelta(round=1, text=text))
        else:
            recorder.emit(ReasoningDelta(round=1, text=text))
    elif isinstance(u, AgentPlanUpdate):
        if u.entries:
            recorder.emit(PlanUpdated(plan={"planId": "acp", "task": turn.task, "description": "",
                                            "steps": [{"id": f"acp-{i}", "title": e.content,
                                                       "description": "",
                                                       "status": _STEP.get(e.status, "pending")}
                                                      for i, e in enumerate(u.entries, start=1)]}))
    elif isinstance(u, (ToolCallStart, ToolCallProgress)):
        _tool(turn, recorder, u)


def _tool(turn: _Turn, recorder: RunRecorder, u: ToolCallStart | ToolCallProgress) -> None:
    cid = u.tool_call_id
    known = turn.tools.get(cid)
    if known is None or (known.returned and isinstance(u, ToolCallStart)):
        name = u.title or u.kind or "tool"
        raw = u.raw_input
        args = raw if isinstance(raw, str) else json.dumps(raw if raw is not None else {})
        known = turn.tools[cid] = _Call(name, time.perf_counter())
        recorder.emit(ToolCalled(round=1, call_id=cid, name=name, arguments=args))
        recorder.emit(ToolStarted(round=1, call_id=cid, name=name))
    status = u.status
    if status in ("completed", "failed") and not known.returned:
        known.returned = True
        out = _content_text(u.content or [])
        recorder.emit(ToolReturned(
            round=1, call_id=cid, name=known.name, output=out,
            error=(out or "failed") if status == "failed" else None,
            seconds=round(time.perf_counter() - known.t, 3)))


def _content_text(content: Sequence[ToolCallContentVariant]) -> str:
    """Tool call content as text: text blocks, diffs as ``path: -a +b``."""
    parts: list[str] = []
    for c in content:
        if isinstance(c, FileEditToolCallContent):
            parts.append(f"{c.path}: -{c.old_text or ''} +{c.new_text or ''}")
        elif isinstance(c, ContentToolCallContent):
            if isinstance(c.content, TextContentBlock):
                parts.append(c.content.text)
        elif isinstance(c, TerminalToolCallContent):
            parts.append(f"(terminal {c.terminal_id})")
    return "\n".join(parts)


def _fs_row(recorder: RunRecorder, call: FsCall) -> None:
    recorder.emit(ToolCalled(round=1, call_id=call.call_id, name=call.name,
                             arguments=json.dumps(call.arguments)))
    recorder.emit(ToolStarted(round=1, call_id=call.call_id, name=call.name))
    recorder.emit(ToolReturned(round=1, call_id=call.call_id, name=call.name,
                               output=call.output or (call.error or ""), error=call.error))



def _suspend(turn: _Turn, recorder: RunRecorder, store: Store | None, ask: PermissionAsk) -> None:
    """The permission's approval card; the run ends the cell at ``ask``."""
    tc = ask.tool_call
    cid = tc.tool_call_id or f"acp-perm-{len(turn.tools)}"
    card = AskPending(
        call_id=cid, kind="approval", question=tc.title or "The agent asks",
        options=[o.name for o in ask.options], allow_other=False,
        detail={"tool": tc.title or "", "kinds": [o.kind for o in ask.options],
                "arguments": tc.raw_input or {}, "agent": turn.agent.agent_name})
    turn.ask, turn.call_id = ask, cid
    recorder.emit(card)
    WAITING[turn.run.run_id] = Waiting(turn, cid)
    if store is not None:
        store.suspend(turn.run.run_id, {
            "version": 1, "kind": "acp", "call_id": cid, "command": turn.agent.argv,
            "card": card.model_dump(mode="json", exclude={"type", "t"})})
    recorder.finish("ask", answer="".join(turn.text))


def answer(run_id: str, given: Answer, *, store: Store,
           listeners: Sequence[Callable[[BaseEvent], None]],
           expected_call_id: str | None = None) -> Run | None:
    """Answer the run's open permission and stream the rest of its prompt (``None``: no
    permission of this kernel waits under that id, its agent ended with another kernel).

    Raises:
        ResumeError: a second answer, or an answer that does not fit (nothing changed).
    """
    waiting = WAITING.get(run_id)
    if waiting is None:  # its request died with another kernel: the caller says so
        return None
    turn, ask = waiting.turn, waiting.turn.ask
    if expected_call_id is not None and expected_call_id != waiting.call_id:
        raise ResumeError(f"That card (call {expected_call_id}) is no longer waiting; "
                          "nothing changed.")
    assert ask is not None
    names = [o.name for o in ask.options]
    index: int | None = None
    if given.how == "option":
        index = given.option_index
        if not index or not 1 <= index <= len(names):
            raise ResumeError(f"option must be between 1 and {len(names)}; nothing changed.")
    elif given.how == "other":
        matches = [i for i, n in enumerate(names, start=1) if n.lower() == given.text.lower()]
        if not matches:
            raise ResumeError(f"No option named {given.text!r}: the options are "
                              f"{', '.join(names)}; nothing changed.")
        index = matches[0]
    if WAITING.pop(run_id, None) is None:  # a second answer raced us
        raise ResumeError(f"Run {run_id} is not waiting for an answer any more; nothing "
                          "changed.")
    if store is not None:
        store.claim_pending(run_id, waiting.call_id)
    run = turn.run
    run.status = "running"
    recorder = RunRecorder(run, store, list(listeners))
    if index is None:  # dismissed: cancel the prompt
        recorder.emit(AskAnswered(call_id=waiting.call_id, how="dismissed"))
        with recorder.finishing():
            _cancel(turn, recorder)
        _ended(turn)
        return run
    recorder.emit(AskAnswered(call_id=waiting.call_id, how="option", answer=names[index - 1],
                              option_index=index))
    ask.answer(ask.options[index - 1].option_id)
    try:
        _drive(turn, recorder, store)
    finally:  # an interrupted prompt's --out holds what it streamed, as a plain cell's
        _ended(turn)
    return run


register_external("acp", answer)
