"""Reading a model response off the wire safely: a total deadline, and chunks checked before use.

Why a deadline of our own: the HTTP timeout is per read, so a server that sends an SSE comment
(``: keep-alive``) every second and never answers would be waited on forever. The deadline is
wall-clock time for the whole call; it is checked on every network read (comments included)
and a watchdog shuts the socket down when it passes during a read that blocks.

Why chunks are checked: a chunk is untrusted input. A chunk nested 10 000 levels deep makes
``json.loads`` raise ``RecursionError``; a chunk whose ``choices`` is a string, or whose
``content`` is a list, would raise deep inside the assembler. Each such chunk becomes one
:class:`StreamProblem` with a one-line message instead.
"""

from __future__ import annotations

import heapq
import itertools
import json
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Protocol

from ..base.jsontypes import JSONObject, JSONValue

__all__ = ["MAX_LINE_BYTES", "Deadline", "DeadlineExceeded", "HttpBody", "StreamProblem",
           "Watchdog", "checked_chunk", "chunk_problem", "completion_chunk", "decode_json",
           "sse_payloads"]

MAX_LINE_BYTES = 16 * 1024 * 1024
"""Longest SSE line (one chunk) or non-streamed body accepted: 16 MiB. Real chunks are a few
hundred bytes; a longer one is a broken or hostile server, and buffering it would be unbounded."""


DEADLINE_SETTING = "%config AgentMagics.request_deadline"
"""Where a user raises the total deadline of one model call (``settings.request_deadline``)."""


class DeadlineExceeded(Exception):
    """The call's total deadline passed."""


class StreamProblem(Exception):
    """The response could not be read (a malformed, too deep or too large chunk).

    ``retryable`` is True only for text that is not JSON at all (in a non-streamed body, a
    proxy's error page is worth another attempt); structure problems are never retried.
    """

    def __init__(self, message: str, *, retryable: bool = False) -> None:
        super().__init__(message)
        self.retryable = retryable


class Deadline:
    """A wall-clock budget of ``seconds`` for one model call, started on creation."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._end = time.monotonic() + seconds

    def remaining(self) -> float:
        """Seconds left (never negative)."""
        return max(0.0, self._end - time.monotonic())

    def check(self, grace: float = 0.0) -> None:
        """Raise :class:`DeadlineExceeded` when the deadline has passed, or is less than
        ``grace`` seconds away (a timeout set to the time left may fire a hair early)."""
        if time.monotonic() + grace >= self._end:
            raise DeadlineExceeded(self.message())

    def message(self) -> str:
        """The one line a call cut by this deadline ends with: how long, and what to raise."""
        return (f"Model request timed out after {self.seconds:g} s (the request deadline; "
                f"raise it with {DEADLINE_SETTING})")


class HttpBody(Protocol):
    """What is used of an HTTP response whose body is still unread (``httpx`` or ``httpx2``,
    whichever the installed SDK uses)."""

    @property
    def extensions(self) -> Mapping[str, object]:
        ...

    def iter_bytes(self) -> Iterator[bytes]:
        ...

    def close(self) -> None:
        ...


class _Alarms:
    """One daemon thread that runs every due callback, in deadline order.

    A ``threading.Timer`` per model request cost a thread start per request: with 32 batch
    items in flight, each start waits for the new thread to get the interpreter lock, which
    made a batch measurably slower than a plain thread pool. Cancelled alarms stay in the heap
    until they come due or until they are half of it (then it is rebuilt), so a cancel is cheap.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, Callable[[], None]]] = []
        self._live: set[int] = set()  # scheduled, neither run nor cancelled
        self._ids = itertools.count()
        self._thread: threading.Thread | None = None

    def schedule(self, delay: float, fn: Callable[[], None]) -> int:
        """Run ``fn`` on the alarm thread in ``delay`` seconds; the id cancels it."""
        with self._cond:
            alarm = next(self._ids)
            heapq.heappush(self._heap, (time.monotonic() + delay, alarm, fn))
            self._live.add(alarm)
            if self._thread is None or not self._thread.is_alive():  # first use, or a fork
                self._thread = threading.Thread(target=self._loop, daemon=True,
                                                name="jupyter-agent-watchdog")
                self._thread.start()
            elif self._heap[0][1] == alarm:  # due before the one the thread waits for
                self._cond.notify()
            return alarm

    def cancel(self, alarm: int) -> None:
        """Do not run that alarm (a no-op once it ran)."""
        with self._cond:
            self._live.discard(alarm)
            if len(self._heap) > max(64, 2 * len(self._live)):
                self._heap = [a for a in self._heap if a[1] in self._live]
                heapq.heapify(self._heap)

    def _next(self) -> Callable[[], None]:
        with self._cond:
            while True:
                while self._heap and self._heap[0][1] not in self._live:
                    heapq.heappop(self._heap)
                now = time.monotonic()
                if self._heap and self._heap[0][0] <= now:
                    _, alarm, fn = heapq.heappop(self._heap)
                    self._live.discard(alarm)
                    return fn
                self._cond.wait(self._heap[0][0] - now if self._heap else None)

    def _loop(self) -> None:
        while True:
            fn = self._next()
            try:
                fn()
            except Exception:  # noqa: BLE001 - one failing alarm must not stop the others
                pass


