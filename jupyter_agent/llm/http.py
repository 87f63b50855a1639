"""The HTTP side of a model call: :class:`HttpTransport` posts a request body with the sync
``openai`` client and hands back the JSON body or the decoded stream chunks.

Body bytes are read by us, never by the SDK, so the call's total deadline applies to them (see
:mod:`jupyter_agent.llm._sse`); the deadline of the call this thread is making is set by
:meth:`~jupyter_agent.llm.client.OpenAIClient.complete` through :func:`call_deadline` (a
:class:`~.protocol.Transport` has no deadline parameter: a replay's needs none). Errors become
:class:`~.protocol.TransportError`, retryable or not, with the server's message masked.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import TYPE_CHECKING, Protocol, TypeVar

from ..base.fresh_stack import preimport
from ..base.jsontypes import JSONObject, JSONValue
from ..base.secrets import mask
from . import tls
from ._sse import (
    Deadline,
    HttpBody,
    StreamProblem,
    Watchdog,
    checked_chunk,
    decode_json,
    sse_payloads,
)
from .protocol import Reply, TransportError

if TYPE_CHECKING:
    # The SDK's HTTP library as installed for type checking (``httpx2``; an older SDK uses
    # ``httpx``, which has the same ``Client``): only its types are used here.
    import httpx2
    from openai import APIStatusError

_T = TypeVar("_T")  # what one socket operation returns

__all__ = ["DEFAULT_DEADLINE", "Fatal", "HttpTransport", "call_deadline", "cut_requests",
           "forget_cut"]

DEFAULT_DEADLINE = 900.0
"""Seconds one call may take in all, retries included (``%config AgentMagics.request_deadline``)."""
_RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 520, 522, 524, 529})


class _Retryable(TransportError):
    def __init__(self, message: str, status: int | None = None, retry_after: float | None = None):
        super().__init__(mask(message), status, retryable=True, retry_after=retry_after)


_CALL = threading.local()
"""``deadline``: the :class:`Deadline` of the call this thread is making, read by the transport
(a :class:`Transport` has no deadline parameter: a replay's needs none)."""


def _deadline() -> Deadline:
    current = getattr(_CALL, "deadline", None)
    return current if current is not None else Deadline(DEFAULT_DEADLINE)


@contextmanager
def call_deadline(deadline: Deadline) -> Iterator[None]:
    """Make ``deadline`` the one this thread's transport reads while the block runs."""
    outer, _CALL.deadline = getattr(_CALL, "deadline", None), deadline
    try:
        yield
    finally:
        _CALL.deadline = outer


class HttpTransport:
    """Requests over HTTP with the sync ``openai`` client's ``post`` (see the module doc).

    Args:
        api_key: The key sent with every request. Never logged or stored.
        base_url: ``None`` means the provider default.
        timeout: Seconds one network read may wait (the call's deadline may cut it shorter).
    """

    def __init__(self, api_key: str, base_url: str | None, timeout: float) -> None:
        httpx = _httpx_module()
        tls.prefetch(httpx)  # built while the SDK is imported (llm/tls.py)
        # Imported here, ~400 ms that `%load_ext` should not pay, from a fresh stack: from deep
        # in a notebook cell it took about 200 ms longer (_fresh_stack.py).
        preimport("openai")
        import openai

        self._openai = openai
        self._sdk = openai.OpenAI(api_key=api_key, base_url=base_url, max_retries=0,
                                  timeout=timeout, http_client=_http_client(openai, httpx))
        self._timeout = timeout
        self._response_type = httpx.Response
        self._transport_errors = _transport_errors()
        # What a lost connection raises while the body is read.
        self._read_errors: tuple[type[BaseException], ...] = (
            *self._transport_errors, openai.APIConnectionError)

    def send(self, body: JSONObject, stream: bool) -> Reply:
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

    def _post(self, body: JSONObject) -> HttpBody:
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
            raise Fatal(f"HTTP {status}: {msg}", status) from None
        except (oa.APIConnectionError, *self._transport_errors) as exc:
            deadline.check(_GRACE)  # a read timeout cut short by the deadline: not retried
            if _is_timeout(exc):
                raise _Retryable(_timed_out(wait, "waiting for the server")) from None
            raise _Retryable(f"connection error: {_short(exc)}") from None

    def _read_json(self, http: HttpBody, deadline: Deadline) -> JSONValue:
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
            if _is_timeout(exc):
                raise _Retryable(_timed_out(self._timeout, "reading the response")) from None
            raise _Retryable(f"connection lost while reading the response: {_short(exc)}") from None
        deadline.check()
        try:
            return decode_json(bytes(raw), "body")
        except StreamProblem as exc:
            if exc.retryable:  # e.g. a proxy's HTML error page: the next attempt may be fine
                raise _Retryable(f"invalid JSON response: {exc}") from None
            raise

    def _stream_chunks(self, http: HttpBody) -> Iterator[JSONObject]:
        """The decoded SSE chunks of a streamed response, read to the end of the body.

        The deadline is checked on every read, keep-alive comments included; a malformed,
        too deep or too large chunk raises :class:`StreamProblem` (never retried: the same
        server would likely send it again, and the partial answer is withdrawn).
        """
        deadline = _deadline()
        finished = False
        try:
            for payload in sse_payloads(http.iter_bytes(), deadline):
                if payload == "[DONE]":
                    finished = True
                if payload == "[DONE]" or not payload:  # an empty data line is a heartbeat
                    continue  # keep reading to the end of the body: the connection is reused
                yield checked_chunk(decode_json(payload), "Model stream sent a malformed chunk")
        except self._read_errors as exc:
            deadline.check(_GRACE)  # the watchdog cut the connection: not a retryable loss
            if _is_timeout(exc):
                raise _Retryable(_timed_out(self._timeout, "mid-stream")) from None
            raise _Retryable(f"connection lost mid-stream: {_short(exc)}") from None
        if not finished:
            # A body that just ends (no [DONE]) at the deadline was cut by the watchdog (a
            # server closing the connection to end its body): a timeout, not a short answer.
            deadline.check(_GRACE)


class _SSEStream:
    """One streamed response: its chunks, and ``close`` to release the connection (even when
    the chunks were never read)."""

    def __init__(self, transport: HttpTransport, http: HttpBody, watchdog: Watchdog) -> None:
        self._transport = transport
        self._http = http
        self._watchdog = watchdog

    def __iter__(self) -> Iterator[JSONObject]:
        return self._transport._stream_chunks(self._http)

    def close(self) -> None:
        self._watchdog.cancel()
        self._http.close()


_GRACE = 0.05
"""A transport error this close to the deadline is the deadline's doing (clamped timeout)."""
_MAX_BODY_BYTES = 64 * 1024 * 1024
"""Largest non-streamed response body read (a whole answer, so larger than one SSE chunk)."""


def _http_client(oa: ModuleType, httpx: ModuleType) -> httpx2.Client | None:
    """The SDK's default HTTP client (its timeouts, limits and redirects) over the shared TLS
    context (:mod:`.tls`), its connections tracked so a stop can cut them
    (:func:`cut_requests`); ``None`` (the SDK builds its own) when there is no context."""
    context = tls.shared_context(httpx)
    if context is None:
        return None
    client = _closing_client_class(oa)(verify=context)
    _track_connections(client)
    return client


# ---------------------------------------------------------------- "Stop now": cut a request
_READING: dict[int, socket.socket] = {}
"""Thread id -> the socket its model request is blocked on (sending, or waiting for bytes)."""
_CUT: set[int] = set()
"""Threads whose request was cut: their next (or current) socket operation raises
KeyboardInterrupt, which the loop reads as a stop (docs/behaviour.md §2)."""
_CUT_LOCK = threading.Lock()


def cut_requests(threads: Iterable[int], *, only_reading: bool = False) -> int:
    """Close the connection of the model request each of ``threads`` is making (a batch's
    "Stop now"): the request is not awaited; the thread's blocked read returns at once and
    raises KeyboardInterrupt, so its run ends ``aborted``. Returns how many requests were in
    flight (and are now closed). A thread not in a request now is marked: its next socket
    operation stops it the same way (until :func:`forget_cut`), unless ``only_reading``."""
    cut = 0
    with _CUT_LOCK:
        for ident in threads:
            sock = _READING.get(ident)
            if sock is None and only_reading:
                continue
            _CUT.add(ident)
            if sock is None:
                continue
            cut += 1
            try:
                sock.shutdown(socket.SHUT_RDWR)  # wakes a blocked recv; close() would not
            except OSError:
                pass  # already closed: nothing is blocked on it
    return cut


def forget_cut(ident: int) -> None:
    """Thread ``ident`` ends (or starts afresh): a cut marked for it no longer applies (a
    later thread may get the same id)."""
    with _CUT_LOCK:
        _CUT.discard(ident)


def _consume_cut(ident: int) -> bool:
    with _CUT_LOCK:
        cut = ident in _CUT
        _CUT.discard(ident)
    return cut


def _watched(op: Callable[[], _T], sock: object) -> _T:
    """Run one socket operation of this thread's request where :func:`cut_requests` can cut
    it; a cut one raises KeyboardInterrupt (whatever the cut socket made the operation do)."""
    ident = threading.get_ident()
    if _consume_cut(ident):
        raise KeyboardInterrupt
    if isinstance(sock, socket.socket):
        with _CUT_LOCK:
            _READING[ident] = sock
    try:
        out = op()
    except Exception:
        if _consume_cut(ident):
            raise KeyboardInterrupt from None
        raise
    finally:
        with _CUT_LOCK:
            _READING.pop(ident, None)
    if _consume_cut(ident):
        raise KeyboardInterrupt
    return out


class _NetworkStream(Protocol):
    """What is used of httpcore's ``NetworkStream`` (``httpcore`` or ``httpcore2``, whichever
    the SDK's HTTP library uses): the arguments of ``start_tls`` are passed through as
    httpcore gives them."""

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes: ...

    def write(self, buffer: bytes, timeout: float | None = None) -> None: ...

    def close(self) -> None: ...

    def start_tls(self, *args: object, **kwargs: object) -> _NetworkStream: ...

    def get_extra_info(self, info: str) -> object: ...


class _NetworkBackend(Protocol):
    """What is used of httpcore's ``NetworkBackend`` (arguments passed through)."""

    def connect_tcp(self, *args: object, **kwargs: object) -> _NetworkStream: ...

    def connect_unix_socket(self, *args: object, **kwargs: object) -> _NetworkStream: ...

    def sleep(self, seconds: float) -> None: ...


class _TrackedStream:
    """An httpcore network stream whose reads and writes :func:`cut_requests` can cut."""

    def __init__(self, inner: _NetworkStream) -> None:
        self._inner = inner

    def _sock(self) -> object:
        try:
            return self._inner.get_extra_info("socket")
        except Exception:  # noqa: BLE001 - a stream without one: not cuttable
            return None

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return bytes(_watched(lambda: self._inner.read(max_bytes, timeout), self._sock()))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        _watched(lambda: self._inner.write(buffer, timeout), self._sock())

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, *args: object, **kwargs: object) -> _TrackedStream:
        return _TrackedStream(self._inner.start_tls(*args, **kwargs))

    def get_extra_info(self, info: str) -> object:
        return self._inner.get_extra_info(info)


