"""A run's events as OpenTelemetry GenAI spans (the semantic conventions' names).

One :class:`RunTracer` per part of a run (a resumed run's part gets a new one), fed by the
run's recorder after masking, so a secret never reaches a span:

* ``invoke_agent {agent}``: the run (``gen_ai.agent.name``, ``gen_ai.conversation.id`` = the
  session, status, cost, token totals); a question or an approval it waits on is an event on
  it (``jupyter_agent.ask_pending``), and a resumed part is a child of the part before, in the
  same trace (the ``traceparent`` travels in the ``run_started`` event, which the store keeps);
* ``chat {model}``: each model request, from ``round_started`` to its ``usage`` (request and
  response model, tokens, finish reasons, response id);
* ``execute_tool {tool}``: each tool call, from ``tool_started`` to ``tool_returned`` (name,
  call id, ``error.type``); while it runs it is the parent of any run started in its thread
  (a sub-agent), as a batch's span is of its items' runs.

Contents (the prompt, the answer, each request's output, tool arguments and results) are
attached only when ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``.

A span is kept as a small record while it is open and handed to the batch processor as the
SDK's ``ReadableSpan`` when it ends (``export.py`` says why).
"""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token
from typing import TYPE_CHECKING, Union

try:  # the [otel] extra (imported only when tracing is on)
    from opentelemetry import trace
    from opentelemetry.sdk.trace import Event, ReadableSpan
    from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags
except ImportError as exc:
    raise ImportError("tracing needs the OpenTelemetry SDK: pip install "
                      "'jupyter-agent[otel]'") from exc

from ..base.events import (
    AskAnswered,
    AskPending,
    BaseEvent,
    ContextCompressed,
    RoundRetried,
    RoundStarted,
    RunFailed,
    RunFinished,
    RunStarted,
    StopGateFeedback,
    TextDelta,
    ToolArgsDelta,
    ToolCalled,
    ToolReturned,
    ToolsOffered,
    ToolStarted,
    UsageRecorded,
    Warning_,
)
from ..base.secrets import mask
from .export import Exporting
from .switch import capture_content

if TYPE_CHECKING:
    from opentelemetry.util.types import AttributeValue

    from . import TracedRun

__all__ = ["RunTracer", "BatchTrace", "OpenSpan", "SpanAttributes", "open_batch",
           "traceparent", "parse_traceparent", "current_parent", "parented"]

PROVIDER = "openai"
"""``gen_ai.provider.name``: every model is reached through the OpenAI-compatible API."""

_SAMPLED = TraceFlags(TraceFlags.SAMPLED)
_OK = Status(StatusCode.UNSET)
_ids = random.Random()  # span and trace ids, as the SDK makes them (not secrets)
if hasattr(os, "register_at_fork"):
    # A forked child (a process pool's worker) would otherwise repeat its parent's ids, and
    # two runs' spans would share one trace: ``random`` reseeds its own instance the same way.
    os.register_at_fork(after_in_child=_ids.seed)

_PARENT: ContextVar[SpanContext | None] = ContextVar("jupyter_agent_trace_parent", default=None)
"""The span a run started here hangs under: a running tool call's, or a batch's."""


SpanAttributes = dict[str, "AttributeValue"]
"""A span's or a span event's attributes, as the SDK takes them."""

_SpanEvent = Union[StopGateFeedback, ContextCompressed, Warning_]
"""Events that become an event on the run's span (``jupyter_agent.<type>``)."""

_ALWAYS: frozenset[type[BaseEvent]] = frozenset({
    RunStarted, ToolsOffered, RoundStarted, UsageRecorded, RoundRetried, ToolStarted,
    ToolReturned, AskPending, AskAnswered, StopGateFeedback, ContextCompressed, Warning_,
    RunFinished, RunFailed})
"""The events every tracer reads."""
_CONTENTS: frozenset[type[BaseEvent]] = frozenset({TextDelta, ToolCalled, ToolArgsDelta})
"""The events read only when contents are captured (the output messages, tool arguments)."""


def _ns(t: float) -> int:
    return int(t * 1e9)


