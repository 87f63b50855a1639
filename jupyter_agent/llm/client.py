"""One chat-completions call through the sync ``openai`` client, streamed or not.

Why ``client.post`` with a plain dict and not ``client.chat.completions.create``: the SDK walks
and transforms the whole message history on every request, which grows with every round of a
loop; we already hold the wire format. Streaming is read with ``iter_lines`` to the very end of
the body, so the connection goes back to the pool: the SDK's own stream closes it early, which
costs a new connection (a TLS handshake against a real API) on every streamed round.

Retries are ours (the SDK's are turned off) so they are bounded, visible and interruptible.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Iterable, Iterator
from typing import Any

from ..errors import MissingKeyError
from ._stream import StreamAssembler
from .limiter import limiter_for
from .profiles import ModelProfile, resolve_profile
from .tokens import count_messages_tokens, count_text_tokens, count_tools_tokens
from .types import ChatRequest, ChatResponse, StreamCallback, ToolCall, Usage

__all__ = ["ModelClient", "RetryPolicy", "wire_messages", "estimate_usage"]

_WIRE_KEYS = frozenset({"role", "content", "tool_calls", "tool_call_id", "name"})
_RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 520, 522, 524, 529})


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
        d = self.base_delay * (2**attempt) * (0.75 + random.random() / 2)
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


class _Retryable(Exception):
    def __init__(self, message: str, status: int | None = None, retry_after: float | None = None):
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


class ModelClient:
    """Makes model calls for one profile. Create once and reuse: it pools connections.

    Args:
        profile: The model profile (or its name).
        api_key: Overrides the profile's environment variable. Never logged or stored.
        base_url: Overrides ``OPENAI_BASE_URL`` and the profile's URL.
        retry: Backoff policy for 429, 5xx and connection errors.
        timeout: Seconds for one request.
    """

    def __init__(
        self,
        profile: ModelProfile | str | None = None,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        retry: RetryPolicy | None = None,
        timeout: float = 600.0,
    ) -> None:
        import os

        self.profile = profile if isinstance(profile, ModelProfile) else resolve_profile(profile)
        key = api_key or self.profile.api_key()
        if not key:
            raise MissingKeyError(self.profile.api_key_env)
        self.base_url = base_url or self.profile.base_url or os.environ.get("OPENAI_BASE_URL") or None
        self.retry = retry or RetryPolicy()
        self.timeout = timeout
        import openai  # imported here: ~300 ms that `%load_ext` should not pay

        self._openai = openai
        self._sdk = openai.OpenAI(api_key=key, base_url=self.base_url, max_retries=0,
                                  timeout=timeout)
        self._lock = threading.Lock()
        self._response_type = _httpx_module().Response
        self._transport_errors = _transport_errors()

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
        answer or one well-formed call (see :mod:`jupyter_agent.llm.prompt_tools`).
        """
        if request.tools and not self.profile.capabilities.tools:
            return self._complete_constrained(request, on_delta)
        return self._complete_plain(request, on_delta)

    def _complete_constrained(self, request: ChatRequest,
                              on_delta: StreamCallback | None) -> ChatResponse:
        from .prompt_tools import (
            ConstrainedStreamGate,
            parse_constrained_output,
            rewrite_history,
            tool_call_grammar,
            with_tool_prompt,
        )

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
        answer, call = parse_constrained_output(resp.text)
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
        attempt = 0
        # Shared by every thread calling this server: a 429/5xx pauses them all (llm/limiter.py).
        limiter = limiter_for(self.base_url)
        while True:
            limiter.wait()
            try:
                resp = self._attempt(request, body, on_delta)
                resp.seconds = time.perf_counter() - start
                return resp
            except _Retryable as exc:
                delay = self.retry.delay(attempt, exc.retry_after)
                if exc.status is not None:  # the server answered "not now": nobody asks now
                    limiter.pause(delay)
                if attempt >= self.retry.max_retries:
                    return ChatResponse(
                        error=f"Model request failed after {attempt + 1} attempts: {exc}",
                        status_code=exc.status,
                        seconds=time.perf_counter() - start,
                    )
                if on_delta is not None:
                    on_delta("retry", {"attempt": attempt + 1, "reason": str(exc)})
                if exc.status is None:
                    time.sleep(delay)  # a connection problem of this request only
                attempt += 1
            except _Fatal as exc:
                return ChatResponse(error=str(exc), status_code=exc.status,
                                    seconds=time.perf_counter() - start)

    # ----------------------------------------------------------------- private
    def _post(self, body: dict[str, Any], stream: bool) -> Any:
        oa = self._openai
        try:
            return self._sdk.post("/chat/completions", body=body, cast_to=self._response_type,
                                  stream=stream)
        except oa.APIStatusError as exc:
            status = exc.status_code
            msg = _error_message(exc)
            if status in _RETRY_STATUS or status >= 500:
                raise _Retryable(f"HTTP {status}: {msg}", status, _retry_after(exc)) from None
            raise _Fatal(f"HTTP {status}: {msg}", status) from None
        except (oa.APIConnectionError, *self._transport_errors) as exc:
            raise _Retryable(f"connection error: {_short(exc)}") from None

    def _attempt(self, request: ChatRequest, body: dict[str, Any],
                 on_delta: StreamCallback | None) -> ChatResponse:
        http = self._post(body, request.stream)
        if not request.stream:
            try:
                data = http.json()
            except ValueError as exc:
                raise _Retryable(f"invalid JSON response: {_short(exc)}") from None
            return self._from_json(request, data, on_delta)
        try:
            return self._assemble(request, self._stream_chunks(http), on_delta)
        finally:
            http.close()

    def _stream_chunks(self, http: Any) -> Iterator[dict[str, Any]]:
        """The decoded SSE chunks of a streamed response, read to the end of the body."""
        for line in http.iter_lines():
            if not line.startswith("data:"):
                continue
            payload = line[5:].strip()
            if payload == "[DONE]":
                continue  # keep reading to the end of the body: the connection is reused
            try:
                yield json.loads(payload)
            except ValueError:
                continue

    def _assemble(self, request: ChatRequest, chunks: Iterable[dict[str, Any]],
                  on_delta: StreamCallback | None) -> ChatResponse:
        """Feed decoded chunks (from the wire, or recorded: ``jupyter_agent.replay``) into one
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
        except (*self._transport_errors, self._openai.APIConnectionError) as exc:
            if asm.emitted and on_delta is not None:
                on_delta("reset", {})  # the partial round is withdrawn before the retry
            raise _Retryable(f"connection lost mid-stream: {_short(exc)}") from None
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
        choice = (data.get("choices") or [{}])[0]
        msg = choice.get("message") or {}
        delta = {"content": msg.get("content"), "reasoning_content": msg.get("reasoning_content"),
                 "tool_calls": [dict(tc, index=i) for i, tc in enumerate(msg.get("tool_calls") or [])]}
        asm.add_chunk({"id": data.get("id"), "usage": data.get("usage"),
                       "choices": [{"delta": delta, "finish_reason": choice.get("finish_reason")}]})
        asm.finish()
        return self._response(request, asm)


def _httpx_module() -> Any:
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


class _Fatal(Exception):
    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


def _short(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0][:200]


def _error_message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])[:300]
    return _short(exc)


def _retry_after(exc: Any) -> float | None:
    try:
        value = exc.response.headers.get("retry-after")
        return float(value) if value is not None else None
    except (AttributeError, ValueError):
        return None
