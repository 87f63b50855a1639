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
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextvars import ContextVar, Token
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import (
    NonRecordingSpan,
    Span,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    TraceFlags,
)

from ..events import BaseEvent
from .export import Exporting

__all__ = ["RunTracer", "BatchTrace", "open_batch", "traceparent", "parent_context"]

PROVIDER = "openai"
"""``gen_ai.provider.name``: every model is reached through the OpenAI-compatible API."""

_PARENT: ContextVar[Span | None] = ContextVar("jupyter_agent_trace_parent", default=None)
"""The span a run started here hangs under: a running tool call's, or a batch's."""


def _ns(t: float) -> int:
    return int(t * 1e9)


def traceparent(span: Span) -> str:
    """The W3C ``traceparent`` of ``span``."""
    c = span.get_span_context()
    return f"00-{c.trace_id:032x}-{c.span_id:016x}-{int(c.trace_flags):02x}"


def parent_context(value: str) -> Context | None:
    """The context of a saved ``traceparent`` (``None`` when it is not one)."""
    parts = value.split("-")
    if len(parts) != 4 or len(parts[1]) != 32 or len(parts[2]) != 16:
        return None
    try:
        trace_id, span_id, flags = int(parts[1], 16), int(parts[2], 16), int(parts[3], 16)
    except ValueError:
        return None
    if not trace_id or not span_id:
        return None
    ctx = SpanContext(trace_id=trace_id, span_id=span_id, is_remote=True,
                      trace_flags=TraceFlags(flags))
    return trace.set_span_in_context(NonRecordingSpan(ctx))


def _text_message(role: str, text: str, **extra: Any) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}], **extra}])