class _TrackingBackend:
    """httpcore's network backend, each connection a :class:`_TrackedStream`."""

    def __init__(self, inner: _NetworkBackend) -> None:
        self._inner = inner

    def connect_tcp(self, *args: object, **kwargs: object) -> _TrackedStream:
        return _TrackedStream(self._inner.connect_tcp(*args, **kwargs))

    def connect_unix_socket(self, *args: object, **kwargs: object) -> _TrackedStream:
        return _TrackedStream(self._inner.connect_unix_socket(*args, **kwargs))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def _track_connections(client: httpx2.Client) -> None:
    """Give ``client``'s connection pool the tracking backend. httpx builds the pool and its
    backend itself and offers no parameter for it, so this reaches into the pool; another
    version that moved them keeps working untracked (a stop then waits for the request)."""
    pool: object = getattr(getattr(client, "_transport", None), "_pool", None)
    backend = getattr(pool, "_network_backend", None)
    if backend is not None and not isinstance(backend, _TrackingBackend):
        setattr(pool, "_network_backend", _TrackingBackend(backend))  # noqa: B010 - pool is untyped


_CLOSING: dict[type, type[httpx2.Client]] = {}


def _closing_client_class(oa: ModuleType) -> type[httpx2.Client]:
    """``oa.DefaultHttpxClient`` closing its connections when dropped, as the client the SDK
    makes for itself does."""
    base = oa.DefaultHttpxClient
    if base not in _CLOSING:
        def __del__(self: httpx2.Client) -> None:
            try:
                if not self.is_closed:
                    self.close()
            except Exception:  # at interpreter exit, half torn down: nothing to save
                pass

        _CLOSING[base] = type("_ClosingHttpClient", (base,), {"__del__": __del__})
    return _CLOSING[base]