_ALARMS = _Alarms()


class Watchdog:
    """Cuts a response's connection when the deadline passes, so a read blocked on a silent
    server returns at once (the per-read timeout alone could block for much longer).

    The socket comes from the ``network_stream`` response extension of httpcore; without it
    (another transport) the response is closed instead, and the per-read timeout, which the
    client caps at the deadline, still bounds the wait. Every watchdog shares one alarm thread.
    """

    def __init__(self, http: HttpBody, deadline: Deadline) -> None:
        self.fired = False
        self._http = http
        self._alarm = _ALARMS.schedule(deadline.remaining(), self._fire)

    def _fire(self) -> None:
        self.fired = True
        sock = None
        try:
            stream = self._http.extensions.get("network_stream")
            extra_info = getattr(stream, "get_extra_info", None)  # httpcore's NetworkStream
            sock = extra_info("socket") if callable(extra_info) else None
        except Exception:  # noqa: BLE001 - any transport: fall back to closing
            sock = None
        try:
            if isinstance(sock, socket.socket):
                sock.shutdown(socket.SHUT_RDWR)  # wakes a blocked recv; close() would not
            else:
                self._http.close()
        except Exception:  # noqa: BLE001 - already closed: nothing is blocked on it
            pass

    def cancel(self) -> None:
        _ALARMS.cancel(self._alarm)


def sse_payloads(pieces: Iterable[bytes], deadline: Deadline) -> Iterator[str]:
    """The payload of every ``data:`` line, in order; comments and other fields skipped.

    ``pieces`` are the body's bytes as they arrive. The deadline is checked on each piece, so a
    server that keeps the connection busy with comments still runs out of time.
    """
    buf = bytearray()
    scan = 0  # where to look for the next newline: bytes before it hold none
    for piece in pieces:
        deadline.check()
        buf += piece
        start = 0
        while (nl := buf.find(b"\n", scan)) >= 0:
            line = bytes(buf[start:nl])
            start = scan = nl + 1
            if len(line) > MAX_LINE_BYTES:
                raise _too_large()
            if line.startswith(b"data:"):
                yield line[5:].strip().decode("utf-8", errors="replace")
        if start:
            del buf[:start]
        scan = len(buf)
        if len(buf) > MAX_LINE_BYTES:
            raise _too_large()
    if buf.startswith(b"data:"):  # a last line without its newline
        yield bytes(buf[5:]).strip().decode("utf-8", errors="replace")


def _too_large() -> StreamProblem:
    return StreamProblem(f"Model stream sent a chunk over {MAX_LINE_BYTES // (1024 * 1024)} MiB; "
                         "the response was dropped")


def decode_json(text: str | bytes, what: str = "chunk") -> JSONValue:
    """``json.loads`` that fails with a one-line :class:`StreamProblem` (too deep included).

    Callers bound the size first (``sse_payloads`` per line, the client per body).
    """
    try:
        value: JSONValue = json.loads(text)
        return value
    except RecursionError:
        raise StreamProblem(f"Model response {what} is nested too deeply to read") from None
    except ValueError as exc:
        head = text[:60] if isinstance(text, str) else text[:60].decode("utf-8", "replace")
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        raise StreamProblem(f"Model response {what} is not valid JSON ({reason}): "
                            f"{head!r}", retryable=True) from None