class RunTracer:
    """The listener that exports one part of a run (see the module's docstring)."""

    def __init__(self, run: Any, ex: Exporting) -> None:
        self._run = run
        self._tracer = ex.tracer
        self._health = ex.health
        self._capture = ex.capture
        self._span: Span | None = None
        self._ctx: Context | None = None
        self._done = False
        self._chats: dict[int, Span] = {}
        self._tools: dict[str, Span] = {}
        self._tokens: dict[str, Token[Span | None]] = {}
        # Contents, kept only when they are captured.
        self._text: dict[int, list[str]] = {}
        self._calls: dict[str, tuple[int, str, list[str]]] = {}
        handlers: dict[str, Callable[[Any], None]] = {
            "run_started": self._run_started, "tools_offered": self._tools_offered,
            "round_started": self._round_started, "usage": self._usage,
            "round_retried": self._round_retried, "tool_started": self._tool_started,
            "tool_returned": self._tool_returned, "ask_pending": self._ask_pending,
            "ask_answered": self._ask_answered, "stop_gate_feedback": self._run_event,
            "context_compressed": self._run_event, "warning": self._run_event,
            "run_finished": self._run_finished, "run_failed": self._run_failed}
        if self._capture:
            handlers.update(text_delta=self._text_delta, tool_called=self._tool_called,
                            tool_args_delta=self._tool_args)
        self._handlers = handlers

    # ------------------------------------------------------------------ the run's span
    def begin(self, t: float | None = None) -> str:
        """Open the run's span (a new run: under a running tool call or batch, if any)."""
        self._open(t, parent=None)
        return traceparent(self._span) if self._span is not None else ""

    def _open(self, t: float | None, parent: Context | None) -> Span:
        run = self._run
        if parent is None:
            outer = _PARENT.get()
            # No span of ours around: the caller's own OpenTelemetry context, if any.
            parent = trace.set_span_in_context(outer) if outer is not None else None
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": run.agent,
            "gen_ai.provider.name": PROVIDER, "gen_ai.request.model": run.model,
            "jupyter_agent.run.id": run.run_id}
        if run.session:
            attrs["gen_ai.conversation.id"] = run.session
        span = self._tracer.start_span(f"invoke_agent {run.agent}", context=parent,
                                       kind=SpanKind.INTERNAL, attributes=attrs,
                                       start_time=_ns(t) if t is not None else None)
        self._span = span
        self._ctx = trace.set_span_in_context(span)
        return span

    def _resumed_parent(self) -> Context | None:
        """The span of the run's part before this one (its ``run_started`` keeps it)."""
        for event in reversed(self._run.events):
            value = getattr(event, "trace", "")
            if getattr(event, "type", "") == "run_started" and value:
                return parent_context(value)
        return None

    def __call__(self, event: BaseEvent) -> None:
        d = event.__dict__
        handler = self._handlers.get(d["type"])
        if handler is None or self._done:
            return
        if self._span is None:  # a resumed part: its first event opens its span
            span = self._open(d["t"], parent=self._resumed_parent())
            span.set_attribute("jupyter_agent.run.resumed", True)
        handler(event)

    def _run_started(self, e: Any) -> None:
        if self._capture and e.prompt:
            self._span.set_attribute("gen_ai.input.messages",  # type: ignore[union-attr]
                                     _text_message("user", e.prompt))

    def _tools_offered(self, e: Any) -> None:
        self._span.set_attribute("jupyter_agent.tools", list(e.tools))  # type: ignore[union-attr]

    def _run_event(self, e: Any) -> None:
        attrs = {k: v for k, v in e.__dict__.items()
                 if k not in ("t", "type") and isinstance(v, (str, int, float, bool))
                 and (self._capture or k in ("round", "method", "tokens_before",
                                             "tokens_after", "reason"))}
        self._span.add_event(f"jupyter_agent.{e.type}", attrs,  # type: ignore[union-attr]
                             timestamp=_ns(e.t))

    # ------------------------------------------------------------------ model requests
    def _round_started(self, e: Any) -> None:
        self._end_chats(e.t)
        if not self._health.up:
            return  # the receiver went down during the run: make no more spans
        attrs: dict[str, Any] = {"gen_ai.operation.name": "chat",
                                 "gen_ai.provider.name": PROVIDER,
                                 "gen_ai.request.model": e.model or self._run.model,
                                 "jupyter_agent.round": e.round}
        if e.tool_choice:
            attrs["jupyter_agent.tool_choice"] = e.tool_choice
        self._chats[e.round] = self._tracer.start_span(
            f"chat {e.model or self._run.model}", context=self._ctx, kind=SpanKind.CLIENT,
            attributes=attrs, start_time=_ns(e.t))

    def _usage(self, e: Any) -> None:
        span = self._chats.pop(e.round, None) if e.module == "agent_call" else None
        if span is None:
            return  # a compression call: counted in the run's totals
        span.set_attribute("gen_ai.usage.input_tokens", e.input_tokens)
        span.set_attribute("gen_ai.usage.output_tokens", e.output_tokens)
        if e.response_model:
            span.set_attribute("gen_ai.response.model", e.response_model)
        if e.finish_reason:
            span.set_attribute("gen_ai.response.finish_reasons", [e.finish_reason])
        if e.response_id:
            span.set_attribute("gen_ai.response.id", e.response_id)
        if e.priced:
            span.set_attribute("jupyter_agent.cost", e.cost)
        if self._capture:
            self._output_messages(span, e.round, e.finish_reason)
        span.end(_ns(e.t))

    def _round_retried(self, e: Any) -> None:
        span = self._chats.get(e.round)
        if span is not None:
            span.add_event("jupyter_agent.round_retried", {"reason": e.reason},
                           timestamp=_ns(e.t))
        self._text.pop(e.round, None)

    def _end_chats(self, t: float) -> None:
        """A request whose usage never came (it failed): its span ends now."""
        if self._chats:
            for span in self._chats.values():
                span.set_status(Status(StatusCode.ERROR, "no response"))
                span.set_attribute("error.type", "no_response")
                span.end(_ns(t))
            self._chats.clear()

    def _text_delta(self, e: Any) -> None:
        self._text.setdefault(e.round, []).append(e.text)

    def _tool_called(self, e: Any) -> None:
        self._calls[e.call_id] = (e.round, e.name, [e.arguments] if e.arguments else [])

    def _tool_args(self, e: Any) -> None:
        call = self._calls.get(e.call_id)
        if call is not None:
            call[2].append(e.delta)

    def _output_messages(self, span: Span, round_: int, finish: str | None) -> None:
        parts: list[dict[str, Any]] = []
        text = "".join(self._text.pop(round_, ()))
        if text:
            parts.append({"type": "text", "content": text})
        for cid, (r, name, args) in self._calls.items():
            if r == round_:
                parts.append({"type": "tool_call", "id": cid, "name": name,
                              "arguments": "".join(args)})
        span.set_attribute("gen_ai.output.messages", json.dumps(
            [{"role": "assistant", "parts": parts, "finish_reason": finish or ""}]))

    # ------------------------------------------------------------------ tool calls
    def _tool_started(self, e: Any) -> None:
        if self._chats:
            self._end_chats(e.t)
        if not self._health.up:
            return
        attrs: dict[str, Any] = {"gen_ai.operation.name": "execute_tool",
                                 "gen_ai.tool.name": e.name, "gen_ai.tool.call.id": e.call_id,
                                 "gen_ai.tool.type": "function"}
        if self._capture:
            call = self._calls.get(e.call_id)
            if call is not None:
                attrs["gen_ai.tool.call.arguments"] = "".join(call[2])
        span = self._tracer.start_span(f"execute_tool {e.name}", context=self._ctx,
                                       kind=SpanKind.INTERNAL, attributes=attrs,
                                       start_time=_ns(e.t))
        self._tools[e.call_id] = span
        # Runs started while the tool runs, in its thread (a sub-agent), are its children.
        self._tokens[e.call_id] = _PARENT.set(span)

    def _tool_returned(self, e: Any) -> None:
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
            span = self._tracer.start_span(
                f"execute_tool {e.name}", context=self._ctx, kind=SpanKind.INTERNAL,
                attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": e.name,
                            "gen_ai.tool.call.id": e.call_id, "gen_ai.tool.type": "function"},
                start_time=_ns(e.t - e.seconds))
        if e.error:
            span.set_attribute("error.type", _error_type(e.error))
            span.set_status(Status(StatusCode.ERROR, e.error[:300]))
        if e.internal:
            span.set_attribute("jupyter_agent.tool.internal", True)
        if self._capture:
            span.set_attribute("gen_ai.tool.call.result", e.output)
        span.end(_ns(e.t))
        self._calls.pop(e.call_id, None)

    # ------------------------------------------------------------------ asks and the end
    def _ask_pending(self, e: Any) -> None:
        attrs: dict[str, Any] = {"jupyter_agent.ask.kind": e.kind,
                                 "gen_ai.tool.call.id": e.call_id,
                                 "jupyter_agent.ask.options": len(e.options)}
        if self._capture:
            attrs["jupyter_agent.ask.question"] = e.question
            attrs["jupyter_agent.ask.option_texts"] = list(e.options)
        self._span.add_event("jupyter_agent.ask_pending", attrs,  # type: ignore[union-attr]
                             timestamp=_ns(e.t))

    def _ask_answered(self, e: Any) -> None:
        attrs: dict[str, Any] = {"gen_ai.tool.call.id": e.call_id, "jupyter_agent.ask.how": e.how}
        if e.option_index is not None:
            attrs["jupyter_agent.ask.option"] = e.option_index
        if self._capture:
            attrs["jupyter_agent.ask.answer"] = e.answer
        self._span.add_event("jupyter_agent.ask_answered", attrs,  # type: ignore[union-attr]
                             timestamp=_ns(e.t))

    def _run_finished(self, e: Any) -> None:
        span = self._span
        assert span is not None
        self._close_open(e.t)
        span.set_attribute("jupyter_agent.run.status", e.status)
        span.set_attribute("jupyter_agent.run.rounds", e.rounds)
        span.set_attribute("gen_ai.usage.input_tokens", e.input_tokens)
        span.set_attribute("gen_ai.usage.output_tokens", e.output_tokens)
        span.set_attribute("jupyter_agent.cost", e.cost)
        if e.finish_reason:
            span.set_attribute("gen_ai.response.finish_reasons", [e.finish_reason])
        if e.status == "error":
            span.set_attribute("error.type", "error")
            span.set_status(Status(StatusCode.ERROR, (e.error or "error")[:300]))
        elif e.status == "aborted":
            span.set_attribute("error.type", "aborted")
        if self._capture and e.answer:
            span.set_attribute("gen_ai.output.messages", _text_message(
                "assistant", e.answer, finish_reason=e.finish_reason or ""))
        self._end(e.t)

    def _run_failed(self, e: Any) -> None:
        span = self._span
        assert span is not None
        self._close_open(e.t)
        span.set_attribute("jupyter_agent.run.status", "error")
        span.set_attribute("error.type", "error")
        span.set_status(Status(StatusCode.ERROR, e.error[:300]))
        self._end(e.t)

    def _close_open(self, t: float) -> None:
        self._end_chats(t)
        for cid in list(self._tools):
            span = self._tools.pop(cid)
            span.set_attribute("error.type", "unfinished")
            span.end(_ns(t))
        for token in self._tokens.values():
            try:
                _PARENT.reset(token)
            except ValueError:
                pass
        self._tokens.clear()

    def _end(self, t: float) -> None:
        self._done = True
        self._span.end(_ns(t))  # type: ignore[union-attr]