def traceparent(ctx: SpanContext) -> str:
    """The W3C ``traceparent`` of a span."""
    return f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{int(ctx.trace_flags):02x}"


def parse_traceparent(value: str) -> SpanContext | None:
    """The span context of a saved ``traceparent`` (``None`` when it is not one)."""
    parts = value.split("-")
    if len(parts) != 4 or len(parts[1]) != 32 or len(parts[2]) != 16:
        return None
    try:
        trace_id, span_id, flags = int(parts[1], 16), int(parts[2], 16), int(parts[3], 16)
    except ValueError:
        return None
    if not trace_id or not span_id:
        return None
    return SpanContext(trace_id=trace_id, span_id=span_id, is_remote=True,
                       trace_flags=TraceFlags(flags))


class OpenSpan:
    """A span being recorded: what it will be when it ends."""

    __slots__ = ("ex", "name", "kind", "context", "parent", "start", "attributes", "events",
                 "status")

    def __init__(self, ex: Exporting, name: str, kind: SpanKind, parent: SpanContext | None,
                 start: float, attributes: SpanAttributes) -> None:
        self.ex = ex
        self.name = name
        self.kind = kind
        self.parent = parent
        trace_id = parent.trace_id if parent is not None else _ids.getrandbits(128)
        self.context = SpanContext(trace_id=trace_id, span_id=_ids.getrandbits(64),
                                   is_remote=False, trace_flags=_SAMPLED)
        self.start = start
        self.attributes = attributes
        self.events: list[Event] = []
        self.status = _OK

    def event(self, name: str, attributes: SpanAttributes, t: float) -> None:
        self.events.append(Event(name, attributes, _ns(t)))

    def error(self, kind: str, description: str) -> None:
        self.attributes["error.type"] = kind
        # Masked here too: a batch's error is an exception's text, not a (masked) run event.
        self.status = Status(StatusCode.ERROR, mask(description)[:300])

    def end(self, t: float) -> None:
        """Hand the finished span to the processor (sent in the background)."""
        ex = self.ex
        ex.processor.on_end(ReadableSpan(
            name=self.name, context=self.context, parent=self.parent, resource=ex.resource,
            attributes=self.attributes, events=tuple(self.events), kind=self.kind,
            status=self.status, start_time=_ns(self.start), end_time=_ns(t),
            instrumentation_scope=ex.scope))


def _outer() -> SpanContext | None:
    """The parent of a run or batch starting now: a span of ours (a running tool call, a
    batch), else the caller's own OpenTelemetry span, if any."""
    ours = _PARENT.get()
    if ours is not None:
        return ours
    theirs = trace.get_current_span().get_span_context()
    return theirs if theirs.is_valid else None


def current_parent() -> str:
    """The ``traceparent`` of the span runs started here would hang under (empty: none)."""
    ctx = _PARENT.get()
    return traceparent(ctx) if ctx is not None else ""


@contextmanager
def parented(value: str) -> Iterator[None]:
    """Runs started in the body hang under the span of ``traceparent`` ``value`` (another
    process's: a batch's, for its items on Dask workers)."""
    token = _PARENT.set(parse_traceparent(value)) if value else None
    try:
        yield
    finally:
        if token is not None:
            _PARENT.reset(token)


def _text_message(role: str, text: str, **extra: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}], **extra}])