def completion_chunk(data: JSONValue) -> JSONObject:
    """A non-streamed completion as one stream chunk (checked with :func:`chunk_problem`)."""
    if not isinstance(data, dict):
        raise StreamProblem(f"Model response is a JSON {type(data).__name__}, not an object")
    choices = data.get("choices") or [{}]
    choice = choices[0] if isinstance(choices, list) else None
    msg = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(choice, dict) or not isinstance(msg, (dict, type(None))):
        raise StreamProblem("Model response is malformed: 'choices' holds no message object")
    msg = msg or {}
    calls = msg.get("tool_calls") or []
    if not isinstance(calls, list) or not all(isinstance(tc, dict) for tc in calls):
        raise StreamProblem("Model response is malformed: 'tool_calls' is not a list of objects")
    tool_calls: list[JSONValue] = [{**tc, "index": i} for i, tc in enumerate(calls)
                                   if isinstance(tc, dict)]  # all are (checked above)
    delta: JSONObject = {"content": msg.get("content"),
                         "reasoning_content": msg.get("reasoning_content"),
                         "tool_calls": tool_calls}
    return {"id": data.get("id"), "model": data.get("model"), "usage": data.get("usage"),
            "choices": [{"delta": delta, "finish_reason": choice.get("finish_reason")}]}


_STR = (str, type(None))
_NUM = (int, float, type(None))


def checked_chunk(chunk: JSONValue, what: str) -> JSONObject:
    """``chunk`` as the object it must be; a :class:`StreamProblem` saying ``what: why`` when
    :func:`chunk_problem` finds one."""
    problem = chunk_problem(chunk)
    if problem is not None or not isinstance(chunk, dict):
        raise StreamProblem(f"{what}: {problem}")
    return chunk


def chunk_problem(chunk: JSONValue) -> str | None:
    """Why a decoded stream chunk cannot be used, or ``None`` when its shape is fine.

    Only the fields the assembler reads are checked; unknown fields are ignored, whatever
    they hold.
    """
    if not isinstance(chunk, dict):
        return f"a chunk is a JSON {type(chunk).__name__}, not an object"
    if not isinstance(chunk.get("id"), _STR):
        return "'id' is not a string"
    usage = chunk.get("usage")
    if usage is not None and not (
            isinstance(usage, dict) and all(isinstance(usage.get(k), _NUM) and
                                            not isinstance(usage.get(k), bool)
                                            for k in ("prompt_tokens", "completion_tokens"))):
        return "'usage' is not an object of token counts"
    choices = chunk.get("choices")
    if choices is None:
        return None
    if not isinstance(choices, list):
        return "'choices' is not a list"
    for choice in choices:
        if not isinstance(choice, dict):
            return "a choice is not an object"
        if not isinstance(choice.get("finish_reason"), _STR):
            return "'finish_reason' is not a string"
        delta = choice.get("delta")
        if delta is None:
            continue
        if not isinstance(delta, dict):
            return "'delta' is not an object"
        for key in ("content", "reasoning_content", "reasoning"):
            if not isinstance(delta.get(key), _STR):
                return f"'delta.{key}' is not a string"
        problem = _tool_calls_problem(delta.get("tool_calls"))
        if problem:
            return problem
    return None


def _tool_calls_problem(calls: JSONValue) -> str | None:
    if calls is None:
        return None
    if not isinstance(calls, list):
        return "'tool_calls' is not a list"
    for tc in calls:
        if not isinstance(tc, dict):
            return "a tool call is not an object"
        index = tc.get("index")
        if not isinstance(index, (int, type(None))) or isinstance(index, bool):
            return "a tool call 'index' is not a whole number"
        if not isinstance(tc.get("id"), _STR):
            return "a tool call 'id' is not a string"
        fn = tc.get("function")
        if fn is None:
            continue
        if not isinstance(fn, dict):
            return "a tool call 'function' is not an object"
        if not isinstance(fn.get("name"), _STR) or not isinstance(fn.get("arguments"), _STR):
            return "a tool call's name or arguments is not a string"
    return None