def _error_type(error: str) -> str:
    """A short, low-cardinality ``error.type`` from a tool's error text."""
    head = error.strip().split(":", 1)[0].strip()
    return head[:60] if head and len(head) <= 60 and "\n" not in head else "tool_error"


class BatchTrace:
    """The span of one batch: its items' runs are its children (they start in threads that
    copy the context where it was opened)."""

    def __init__(self, ex: Exporting, *, batch_id: str, kind: str, items: int,
                 models: list[str]) -> None:
        outer = _PARENT.get()
        self._span = ex.tracer.start_span(
            f"batch {kind}", kind=SpanKind.INTERNAL,
            context=None if outer is None else trace.set_span_in_context(outer),
            attributes={"jupyter_agent.batch.id": batch_id, "jupyter_agent.batch.kind": kind,
                        "jupyter_agent.batch.items": items,
                        "jupyter_agent.batch.models": list(models)})
        self._token: Token[Span | None] | None = _PARENT.set(self._span)

    def end(self, status: str, error: str | None = None) -> None:
        """End the span with the batch's status (``done``, ``stopped``, ``error``)."""
        if self._token is None:
            return
        try:
            _PARENT.reset(self._token)
        except ValueError:
            _PARENT.set(None)
        self._token = None
        self._span.set_attribute("jupyter_agent.batch.status", status)
        if status == "error":
            self._span.set_attribute("error.type", "error")
            self._span.set_status(Status(StatusCode.ERROR, (error or "error")[:300]))
        elif error:
            self._span.set_attribute("jupyter_agent.batch.reason", error[:300])
        self._span.end()


def open_batch(ex: Exporting, *, batch_id: str, kind: str, items: int,
               models: list[str]) -> BatchTrace:
    """Open a batch's span (see :class:`BatchTrace`)."""
    return BatchTrace(ex, batch_id=batch_id, kind=kind, items=items, models=models)