class RunTracer:
    """The listener that exports one part of a run (see the module's docstring)."""

    def __init__(self, run: TracedRun, ex: Exporting) -> None:
        self._run = run
        self._ex = ex
        self._health = ex.health
        self._capture = capture_content()  # this run's: the variable may change between runs
        self._span: OpenSpan | None = None
        self._done = False
        self._chats: dict[int, OpenSpan] = {}
        self._tools: dict[str, OpenSpan] = {}
        self._tokens: dict[str, Token[SpanContext | None]] = {}
        # Contents, kept only when they are captured.
        self._text: dict[int, list[str]] = {}
        self._calls: dict[str, tuple[int, str, list[str]]] = {}
        self._kinds = _ALWAYS | _CONTENTS if self._capture else _ALWAYS

    # ------------------------------------------------------------------ the run's span
    def begin(self) -> str:
        """Open the run's span (a new run: under a running tool call or batch, if any)."""
        return traceparent(self._open(time.time(), _outer()).context)

    def _open(self, t: float, parent: SpanContext | None) -> OpenSpan:
        run = self._run
        attrs: SpanAttributes = {
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": run.agent,
            "gen_ai.provider.name": PROVIDER, "gen_ai.request.model": run.model,
            "jupyter_agent.run.id": run.run_id}
        if run.session:
            attrs["gen_ai.conversation.id"] = run.session
        span = self._span = OpenSpan(self._ex, f"invoke_agent {run.agent}", SpanKind.INTERNAL,
                                     parent, t, attrs)
        return span

    def _resumed_parent(self) -> SpanContext | None:
        """The span of the run's part before this one (its ``run_started`` keeps it)."""
        for event in reversed(self._run.events):
            if isinstance(event, RunStarted) and event.trace:
                return parse_traceparent(event.trace)
        return None

    def __call__(self, event: BaseEvent) -> None:
        if self._done or type(event) not in self._kinds:
            return
        if self._span is None:  # a resumed part: its first event opens its span
            span = self._open(event.t, self._resumed_parent() or _outer())
            span.attributes["jupyter_agent.run.resumed"] = True
        # Deltas first: they are most of a run's events.
        if isinstance(event, TextDelta):
            self._text_delta(event)
        elif isinstance(event, ToolArgsDelta):
            self._tool_args(event)
        elif isinstance(event, ToolCalled):
            self._tool_called(event)
        elif isinstance(event, RoundStarted):
            self._round_started(event)
        elif isinstance(event, UsageRecorded):
            self._usage(event)
        elif isinstance(event, ToolStarted):
            self._tool_started(event)
        elif isinstance(event, ToolReturned):
            self._tool_returned(event)
        elif isinstance(event, RunStarted):
            self._run_started(event)
        elif isinstance(event, ToolsOffered):
            self._tools_offered(event)
        elif isinstance(event, RoundRetried):
            self._round_retried(event)
        elif isinstance(event, AskPending):
            self._ask_pending(event)
        elif isinstance(event, AskAnswered):
            self._ask_answered(event)
        elif isinstance(event, (StopGateFeedback, ContextCompressed, Warning_)):
            self._run_event(event)
        elif isinstance(event, RunFinished):
            self._run_finished(event)
        elif isinstance(event, RunFailed):
            self._run_failed(event)

    @property
    def _root(self) -> OpenSpan:
        assert self._span is not None
        return self._span

    def _run_started(self, e: RunStarted) -> None:
        if self._capture and e.prompt:
            self._root.attributes["gen_ai.input.messages"] = _text_message("user", e.prompt)

    def _tools_offered(self, e: ToolsOffered) -> None:
        self._root.attributes["jupyter_agent.tools"] = list(e.tools)

    def _run_event(self, e: _SpanEvent) -> None:
        attrs: SpanAttributes = {k: v for k, v in e.__dict__.items()
                 if k not in ("t", "type") and isinstance(v, (str, int, float, bool))
                 and (self._capture or k in ("round", "method", "tokens_before",
                                             "tokens_after", "reason"))}
        self._root.event(f"jupyter_agent.{e.type}", attrs, e.t)

    # ------------------------------------------------------------------ model requests
    def _round_started(self, e: RoundStarted) -> None:
        if self._chats:
            self._end_chats(e.t)
        if not self._health.up:
            return  # the receiver went down during the run: make no more spans
        model = e.model or self._run.model
        self._chats[e.round] = OpenSpan(
            self._ex, f"chat {model}", SpanKind.CLIENT, self._root.context, e.t,
            {"gen_ai.operation.name": "chat", "gen_ai.provider.name": PROVIDER,
             "gen_ai.request.model": model})

    def _usage(self, e: UsageRecorded) -> None:
        span = self._chats.pop(e.round, None) if e.module == "agent_call" else None
        if span is None:
            return  # a compression call: counted in the run's totals
        a = span.attributes
        a["gen_ai.usage.input_tokens"] = e.input_tokens
        a["gen_ai.usage.output_tokens"] = e.output_tokens
        if e.response_model:
            a["gen_ai.response.model"] = e.response_model
        if e.finish_reason:
            a["gen_ai.response.finish_reasons"] = (e.finish_reason,)
        if e.response_id:
            a["gen_ai.response.id"] = e.response_id
        if e.priced:
            a["jupyter_agent.cost"] = e.cost
        if e.cached:  # answered from the answer cache: no call was made
            a["jupyter_agent.cached"] = True
        if self._capture:
            self._output_messages(span, e.round, e.finish_reason)
        span.end(e.t)

    def _round_retried(self, e: RoundRetried) -> None:
        span = self._chats.get(e.round)
        if span is not None:
            span.event("jupyter_agent.round_retried", {"reason": e.reason}, e.t)
        self._text.pop(e.round, None)

    def _end_chats(self, t: float) -> None:
        """A request whose usage never came (it failed): its span ends now."""
        for span in self._chats.values():
            span.error("no_response", "no response")
            span.end(t)
        self._chats.clear()

    def _text_delta(self, e: TextDelta) -> None:
        self._text.setdefault(e.round, []).append(e.text)

    def _tool_called(self, e: ToolCalled) -> None:
        self._calls[e.call_id] = (e.round, e.name, [e.arguments] if e.arguments else [])

    def _tool_args(self, e: ToolArgsDelta) -> None:
        call = self._calls.get(e.call_id)
        if call is not None:
            call[2].append(e.delta)

    def _output_messages(self, span: OpenSpan, round_: int, finish: str | None) -> None:
        parts: list[dict[str, str]] = []
        text = "".join(self._text.pop(round_, ()))
        if text:
            parts.append({"type": "text", "content": text})
        for cid, (r, name, args) in self._calls.items():
            if r == round_:
                parts.append({"type": "tool_call", "id": cid, "name": name,
                              "arguments": "".join(args)})
        span.attributes["gen_ai.output.messages"] = json.dumps(
            [{"role": "assistant", "parts": parts, "finish_reason": finish or ""}])

    # ------------------------------------------------------------------ tool calls
    def _tool_span(self, e: ToolStarted | ToolReturned, start: float) -> OpenSpan:
        attrs: SpanAttributes = {"gen_ai.operation.name": "execute_tool",
                                 "gen_ai.tool.name": e.name, "gen_ai.tool.call.id": e.call_id,
                                 "gen_ai.tool.type": "function"}
        if self._capture:
            call = self._calls.get(e.call_id)
            if call is not None:
                attrs["gen_ai.tool.call.arguments"] = "".join(call[2])
        return OpenSpan(self._ex, f"execute_tool {e.name}", SpanKind.INTERNAL,
                        self._root.context, start, attrs)

    def _tool_started(self, e: ToolStarted) -> None:
        if self._chats:
            self._end_chats(e.t)
        if not self._health.up:
            return
        span = self._tools[e.call_id] = self._tool_span(e, e.t)
        # Runs started while the tool runs, in its thread (a sub-agent), are its children.
        self._tokens[e.call_id] = _PARENT.set(span.context)

    def _tool_returned(self, e: ToolReturned) -> None:
        span = self._tools.pop(e.call_id, None)
        token = self._tokens.pop(e.call_id, None)
        if token is not None:
            try:
                _PARENT.reset(token)
            except ValueError:  # returned in another context (an interrupted call)
                pass
        if span is None:
            if not self._health.up:
                return
            # Never started (interrupted while queued, not run at the round limit).
            span = self._tool_span(e, e.t - e.seconds)
        if e.error:
            span.error(_error_type(e.error), e.error)
        if e.internal:
            span.attributes["jupyter_agent.tool.internal"] = True
        if self._capture:
            span.attributes["gen_ai.tool.call.result"] = e.output
        span.end(e.t)
        self._calls.pop(e.call_id, None)

    # ------------------------------------------------------------------ asks and the end
    def _ask_pending(self, e: AskPending) -> None:
        attrs: SpanAttributes = {"jupyter_agent.ask.kind": e.kind,
                                 "gen_ai.tool.call.id": e.call_id,
                                 "jupyter_agent.ask.options": len(e.options)}
        if self._capture:
            attrs["jupyter_agent.ask.question"] = e.question
            attrs["jupyter_agent.ask.option_texts"] = tuple(e.options)
        self._root.event("jupyter_agent.ask_pending", attrs, e.t)

    def _ask_answered(self, e: AskAnswered) -> None:
        attrs: SpanAttributes = {"gen_ai.tool.call.id": e.call_id, "jupyter_agent.ask.how": e.how}
        if e.option_index is not None:
            attrs["jupyter_agent.ask.option"] = e.option_index
        if self._capture:
            attrs["jupyter_agent.ask.answer"] = e.answer
        self._root.event("jupyter_agent.ask_answered", attrs, e.t)

    def _run_finished(self, e: RunFinished) -> None:
        span = self._root
        self._close_open(e.t)
        a = span.attributes
        a["jupyter_agent.run.status"] = e.status
        a["jupyter_agent.run.rounds"] = e.rounds
        a["gen_ai.usage.input_tokens"] = e.input_tokens
        a["gen_ai.usage.output_tokens"] = e.output_tokens
        a["jupyter_agent.cost"] = e.cost
        if e.finish_reason:
            a["gen_ai.response.finish_reasons"] = (e.finish_reason,)
        if e.status == "error":
            span.error("error", e.error or "error")
        elif e.status == "aborted":
            a["error.type"] = "aborted"
        if self._capture and e.answer:
            a["gen_ai.output.messages"] = _text_message(
                "assistant", e.answer, finish_reason=e.finish_reason or "")
        self._end(e.t)

    def _run_failed(self, e: RunFailed) -> None:
        span = self._root
        self._close_open(e.t)
        span.attributes["jupyter_agent.run.status"] = "error"
        span.error("error", e.error)
        self._end(e.t)

    def _close_open(self, t: float) -> None:
        self._end_chats(t)
        for span in self._tools.values():
            span.attributes["error.type"] = "unfinished"
            span.end(t)
        self._tools.clear()
        for token in self._tokens.values():
            try:
                _PARENT.reset(token)
            except ValueError:
                pass
        self._tokens.clear()

    def _end(self, t: float) -> None:
        self._done = True
        self._root.end(t)


