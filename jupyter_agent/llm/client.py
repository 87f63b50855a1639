"""One chat-completions call through the sync ``openai`` client, streamed or not.

Why ``client.post`` with a plain dict and not ``client.chat.completions.create``: the SDK walks
and transforms the whole message history on every request, which grows with every round of a
loop; we already hold the wire format. Streaming is read with ``iter_lines`` to the very end of
the body, so the connection goes back to the pool: the SDK's own stream closes it early, which
costs a new connection (a TLS handshake against a real API) on every streamed round.

Retries are ours (the SDK's are turned off) so they are bounded, visible and interruptible.

Every call also has a total wall-clock deadline (``deadline``, default 900 s): the SDK's
timeout is per read, so a server dripping keep-alive comments would otherwise never time out.
The deadline covers every attempt and every backoff of one call; when it passes the call ends
with the error ``Model request exceeded its N s deadline`` and is not retried (a retry would
get no time). Body bytes are read by us, never by the SDK, so the deadline applies to them
(see :mod:`jupyter_agent.llm._sse`).

Where a request goes is a :class:`~.protocol.Transport`: :class:`HttpTransport` by default;
a replay passes one that reads a cassette (:mod:`jupyter_agent.clients.replay`), so request
building, tool protocols, retries and stream assembly are the same code either way.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterable, Iterator
from types import ModuleType
from typing import Any

from ..errors import MissingKeyError
from ..secrets import mask, register_secret
from ._sse import (
    Deadline,
    DeadlineExceeded,
    HttpBody,
    StreamProblem,
    Watchdog,
    chunk_problem,
    completion_chunk,
    decode_json,
    sse_payloads,
)
from ._stream import StreamAssembler
from .limiter import limiter_for
from .profiles import ModelProfile, resolve_profile
from .protocol import Reply, Transport, TransportError
from .tokens import count_messages_tokens, count_text_tokens, count_tools_tokens
from .types import ChatRequest, ChatResponse, StreamCallback, ToolCall, Usage

__all__ = ["DEFAULT_DEADLINE", "OpenAIClient", "HttpTransport", "RetryPolicy", "wire_messages", "estimate_usage"]

_WIRE_KEYS = frozenset({"role", "content", "tool_calls", "tool_call_id", "name"})
_RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 520, 522, 524, 529})
DEFAULT_DEADLINE = 900.0
"""Seconds one call may take in all, retries included (``%config AgentMagics.request_deadline``)."""


class RetryPolicy:
    """Bounded exponential backoff with jitter."""

    def __init__(self, max_retries: int = 3, base_delay: float = 0.5, max_delay: float = 8.0):
        self.max_retries = max_retries
        self.base_delay = base_delay
        self.max_delay = max_delay

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``attempt`` (0-based)."""
        if retry_after is not None:
            return min(self.max_delay, max(0.0, retry_after))
        d = self.base_delay * (2.0**attempt) * (0.75 + random.random() / 2)
        return min(self.max_delay, d)  # jitter never pushes past the bound