def _httpx_module() -> ModuleType:
    """The HTTP library the installed SDK uses (``httpx2`` in recent releases, else ``httpx``)."""
    try:
        preimport("httpx2")  # from a fresh stack, as the SDK (_fresh_stack.py)
        import httpx2

        return httpx2
    except ImportError:
        preimport("httpx")
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


class Fatal(TransportError):
    """An error not worth retrying (a 4xx, a stream that reports an error)."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(mask(message), status)


READ_TIMEOUT_SETTING = "%config AgentMagics.read_timeout"
"""Where a user raises how long one network read may wait (``settings.timeout``)."""


def _is_timeout(exc: BaseException) -> bool:
    """A read, connect or pool timeout of the HTTP library (or the SDK's wrapper of one)."""
    return any("Timeout" in cls.__name__ for cls in type(exc).__mro__)


def _timed_out(seconds: float, where: str) -> str:
    return (f"timed out after {seconds:g} s {where} (the read timeout; raise it with "
            f"{READ_TIMEOUT_SETTING})")


def _short(exc: BaseException) -> str:
    text = mask(str(exc)) or type(exc).__name__  # mask before cutting: no half key is left
    return text.splitlines()[0][:200]


def _error_message(exc: APIStatusError) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and err.get("message"):
            return mask(str(err["message"]))[:300]
    return _short(exc)


def _retry_after(exc: APIStatusError) -> float | None:
    try:
        value = exc.response.headers.get("retry-after")
        return float(value) if value is not None else None
    except (AttributeError, ValueError):
        return None
