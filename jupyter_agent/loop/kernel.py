"""The loop kernel shared by every agent (docs/behaviour.md §2).

One function repeats: fit the context, call the model, run the tools, decide whether to stop.
Agents give it behaviour through :class:`~jupyter_agent.loop.hooks.LoopHooks`; adding an agent
never means editing this file.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import contextvars
import math
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Callable, Literal

from ..base.errors import tool_error_text
from ..base.events import (
    BaseEvent,
    ContextCompressed,
    ReasoningDelta,
    RoundRetried,
    RoundStarted,
    StopGateFeedback,
    TextDelta,
    ToolArgsDelta,
    ToolCalled,
    ToolReturned,
    ToolStarted,
    UsageRecorded,
    Warning_,
)
from ..base.jsontypes import JSONObject, JSONValue, object_field, str_field
from ..llm.protocol import ModelClient
from ..llm.tokens import count_message_tokens, count_messages_tokens, count_tools_tokens
from ..llm.types import ChatRequest, ChatResponse, Message, ToolCall, tool_calls_of
from .call_ids import CallIds, ids_in_messages
from .hooks import LoopHooks, StopContext, ToolOutcome, ToolRecord, UsageItem, images_message

__all__ = ["ARGS_EVERY", "FINAL_ANSWER_PROMPT", "GUARD_LIMIT", "LoopConfig", "LoopResult", "answer_of",
           "run_loop"]

GUARD_LIMIT = 5
"""After more than this many tool-only turns in a row, ``tool_choice`` becomes ``none``."""

FINAL_ANSWER_PROMPT = (
    "You have reached the limit of tool rounds for this run. Do not call any more tools: "
    "give your final answer now, based on what you have gathered so far."
)

_INTERRUPTED = "Tool error: interrupted by the user before it finished."

NOT_RUN_AT_LIMIT = "Not run: the run reached its round limit."

LoopStatus = Literal["done", "ask", "aborted", "error", "max_rounds", "incomplete"]


@dataclass
class LoopConfig:
    """Request settings and limits of one loop run."""

    model: str
    tools: list[JSONObject] | None = None
    max_rounds: int = 50
    batch_size: int = 1
    temperature: float | None = None
    max_tokens: int | None = None
    stream: bool = True
    parallel_tool_calls: bool | None = True
    final_answer_round: bool = True
    """docs/behaviour.md §2.9: at ``max_rounds`` make one last ``tool_choice='none'`` request."""
    round_offset: int = 0
    """Rounds already made before (a resumed run numbers its rounds on from there)."""
    reserved_ids: frozenset[str] = frozenset()
    """Tool-call ids the run used before (a resumed run): no new call gets one of them."""
    extra: JSONObject = field(default_factory=dict)
    vision: bool = False
    """The model accepts images: figures a tool drew are sent as image parts."""
    response_format: JSONObject | None = None
    """Sent with every request (a typed answer's JSON schema: ``llm/structured.py``)."""


@dataclass
class LoopResult:
    """Everything a loop run produced."""

    status: LoopStatus
    answer: str = ""
    messages: list[Message] = field(default_factory=list)
    """The final request messages (what a resume or the next turn continues from)."""
    assistant_messages: list[Message] = field(default_factory=list)
    """What this run produced: assistant and tool messages (withdrawn drafts excluded)."""
    rounds: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    usages: list[UsageItem] = field(default_factory=list)
    error: str | None = None
    finish_reason: str | None = None
    request_ids: list[str] = field(default_factory=list)
    interactive: JSONObject | None = None
    """The pending question when ``status == 'ask'``."""
    interactive_call_id: str | None = None
    tool_values: dict[str, object] = field(default_factory=dict)
    """Raw Python value of every tool call, by call id."""
    tool_records: list[ToolRecord] = field(default_factory=list)
    stopped: bool = False
    """A tool raised the stop signal (§2.7); kept when the same round also waits on a card."""


def answer_of(assistant_messages: list[Message]) -> str:
    """The run's answer: the last assistant message with text (empty when there is none)."""
    return _answer_of(assistant_messages)


def _answer_of(assistant_messages: list[Message]) -> str:
    for m in reversed(assistant_messages):
        if m.get("role") == "assistant" and m.get("content"):
            return str(m["content"])
    return ""


ARGS_EVERY = 1 / 30
"""Seconds between two relayed pieces of one call's streamed arguments (the live display draws
at most 30 times a second, ``ui/live.py``). A model streams a call's arguments in dozens of
pieces and each relayed piece is an event that every consumer handles (the recorder, the view,
the store, listeners, traces): a piece that comes sooner is held and relayed with the pieces
after it, together with the first that comes once the interval is over, before anything else
the stream brings (text, another call, a retry), or when the response ends. So a piece held
when the stream stalls shows when the stream goes on, as the live display's own throttle does.
Text and reasoning are relayed piece by piece: a reader follows them as they come."""


class _DeltaRelay:
    """A streamed response's deltas, as the round's events: text, reasoning, each tool call
    announced under the id the run gives it (the response's id of each call announced while
    streaming -> the run's id: :attr:`renamed`), its arguments (:data:`ARGS_EVERY`), warnings,
    a retried stream. :meth:`release` relays the arguments held back: the caller calls it when
    the response ended, however it ended."""

    def __init__(self, rnd: int, emit: Callable[[BaseEvent], None], ids: CallIds,
                 is_aborted: Callable[[], bool] | None) -> None:
        self.rnd, self.emit, self.ids, self.is_aborted = rnd, emit, ids, is_aborted
        self.renamed: dict[str, str] = {}
        self._held: tuple[str, list[str]] | None = None  # a call id, its pieces not relayed
        self._sent: dict[str, float] = {}  # call id -> when a piece of it was last relayed

    def __call__(self, kind: str, data: Mapping[str, object]) -> None:
        rnd, emit, renamed = self.rnd, self.emit, self.renamed
        if self.is_aborted is not None and self.is_aborted():
            # The abort races the stream: the client treats this like Ctrl-C (it closes
            # the response and reports finish_reason "close").
            raise KeyboardInterrupt
        if kind == "tool_args":
            cid = renamed.get(str_field(data, "id"))
            if cid is not None:
                self._args(cid, str_field(data, "delta"))
            return
        self.release()  # held arguments come first: the events keep the stream's order
        if kind == "text" or kind == "reasoning":  # per token: no helper call
            text = data.get("text")
            text = text if isinstance(text, str) else ""
            emit(TextDelta(round=rnd, text=text) if kind == "text"
                 else ReasoningDelta(round=rnd, text=text))
        elif kind == "tool_call":
            sent = str_field(data, "id")
            cid = renamed.get(sent)
            if cid is None:
                cid = renamed[sent] = self.ids.claim(sent)
            emit(ToolCalled(round=rnd, call_id=cid, name=str_field(data, "name")))
        elif kind == "warning":
            emit(Warning_(message=str_field(data, "message")))
        elif kind == "reset":
            self.ids.release(renamed.values())  # the withdrawn attempt's calls are gone
            renamed.clear()
            emit(RoundRetried(round=rnd,
                              reason=str(data.get("reason") or "connection lost mid-stream")))

    def _args(self, cid: str, delta: str) -> None:
        held = self._held
        if held is not None and held[0] != cid:
            self.release()
            held = None
        if held is None:
            held = self._held = (cid, [])
        held[1].append(delta)
        if time.monotonic() - self._sent.get(cid, -math.inf) >= ARGS_EVERY:
            self.release()

    def release(self) -> None:
        """Relay the arguments held back, as one piece."""
        held, self._held = self._held, None
        if held is not None:
            self._sent[held[0]] = time.monotonic()
            self.emit(ToolArgsDelta(round=self.rnd, call_id=held[0], delta="".join(held[1])))


class _LoopRun:
    """State of one kernel run (kept in an object so the phases stay small functions)."""

    def __init__(self, client: ModelClient, messages: list[Message], cfg: LoopConfig,
                 hooks: LoopHooks,
                 emit: Callable[[BaseEvent], None]) -> None:
        self.client = client
        self.cfg = cfg
        self.hooks = hooks
        self.emit = emit
        # Start-up (docs/behaviour.md §2.2): keep only id, type and function on every tool call.
        self.messages: list[Message] = [_clean_calls(m) for m in messages]
        # Ids already in the history are taken: a model reusing one gets a fresh id.
        self.ids = CallIds(ids_in_messages(self.messages) | cfg.reserved_ids)
        self.result = LoopResult(status="done")
        self.tokens: int | None = None
        self.tools_tokens = count_tools_tokens(cfg.tools)
        self.consecutive_tool_turns = 0
        self.round = cfg.round_offset
        self.started: dict[str, float] = {}
        """perf_counter time each call of the run began (its interrupted card keeps it)."""

    # -------------------------------------------------------------- the loop
    def run(self) -> LoopResult:
        res = self.result
        limit = self.cfg.round_offset + self.cfg.max_rounds
        try:
            while self.round < limit:
                self.round += 1
                res.rounds += 1
                if self.hooks.is_aborted is not None and self.hooks.is_aborted():
                    res.status = "aborted"
                    break
                self._fit_context()
                snapshot = list(self.messages)
                resp = self._request(snapshot, None)
                if resp is None:  # interrupted before the response started
                    res.status = "aborted"
                    break
                if resp.error:
                    res.status, res.error = "error", resp.error
                    break
                self._account(resp)
                if resp.aborted:
                    msg = resp.assistant_message()
                    if msg and not resp.tool_calls:
                        self._append(msg)
                    res.status = "aborted"
                    break
                if not resp.text and not resp.tool_calls:
                    res.status, res.error = "error", "The model returned an empty response."
                    break
                msg = resp.assistant_message()
                assert msg is not None
                self._append(msg)
                if resp.tool_calls:
                    stop, interactive, aborted = self._run_tools(resp.tool_calls, snapshot)
                    if aborted:
                        res.status = "aborted"
                        break
                    res.stopped = res.stopped or stop
                    if stop or interactive:
                        break
                    self._round_end()
                    continue
                decision = self._stop_candidate(resp, msg)
                if decision == "continue":
                    self._round_end()
                    continue
                break
            else:
                # Round limit reached with tools still being called (docs/behaviour.md §2.9).
                res.status = "max_rounds"
                if self.cfg.final_answer_round:
                    self._final_answer_round()
        except KeyboardInterrupt:
            res.status = "aborted"
            self._answer_open_calls()
        return self._finished()

    def _finished(self) -> LoopResult:
        """The result as the loop leaves it: an ask wins over abort and error; the answer is
        the last assistant text when no stop hook set one."""
        res = self.result
        if res.interactive is not None:
            res.status = "ask"
        res.messages = self.messages
        if res.status in ("done", "max_rounds", "incomplete", "aborted") and not res.answer:
            res.answer = _answer_of(res.assistant_messages)
        return res

    # -------------------------------------------------------------- phases
    def _round_end(self) -> None:
        if self.hooks.on_round_end is not None:
            self.hooks.on_round_end(self.result.assistant_messages)

    def _fit_context(self) -> None:
        if self.hooks.fit_context is None:
            return
        if self.tokens is None:
            self.tokens = count_messages_tokens(self.messages) + self.tools_tokens
        start = time.perf_counter()
        fit = self.hooks.fit_context(self.round, self.messages, self.tokens)
        if fit is None:
            return
        for u in fit.usages:
            self._push_usage(u)
        before = self.tokens
        self.messages = list(fit.messages)
        self.tokens = fit.tokens
        self.emit(ContextCompressed(round=self.round, method=fit.method, tokens_before=before,
                                    tokens_after=fit.tokens,
                                    seconds=round(time.perf_counter() - start, 2)))

    def _tool_choice(self, snapshot: list[Message]) -> str | JSONObject | None:
        if not self.cfg.tools:
            return None
        if self.hooks.request_control is not None:
            ctl = self.hooks.request_control(self.round, snapshot)
            if ctl is not None and ctl.tool_choice is not None:
                return ctl.tool_choice
        return "none" if self.consecutive_tool_turns > GUARD_LIMIT else "auto"

    def _request(self, snapshot: list[Message], forced_choice: str | JSONObject | None
                 ) -> ChatResponse | None:
        cfg = self.cfg
        tool_choice = forced_choice if forced_choice is not None else self._tool_choice(snapshot)
        self.emit(RoundStarted(round=self.round, model=cfg.model,
                               tool_choice=_choice_label(tool_choice)))
        # model_construct: the history is already wire-format dicts; validating it again would
        # copy every message on every round.
        req = ChatRequest.model_construct(
            model=cfg.model, messages=self.messages, tools=cfg.tools or None,
            tool_choice=tool_choice,
            parallel_tool_calls=cfg.parallel_tool_calls if cfg.tools else None,
            temperature=cfg.temperature, top_p=None, max_tokens=cfg.max_tokens, stop=None,
            response_format=cfg.response_format, stream=cfg.stream, extra=cfg.extra,
        )
        rnd, emit, ids = self.round, self.emit, self.ids
        relay = _DeltaRelay(rnd, emit, ids, self.hooks.is_aborted)
        try:
            resp = self.client.complete(req, relay)
        except BaseException as exc:
            with contextlib.suppress(Exception, KeyboardInterrupt):
                relay.release()  # what arrived is shown, however the request ended
            if isinstance(exc, KeyboardInterrupt):
                return None
            raise
        try:
            relay.release()
        except KeyboardInterrupt:
            # Stop landed as the response ended: it is still counted (its id, its usage), and
            # the run stops as after a stop mid-stream (no call of it runs).
            resp.aborted = True
        renamed = relay.renamed
        # Every request made has an id, a failed one too (docs/behaviour.md §2.3): the
        # provider's, else a local one.
        self.result.request_ids.append(resp.request_id or f"local-{uuid.uuid4().hex[:16]}")
        if resp.finish_reason:
            self.result.finish_reason = resp.finish_reason
        calls: list[ToolCall] = []
        for call in resp.tool_calls:
            cid = renamed.pop(call.id, None)
            if cid is None:
                # Parsed after the fact (prompt/grammar tool mode): never announced.
                cid = ids.claim(call.id)
                emit(ToolCalled(round=rnd, call_id=cid, name=call.name,
                                arguments=call.arguments))
            calls.append(call if cid == call.id else call.model_copy(update={"id": cid}))
        resp.tool_calls = calls
        return resp

    def _account(self, resp: ChatResponse) -> None:
        if resp.tool_calls:
            self.consecutive_tool_turns += 1
        if resp.text:
            self.consecutive_tool_turns = 0  # both can happen in one turn: the reset wins
        cost = self.client.cost(resp.usage)
        priced = bool(self.client.profile.price_tiers)
        saved = 0.0
        if resp.cached:  # answered from the cache: nothing spent, the price saved
            saved, cost = cost, 0.0
        self._push_usage(UsageItem("agent_call", self.cfg.model, resp.usage, cost), self.round,
                         priced=priced, cached=resp.cached, saved=saved, response=resp)

    def _push_usage(self, u: UsageItem, round_: int | None = None, *, priced: bool = True,
                    cached: bool = False, saved: float = 0.0,
                    response: ChatResponse | None = None) -> None:
        res = self.result
        res.usages.append(u)
        res.input_tokens += u.usage.input_tokens
        res.output_tokens += u.usage.output_tokens
        res.cost += u.cost
        self.emit(UsageRecorded(round=round_ if round_ is not None else self.round,
                                module=u.module, model=u.model,
                                input_tokens=u.usage.input_tokens,
                                output_tokens=u.usage.output_tokens, cost=u.cost,
                                estimated=u.usage.estimated, priced=priced, cached=cached,
                                saved=saved,
                                response_model=(response.model or "") if response else "",
                                finish_reason=response.finish_reason if response else None,
                                response_id=response.request_id if response else None))

    def _append(self, msg: Message, to_request: bool = True) -> None:
        self.result.assistant_messages.append(msg)
        if to_request:
            self.messages.append(msg)
            if self.tokens is not None:
                self.tokens += count_message_tokens(msg)

    def _answer_open_calls(self) -> None:
        """After an interrupt outside the tool phase (a second Ctrl-C while results were being
        written back): give every call of the last assistant message a result, so the saved
        history never ends with tool calls that lack results."""
        for i in range(len(self.messages) - 1, -1, -1):
            if self.messages[i].get("role") == "assistant":
                break
        else:
            return
        answered = {m.get("tool_call_id") for m in self.messages[i + 1:] if m.get("role") == "tool"}
        for c in tool_calls_of(self.messages[i]):
            if c.get("id") not in answered:
                self._append({"role": "tool", "tool_call_id": c.get("id"),
                              "content": _INTERRUPTED})

    # -------------------------------------------------------------- tools
    def _call_tool(self, call: ToolCall, snapshot: list[Message]) -> ToolOutcome:
        start = time.perf_counter()
        self.started[call.id] = start
        self.emit(ToolStarted(round=self.round, call_id=call.id, name=call.name))
        try:
            if self.hooks.run_tool is None:
                out = ToolOutcome(output=f'Unknown tool "{call.name}". Available tools: none',
                                  error="unknown tool")
            else:
                out = self.hooks.run_tool(call, snapshot)
        except KeyboardInterrupt:
            raise
        except Exception as exc:  # a hook that raises is reported like a tool that raises
            text = tool_error_text(exc)
            out = ToolOutcome(output=text, error=text)
        if not out.skip_compress and out.output:
            out.output = self._process_output(out)
        out.seconds = out.seconds or (time.perf_counter() - start)
        self.emit(ToolReturned(round=self.round, call_id=call.id, name=call.name,
                               output=out.output, error=out.error, seconds=round(out.seconds, 4),
                               internal=out.internal))
        for extra in out.events:
            if "round" in type(extra).model_fields:
                extra = extra.model_copy(update={"round": self.round})
            self.emit(extra)
        return out

    def _process_output(self, out: ToolOutcome) -> str:
        if self.hooks.process_tool_output is None:
            return out.output
        text, usages = self.hooks.process_tool_output(out.output)
        out.usages.extend(usages)
        return text

    def _run_tools(self, calls: list[ToolCall], snapshot: list[Message]) -> tuple[bool, bool, bool]:
        """Run one round's calls (§2.5–2.6); returns (stop, interactive, aborted)."""
        outcomes: list[ToolOutcome | None] = [None] * len(calls)
        can_batch = self.hooks.can_batch or (lambda c: True)
        size = max(1, self.cfg.batch_size)
        aborted = False
        i = 0
        try:
            while i < len(calls):
                if size == 1 or not can_batch(calls[i]):
                    outcomes[i] = self._call_tool(calls[i], snapshot)
                    i += 1
                    continue
                j = i
                while j < len(calls) and j - i < size and can_batch(calls[j]):
                    j += 1
                if j - i == 1:
                    outcomes[i] = self._call_tool(calls[i], snapshot)
                else:
                    self._run_batch(calls, outcomes, i, j, snapshot)
                i = j
        except KeyboardInterrupt:
            aborted = True
        stop = interactive = False
        images: list[str] = []
        for call, out in zip(calls, outcomes):
            if out is None:
                # Interrupted before this call finished: still answer every call, so the saved
                # history never ends with tool calls that lack results.
                # A call that had started keeps the time it ran; one still queued ran for 0 s.
                began = self.started.get(call.id)
                out = ToolOutcome(output=_INTERRUPTED, error="interrupted",
                                  seconds=0.0 if began is None else time.perf_counter() - began)
                self.emit(ToolReturned(round=self.round, call_id=call.id, name=call.name,
                                       output=out.output, error=out.error,
                                       seconds=round(out.seconds, 4)))
            for u in out.usages:
                self._push_usage(u)
            if out.interactive is not None:
                self.result.interactive = out.interactive  # the last one wins
                self.result.interactive_call_id = call.id
                interactive = True
            stop = stop or out.stop
            self.result.tool_values[call.id] = out.value
            self.result.tool_records.append({"call_id": call.id, "name": call.name,
                                             "arguments": call.arguments, "output": out.output,
                                             "error": out.error, "seconds": out.seconds,
                                             "value": out.value})
            self._append({"role": "tool", "tool_call_id": call.id, "content": out.output})
            images.extend(out.images)
        shown = images_message(images) if self.cfg.vision else None
        if shown is not None:  # after every tool result of the round: the protocol's order
            self._append(shown)
        return stop, interactive, aborted

    def _run_batch(self, calls: list[ToolCall], outcomes: list[ToolOutcome | None], i: int, j: int,
                   snapshot: list[Message]) -> None:
        pool = concurrent.futures.ThreadPoolExecutor(j - i, thread_name_prefix="jupyter-agent-tool")
        try:
            # Each worker gets a copy of the caller's context (usage sinks, settings overrides).
            futures = {pool.submit(contextvars.copy_context().run, self._call_tool, calls[k],
                                   snapshot): k for k in range(i, j)}
            for fut in concurrent.futures.as_completed(futures):
                outcomes[futures[fut]] = fut.result()
        finally:
            # On an interrupt the worker threads cannot be killed; we stop waiting for them.
            pool.shutdown(wait=False, cancel_futures=True)

    # -------------------------------------------------------------- stopping
    def _stop_candidate(self, resp: ChatResponse, msg: Message) -> str:
        res = self.result
        if self.hooks.on_stop_candidate is None:
            return "stop"
        decision = self.hooks.on_stop_candidate(
            StopContext(round=self.round, answer_text=resp.text, messages=self.messages,
                        assistant_messages=res.assistant_messages))
        if decision.allow:
            return "stop"
        if decision.error:
            res.status, res.error = "error", decision.error
            return "stop"
        if decision.status == "incomplete":
            res.status = "incomplete"
            res.answer = resp.text
            res.error = decision.reason or None
            return "stop"
        if decision.feedback is None:
            return "stop"
        # Withdraw the draft from the run's output, keep it in the request with the feedback.
        if res.assistant_messages and res.assistant_messages[-1] is msg:
            res.assistant_messages.pop()
        feedback_msg: Message = {"role": "user", "content": decision.feedback}
        self.messages.append(feedback_msg)
        if self.tokens is not None:
            self.tokens += count_message_tokens(feedback_msg)
        self.emit(StopGateFeedback(
            round=self.round, reason=decision.reason, feedback=decision.feedback,
            id=f"stop_gate_{self.round}_{resp.request_id or ''}", assistant_text=resp.text))
        return "continue"

    def _final_answer_round(self) -> None:
        self.round += 1
        self.result.rounds += 1
        prompt: Message = {"role": "user", "content": FINAL_ANSWER_PROMPT}
        self.messages.append(prompt)
        resp = self._request(list(self.messages), "none")
        if resp is None or resp.error:
            if resp is not None:
                self.result.error = resp.error
            return
        self._account(resp)
        for call in resp.tool_calls:
            # A model that calls tools anyway under tool_choice='none': the calls are not run
            # (and not kept); their cards are closed so none stays "running".
            self.emit(ToolReturned(round=self.round, call_id=call.id, name=call.name,
                                   output=NOT_RUN_AT_LIMIT, error=NOT_RUN_AT_LIMIT))
        if resp.text:
            self._append({"role": "assistant", "content": resp.text})


def _choice_label(tool_choice: str | JSONObject | None) -> str | None:
    """``auto``/``none``/``required``, or the name of the tool a request forces."""
    if isinstance(tool_choice, dict):
        name = object_field(tool_choice, "function").get("name")
        return str(name) if name else None
    return tool_choice


def _clean_calls(m: Message) -> Message:
    calls = tool_calls_of(m)
    if m.get("role") != "assistant" or not calls:
        return m
    cleaned: list[JSONValue] = [{"id": c.get("id"), "type": c.get("type", "function"),
                                 "function": c.get("function")} for c in calls]
    return dict(m, tool_calls=cleaned)


def run_loop(client: ModelClient, messages: list[Message], cfg: LoopConfig,
             hooks: LoopHooks | None = None, emit: Callable[[BaseEvent], None] | None = None
             ) -> LoopResult:
    """Run the multi-round loop.

    Args:
        client: The model client (:class:`~jupyter_agent.llm.protocol.ModelClient`; the
            kernel calls its ``complete`` and ``cost``).
        messages: The request messages to start from (copied, never modified).
        cfg: Model, tools, limits and sampling.
        hooks: The agent's behaviour (tool runner, stop gate, request control, …).
        emit: Receives every event as it happens.

    Returns:
        A :class:`LoopResult`; reaching ``max_rounds`` is a status, not an exception.
    """
    return _LoopRun(client, messages, cfg, hooks or LoopHooks(), emit or (lambda e: None)).run()