def wire_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages as the API takes them: private keys (``hideInUI``…) removed, ``null`` content
    next to tool calls sent as ``""`` (llama.cpp and others answer HTTP 500 to ``null``).

    Messages that need no change are passed through as the same objects (no copy per round).
    """
    out = []
    for m in messages:
        if m.keys() <= _WIRE_KEYS and (m.get("content") is not None or m.get("role") != "assistant"):
            out.append(m)
            continue
        m = {k: v for k, v in m.items() if k in _WIRE_KEYS}
        if m.get("content") is None:
            m["content"] = ""
        out.append(m)
    return out


def estimate_usage(request: ChatRequest, text: str, reasoning: str, calls: list[ToolCall]) -> Usage:
    """Local token estimate for providers that report no usage."""
    out = count_text_tokens(text) + count_text_tokens(reasoning)
    for c in calls:
        out += 3 + count_text_tokens(c.name) + count_text_tokens(c.arguments)
    return Usage(
        input_tokens=count_messages_tokens(request.messages) + count_tools_tokens(request.tools),
        output_tokens=out,
        estimated=True,
    )


class _Retryable(TransportError):
    def __init__(self, message: str, status: int | None = None, retry_after: float | None = None):
        super().__init__(mask(message), status, retryable=True, retry_after=retry_after)


_CALL = threading.local()
"""``deadline``: the :class:`Deadline` of the call this thread is making, read by the transport
(a :class:`Transport` has no deadline parameter: a replay's needs none)."""


def _deadline() -> Deadline:
    current = getattr(_CALL, "deadline", None)
    return current if current is not None else Deadline(DEFAULT_DEADLINE)


class OpenAIClient:
    """Makes model calls for one profile (a :class:`~.protocol.ModelClient`). Create once and
    reuse: it pools connections.

    Args:
        profile: The model profile (or the name of a registered one).
        api_key: Overrides the profile's environment variable. Never logged or stored.
        base_url: Overrides ``OPENAI_BASE_URL`` and the profile's URL.
        retry: Backoff policy for 429, 5xx and connection errors.
        timeout: Seconds one network read (or connect) may wait.
        deadline: Seconds one call may take in all, whatever the server sends meanwhile
            (retries and backoff included; never retried once passed).
        transport: Where requests go instead of HTTP (a replay): no key is needed then, and
            the SDK is never loaded.
    """

    def __init__(
        self,
        profile: ModelProfile | str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        retry: RetryPolicy | None = None,
        timeout: float = 600.0,
        transport: Transport | None = None,
        deadline: float = DEFAULT_DEADLINE,
    ) -> None:
        import os

        if not deadline > 0:
            raise ValueError(f"deadline must be a positive number of seconds, not {deadline!r}")
        self.deadline = deadline
        self.profile = profile if isinstance(profile, ModelProfile) else resolve_profile(profile)
        self.base_url = base_url or self.profile.base_url or os.environ.get("OPENAI_BASE_URL") or None
        self.retry = retry or RetryPolicy()
        self.timeout = timeout
        if transport is None:
            key = api_key or self.profile.api_key()
            if not key:
                raise MissingKeyError(self.profile.api_key_env)
            register_secret(key)  # whatever it came from, it is masked in every output
            transport = HttpTransport(key, self.base_url, timeout)
        self.transport: Transport = transport

    def with_transport(self, transport: Transport) -> OpenAIClient:
        """A client like this one (profile, URL, retries, timeout) that sends through
        ``transport`` (a recording wraps this client's own transport)."""
        return OpenAIClient(self.profile, base_url=self.base_url, retry=self.retry,
                            timeout=self.timeout, transport=transport, deadline=self.deadline)

    # ------------------------------------------------------------------ public
    def cost(self, usage: Usage) -> float:
        """The cost of one call with ``usage`` under the profile's prices."""
        return self.profile.cost(usage)

    def build_body(self, request: ChatRequest) -> dict[str, Any]:
        """The JSON body for ``request`` (model defaults merged, quirks handled)."""
        caps = self.profile.capabilities
        body: dict[str, Any] = {"model": request.model or self.profile.model,
                                "messages": wire_messages(request.messages)}
        if request.tools:
            body["tools"] = request.tools
            if request.tool_choice is not None:
                body["tool_choice"] = request.tool_choice
            if request.parallel_tool_calls is not None:
                body["parallel_tool_calls"] = request.parallel_tool_calls
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.top_p is not None:
            body["top_p"] = request.top_p
        if request.max_tokens is not None:
            body["max_completion_tokens" if caps.max_completion_tokens else "max_tokens"] = (
                request.max_tokens
            )
        if request.stop:
            body["stop"] = request.stop
        if request.response_format is not None:
            body["response_format"] = request.response_format
        if request.stream:
            body["stream"] = True
            if caps.stream_usage:
                body["stream_options"] = {"include_usage": True}
        body.update(self.profile.default_config)
        body.update(request.extra)
        return body

    def complete(self, request: ChatRequest, on_delta: StreamCallback | None = None) -> ChatResponse:
        """Make one call. HTTP and connection errors are retried, then reported in
        ``response.error`` (never raised, never returned as text). A KeyboardInterrupt while
        streaming ends the call with ``aborted=True`` and ``finish_reason='close'``.

        For models without reliable native tool calls (``capabilities.tools`` False) the tools
        are offered through a JSON schema the server enforces, so every reply is either an
        answer or one well-formed call (see :mod:`jupyter_agent.llm.constrained`).
        """
        if request.tools and not self.profile.capabilities.tools:
            return self._complete_constrained(request, on_delta)
        return self._complete_plain(request, on_delta)

    def _complete_constrained(self, request: ChatRequest,
                              on_delta: StreamCallback | None) -> ChatResponse:
        from .constrained import ConstrainedStreamGate, parse_constrained_output, tool_call_grammar
        from .tool_prompt import rewrite_history, with_tool_prompt

        messages = with_tool_prompt(rewrite_history(request.messages, "json"), request.tools,
                                    "json")
        grammar = tool_call_grammar(request.tools, request.tool_choice)
        constrained = request.model_copy(update={
            "messages": messages, "tools": None, "tool_choice": None, "parallel_tool_calls": None,
            "response_format": {"type": "json_object", "schema": grammar}})
        gate = ConstrainedStreamGate()
        streamed: list[str] = []

        def relay(kind: str, data: dict[str, Any]) -> None:
            if on_delta is None:
                return
            if kind == "text":
                out = gate.feed(data["text"])
                if out:
                    streamed.append(out)
                    on_delta("text", {"text": out})
            elif kind == "reset":
                streamed.clear()
                on_delta(kind, data)
            elif kind != "tool_call" and kind != "tool_args":
                on_delta(kind, data)

        resp = self._complete_plain(constrained, relay)
        if resp.error:
            return resp
        answer, call = parse_constrained_output(resp.text,
                                                answer_only=request.tool_choice == "none")
        resp.text = answer or ""
        resp.tool_calls = [call] if call is not None else []
        if call is not None:
            resp.finish_reason = "tool_calls"
        elif on_delta is not None and resp.text and not streamed:
            on_delta("text", {"text": resp.text})  # e.g. "Tool call error: …" was never streamed
        return resp

    def _complete_plain(self, request: ChatRequest,
                        on_delta: StreamCallback | None = None) -> ChatResponse:
        body = self.build_body(request)
        start = time.perf_counter()
        deadline = Deadline(self.deadline)
        outer, _CALL.deadline = getattr(_CALL, "deadline", None), deadline
        try:
            return self._attempts(request, body, on_delta, deadline, start)
        finally:
            _CALL.deadline = outer

    def _attempts(self, request: ChatRequest, body: dict[str, Any],
                  on_delta: StreamCallback | None, deadline: Deadline,
                  start: float) -> ChatResponse:
        """Attempt the call, retrying per the policy within the deadline."""
        attempt = 0
        # Shared by every thread calling this server: a 429/5xx pauses them all (llm/limiter.py).
        limiter = limiter_for(self.base_url)
        while True:
            limiter.wait()
            try:
                resp = self._attempt(request, body, on_delta)
                resp.seconds = time.perf_counter() - start
                return resp
            except DeadlineExceeded:
                return ChatResponse(error=deadline.message(), seconds=time.perf_counter() - start)
            except StreamProblem as exc:
                return ChatResponse(error=str(exc), seconds=time.perf_counter() - start)
            except TransportError as exc:
                if not exc.retryable:
                    return ChatResponse(error=str(exc), status_code=exc.status,
                                        seconds=time.perf_counter() - start)
                pause = self.retry.delay(attempt, exc.retry_after)
                if exc.status is not None:  # the server answered "not now": nobody asks now
                    limiter.pause(pause)
                if attempt >= self.retry.max_retries:
                    return ChatResponse(
                        error=f"Model request failed after {attempt + 1} attempts: {exc}",
                        status_code=exc.status,
                        seconds=time.perf_counter() - start,
                    )
                if pause >= deadline.remaining():  # no time left for another attempt
                    return ChatResponse(
                        error=f"{deadline.message()} (after {attempt + 1} attempts; last: {exc})",
                        status_code=exc.status, seconds=time.perf_counter() - start)
                if on_delta is not None:
                    on_delta("retry", {"attempt": attempt + 1, "reason": str(exc)})
                if exc.status is None:
                    time.sleep(pause)  # a connection problem of this request only
                attempt += 1

    # ----------------------------------------------------------------- private
    def _attempt(self, request: ChatRequest, body: dict[str, Any],
                 on_delta: StreamCallback | None) -> ChatResponse:
        reply = self.transport.send(body, request.stream)
        if isinstance(reply, dict):
            return self._from_json(request, reply, on_delta)
        try:
            return self._assemble(request, reply, on_delta)
        finally:
            reply.close()

    def _assemble(self, request: ChatRequest, chunks: Iterable[dict[str, Any]],
                  on_delta: StreamCallback | None) -> ChatResponse:
        """Feed decoded chunks (from the wire, or recorded: a replay's transport) into one
        :class:`StreamAssembler` and build the response."""
        asm = StreamAssembler(on_delta, split_think=True)
        try:
            for chunk in chunks:
                if "error" in chunk and not chunk.get("choices"):
                    err = chunk["error"]
                    raise _Fatal(f"stream error: {err.get('message', err) if isinstance(err, dict) else err}")
                asm.add_chunk(chunk)
        except KeyboardInterrupt:
            asm.finish()
            return self._response(request, asm, aborted=True)
        except TransportError as exc:
            if exc.retryable and asm.emitted and on_delta is not None:
                on_delta("reset", {})  # the partial round is withdrawn before the retry
            raise
        asm.finish()
        return self._response(request, asm)

    def _response(self, request: ChatRequest, asm: StreamAssembler, aborted: bool = False) -> ChatResponse:
        text = "".join(asm.text_parts)
        reasoning = "".join(asm.reasoning_parts)
        calls = asm.tool_calls()
        usage = asm.usage or estimate_usage(request, text, reasoning, calls)
        return ChatResponse(text=text, reasoning=reasoning, tool_calls=calls,
                            finish_reason="close" if aborted else asm.finish_reason, usage=usage,
                            request_id=asm.request_id, aborted=aborted)

    def _from_json(self, request: ChatRequest, data: dict[str, Any],
                   on_delta: StreamCallback | None) -> ChatResponse:
        # Re-use the stream assembler so non-stream answers get the same <think> splitting.
        asm = StreamAssembler(on_delta, split_think=True)
        chunk = completion_chunk(data)
        problem = chunk_problem(chunk)
        if problem:
            raise StreamProblem(f"Model response is malformed: {problem}")
        asm.add_chunk(chunk)
        asm.finish()
        return self._response(request, asm)


class HttpTransport:
    """Requests over HTTP with the sync ``openai`` client's ``post`` (see the module doc).

    Args:
        api_key: The key sent with every request. Never logged or stored.
        base_url: ``None`` means the provider default.
        timeout: Seconds one network read may wait (the call's deadline may cut it shorter).
    """

    def __init__(self, api_key: str, base_url: str | None, timeout: float) -> None:
        import openai  # imported here: ~300 ms that `%load_ext` should not pay

        self._openai = openai
        self._sdk = openai.OpenAI(api_key=api_key, base_url=base_url, max_retries=0,
                                  timeout=timeout)
        self._timeout = timeout
        self._response_type = _httpx_module().Response
        self._transport_errors = _transport_errors()
        # What a lost connection raises while the body is read.
        self._read_errors: tuple[type[BaseException], ...] = (
            *self._transport_errors, openai.APIConnectionError)

    def send(self, body: dict[str, Any], stream: bool) -> Reply:
        """Post ``body``; the decoded JSON answer, or the stream of decoded chunks. Both are
        read under the current call's deadline, with a watchdog for a read that blocks."""
        http = self._post(body)
        deadline = _deadline()
        watchdog = Watchdog(http, deadline)
        if not stream:
            try:
                data = self._read_json(http, deadline)
            finally:
                watchdog.cancel()
                http.close()
            if not isinstance(data, dict):  # a shape problem: never retried (same answer again)
                raise StreamProblem(
                    f"Model response is a JSON {type(data).__name__}, not an object")
            return data
        return _SSEStream(self, http, watchdog)

    def _post(self, body: dict[str, Any]) -> HttpBody:
        """Send the request; returns the response once its headers are in, body unread.

        Body reading is always left to us (``stream=True`` to the SDK, also for non-streamed
        requests), so it happens under the deadline's watchdog. Until the headers arrive, each
        read waits at most the per-read timeout or the time left, whichever is shorter.
        """
        oa = self._openai
        deadline = _deadline()
        deadline.check()
        wait = max(0.001, min(self._timeout, deadline.remaining()))
        try:
            response: HttpBody = self._sdk.post(
                "/chat/completions", body=body, cast_to=self._response_type, stream=True,
                options={"timeout": wait})
            return response
        except oa.APIStatusError as exc:
            status = exc.status_code
            msg = _error_message(exc)
            if status in _RETRY_STATUS or status >= 500:
                raise _Retryable(f"HTTP {status}: {msg}", status, _retry_after(exc)) from None
            raise _Fatal(f"HTTP {status}: {msg}", status) from None
        except (oa.APIConnectionError, *self._transport_errors) as exc:
            deadline.check(_GRACE)  # a read timeout cut short by the deadline: not retried
            raise _Retryable(f"connection error: {_short(exc)}") from None

    def _read_json(self, http: HttpBody, deadline: Deadline) -> Any:
        """The decoded body of a non-streamed response (read under the deadline)."""
        raw = bytearray()
        try:
            for piece in http.iter_bytes():
                deadline.check()
                raw += piece
                if len(raw) > _MAX_BODY_BYTES:
                    raise StreamProblem(f"Model response is over {_MAX_BODY_BYTES >> 20} MiB")
        except self._read_errors as exc:
            deadline.check(_GRACE)
            raise _Retryable(f"connection lost while reading the response: {_short(exc)}") from None
        deadline.check()
        try:
            return decode_json(bytes(raw), "body")
        except StreamProblem as exc:
            if exc.retryable:  # e.g. a proxy's HTML error page: the next attempt may be fine
                raise _Retryable(f"invalid JSON response: {exc}") from None
            raise

    def _stream_chunks(self, http: HttpBody) -> Iterator[dict[str, Any]]:
        """The decoded SSE chunks of a streamed response, read to the end of the body.

        The deadline is checked on every read, keep-alive comments included; a malformed,
        too deep or too large chunk raises :class:`StreamProblem` (never retried: the same
        server would likely send it again, and the partial answer is withdrawn).
        """
        deadline = _deadline()
        try:
            for payload in sse_payloads(http.iter_bytes(), deadline):
                if payload == "[DONE]" or not payload:  # an empty data line is a heartbeat
                    continue  # keep reading to the end of the body: the connection is reused
                chunk = decode_json(payload)
                problem = chunk_problem(chunk)
                if problem:
                    raise StreamProblem(f"Model stream sent a malformed chunk: {problem}")
                yield chunk
        except self._read_errors as exc:
            deadline.check(_GRACE)  # the watchdog cut the connection: not a retryable loss
            raise _Retryable(f"connection lost mid-stream: {_short(exc)}") from None


class _SSEStream:
    """One streamed response: its chunks, and ``close`` to release the connection (even when
    the chunks were never read)."""

    def __init__(self, transport: HttpTransport, http: HttpBody, watchdog: Watchdog) -> None:
        self._transport = transport
        self._http = http
        self._watchdog = watchdog

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self._transport._stream_chunks(self._http)

    def close(self) -> None:
        self._watchdog.cancel()
        self._http.close()


_GRACE = 0.05
"""A transport error this close to the deadline is the deadline's doing (clamped timeout)."""
_MAX_BODY_BYTES = 64 * 1024 * 1024
"""Largest non-streamed response body read (a whole answer, so larger than one SSE chunk)."""


def _httpx_module() -> ModuleType:
    """The HTTP library the installed SDK uses (``httpx2`` in recent releases, else ``httpx``)."""
    try:
        import httpx2

        return httpx2
    except ImportError:
        import httpx

        return httpx


def _transport_errors() -> tuple[type[BaseException], ...]:
    import sys

    errs: list[type[BaseException]] = []
    for name in ("httpx2", "httpx", "httpcore2", "httpcore"):
        mod = sys.modules.get(name)
        err = getattr(mod, "TransportError", None) if mod is not None else None
        if err is None and mod is not None:
            err = getattr(mod, "NetworkError", None)
        if isinstance(err, type):
            errs.append(err)
    return tuple(errs)


class _Fatal(TransportError):
    def __init__(self, message: str, status: int | None = None):
        super().__init__(mask(message), status)


def _short(exc: BaseException) -> str:
    text = mask(str(exc)) or type(exc).__name__  # mask before cutting: no half key is left
    return text.splitlines()[0][:200]


def _error_message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and err.get("message"):
            return mask(str(err["message"]))[:300]
    return _short(exc)


def _retry_after(exc: Any) -> float | None:
    try:
        value = exc.response.headers.get("retry-after")
        return float(value) if value is not None else None
    except (AttributeError, ValueError):
        return None