def _error_type(error: str) -> str:
    """A short, low-cardinality ``error.type`` from a tool's error text."""
    head = error.strip().split(":", 1)[0].strip()
    return head[:60] if head and len(head) <= 60 and "\n" not in head else "tool_error"


class BatchTrace:
    """The span of one batch: its items' runs are its children (they start in threads that
    copy the context where it was opened)."""

    def __init__(self, ex: Exporting, *, batch_id: str, kind: str, items: int,
                 models: list[str]) -> None:
        self._span = OpenSpan(ex, f"batch {kind}", SpanKind.INTERNAL, _outer(), time.time(),
                              {"jupyter_agent.batch.id": batch_id,
                               "jupyter_agent.batch.kind": kind,
                               "jupyter_agent.batch.items": items,
                               "jupyter_agent.batch.models": tuple(models)})
        self._token: Token[SpanContext | None] | None = _PARENT.set(self._span.context)

    def end(self, status: str, error: str | None = None) -> None:
        """End the span with the batch's status (``done``, ``stopped``, ``error``)."""
        if self._token is None:
            return
        try:
            _PARENT.reset(self._token)
        except ValueError:
            _PARENT.set(None)
        self._token = None
        self._span.attributes["jupyter_agent.batch.status"] = status
        if status == "error":
            self._span.error("error", error or "error")
        elif error:
            self._span.attributes["jupyter_agent.batch.reason"] = mask(error)[:300]
        self._span.end(time.time())


def open_batch(ex: Exporting, *, batch_id: str, kind: str, items: int,
               models: list[str]) -> BatchTrace:
    """Open a batch's span (see :class:`BatchTrace`)."""
    return BatchTrace(ex, batch_id=batch_id, kind=kind, items=items, models=models)
