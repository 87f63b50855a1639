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
with the error ``Model request timed out after N s (the request deadline; raise it with %config
AgentMagics.request_deadline)`` and is not retried (a retry would
get no time). Body bytes are read by us, never by the SDK, so the deadline applies to them
(see :mod:`jupyter_agent.llm._sse`).

Where a request goes is a :class:`~.protocol.Transport`: :class:`~.http.HttpTransport` by default;
a replay passes one that reads a cassette (:mod:`jupyter_agent.clients.replay`), so request
building, tool protocols, retries and stream assembly are the same code either way.
"""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Iterable

from ..base.errors import MissingKeyError
from ..base.jsontypes import JSONObject, JSONValue
from ..base.secrets import register_secret
from ._sse import (
    Deadline,
    DeadlineExceeded,
    StreamProblem,
    checked_chunk,
    completion_chunk,
)
from ._stream import StreamAssembler
from .http import DEFAULT_DEADLINE, Fatal, HttpTransport, call_deadline
from .limiter import limiter_for
from .profiles import ModelProfile, resolve_profile
from .protocol import Transport, TransportError
from .structured import FINAL_ANSWER_TOOL
from .tokens import count_messages_tokens, count_text_tokens, count_tools_tokens
from .types import ChatRequest, ChatResponse, StreamCallback, ToolCall, Usage

__all__ = ["DEFAULT_DEADLINE", "OpenAIClient", "HttpTransport", "RetryPolicy", "wire_messages", "estimate_usage"]

_WIRE_KEYS = frozenset({"role", "content", "tool_calls", "tool_call_id", "name"})
_DEFAULT_URL = "https://api.openai.com/v1"
"""Where the openai client sends requests when no base URL is set (named in errors)."""


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


def wire_messages(messages: list[JSONObject]) -> list[JSONObject]:
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
        key = api_key
        if transport is None:
            key = api_key or self.profile.api_key()
            if not key:
                raise MissingKeyError(self.profile.api_key_env)
            register_secret(key)  # whatever it came from, it is masked in every output
            transport = HttpTransport(key, self.base_url, timeout)
        self.transport: Transport = transport
        # The answer cache's keys (clients/cache.py): the server and a hash of the key, so an
        # answer is never served to another key or URL; the key itself is in neither.
        self.cache_secret = hashlib.sha256(f"jupyter-agent-cache\0{key or ''}".encode()).hexdigest()
        self.cache_scope = (f"{self.base_url or ''}|{self.profile.model}|"
                            f"{hashlib.sha256(self.cache_secret.encode()).hexdigest()[:24]}")

    def with_transport(self, transport: Transport) -> OpenAIClient:
        """A client like this one (profile, URL, retries, timeout) that sends through
        ``transport`` (a recording wraps this client's own transport)."""
        twin = OpenAIClient(self.profile, base_url=self.base_url, retry=self.retry,
                            timeout=self.timeout, transport=transport, deadline=self.deadline)
        twin.cache_scope, twin.cache_secret = self.cache_scope, self.cache_secret
        return twin

    # ------------------------------------------------------------------ public
    def cost(self, usage: Usage) -> float:
        """The cost of one call with ``usage`` under the profile's prices."""
        return self.profile.cost(usage)

    def build_body(self, request: ChatRequest) -> JSONObject:
        """The JSON body for ``request`` (model defaults merged, quirks handled)."""
        caps = self.profile.capabilities
        messages: list[JSONValue] = [*wire_messages(request.messages)]
        body: JSONObject = {"model": request.model or self.profile.model, "messages": messages}
        if request.tools:
            body["tools"] = [*request.tools]
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
            body["stop"] = [*request.stop]
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
        if request.response_format is not None and request.response_format.get("type") == "json_schema":
            return self._complete_typed(request, on_delta)
        if request.tools and not self.profile.capabilities.tools:
            return self._complete_constrained(request, on_delta)
        return self._complete_plain(request, on_delta)

    def _complete_typed(self, request: ChatRequest,
                        on_delta: StreamCallback | None) -> ChatResponse:
        """A request for a typed answer, in the form this server takes (``llm/structured.py``):
        a grammar on the embedded model, the schema natively, or a forced ``final_answer``
        tool. The mode comes from the profile and from what the server answered to THIS
        request, never from an earlier one: a client shared by many runs keeps no mode. Only an
        error that names the response format (:func:`~.structured.schema_refused`) asks this
        request again with the tool, and says so; any other error (a context too long, a bad
        temperature) is returned as the server said it (docs/behaviour.md §10.14)."""
        from .structured import schema_refused, typed_request, typed_response

        caps = self.profile.capabilities
        if not caps.tools:
            grammar = typed_request(request, "grammar")
            if request.tools:  # the tool grammar wins; the turn's check asks again if needed
                grammar = grammar.model_copy(update={"response_format": None})
                return self._complete_constrained(grammar, on_delta)
            return self._complete_plain(grammar, on_delta)
        if caps.structured_output:
            resp = self._complete_plain(request, on_delta)
            if not schema_refused(resp):
                return resp
            if on_delta is not None:
                on_delta("warning", {"message": (
                    f"The server refused the JSON schema (HTTP {resp.status_code}: "
                    f"{resp.error}): this answer goes through a {FINAL_ANSWER_TOOL} tool "
                    "call instead.")})
        return typed_response(self._complete_plain(typed_request(request, "tool"), on_delta))

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

        def relay(kind: str, data: JSONObject) -> None:
            if on_delta is None:
                return
            if kind == "text":
                text = data["text"]
                out = gate.feed(text if isinstance(text, str) else "")
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
        with call_deadline(deadline):
            return self._attempts(request, body, on_delta, deadline, start)

    def _attempts(self, request: ChatRequest, body: JSONObject,
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
                        error=f"Model request failed after {attempt + 1} attempts: {exc}"
                              + self._unreachable_fix(exc),
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
    def _unreachable_fix(self, exc: TransportError) -> str:
        """What to do when the server could not be reached: its URL and where that is set
        (nothing for a server that answered, or one too slow: the read timeout names its
        own setting)."""
        if exc.status is not None or "timed out after" in str(exc):
            return ""
        url = self.base_url or _DEFAULT_URL
        if self.profile.base_url:  # the profile's own server (e.g. the embedded model's)
            return f". Is the server at {url} (model profile '{self.profile.name}') running?"
        return (f". Is the server at {url} running? Set OPENAI_BASE_URL or "
                "`%config AgentMagics.base_url = '...'` to use another one.")

    def _attempt(self, request: ChatRequest, body: JSONObject,
                 on_delta: StreamCallback | None) -> ChatResponse:
        reply = self.transport.send(body, request.stream)
        if isinstance(reply, dict):
            return self._from_json(request, reply, on_delta)
        try:
            return self._assemble(request, reply, on_delta)
        finally:
            reply.close()

    def _assemble(self, request: ChatRequest, chunks: Iterable[JSONObject],
                  on_delta: StreamCallback | None) -> ChatResponse:
        """Feed decoded chunks (from the wire, or recorded: a replay's transport) into one
        :class:`StreamAssembler` and build the response."""
        asm = StreamAssembler(on_delta, split_think=True)
        try:
            for chunk in chunks:
                if "error" in chunk and not chunk.get("choices"):
                    err = chunk["error"]
                    raise Fatal(f"stream error: {err.get('message', err) if isinstance(err, dict) else err}")
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
                            request_id=asm.request_id, model=asm.model, aborted=aborted)

    def _from_json(self, request: ChatRequest, data: JSONObject,
                   on_delta: StreamCallback | None) -> ChatResponse:
        # Re-use the stream assembler so non-stream answers get the same <think> splitting.
        asm = StreamAssembler(on_delta, split_think=True)
        chunk = checked_chunk(completion_chunk(data), "Model response is malformed")
        asm.add_chunk(chunk)
        asm.finish()
        return self._response(request, asm)
