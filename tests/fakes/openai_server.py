"""A scripted, real HTTP server speaking the OpenAI chat-completions protocol.

Tests, benchmarks and tutorials talk to it through the real ``openai`` client, so the whole
stack (HTTP/1.1 keep-alive, SSE parsing, retries, error mapping) runs for real. Each request
to ``POST /v1/chat/completions`` takes the next queued *turn*; a turn says what the "model"
answers (text, reasoning, tool calls, an HTTP error, a dropped connection, a hang). The same
turn is streamed as SSE chunks when the request has ``stream: true`` and sent as one JSON
completion otherwise.

Example::

    import openai
    from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls

    with ScriptedOpenAI() as srv:
        srv.enqueue(tool_calls([call("add", {"a": 1}, id="call_1")]), text("Done."))
        client = openai.OpenAI(base_url=srv.base_url, api_key="test-key", max_retries=0)
        first = client.chat.completions.create(model="m", messages=[...])
        assert srv.requests[0]["messages"] == [...]

From another process: ``python -m tests.fakes.openai_server --port 0 --script turns.json``
prints ``READY <base_url>``; the script file is a JSON list of turns (``turn.model_dump()``),
or ``{"turns": [...], "default": turn}``. ``ScriptedOpenAI.serve_subprocess`` wraps that.
The turn models and builders live in ``tests.fakes.turns`` and are re-exported here.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from tests.fakes.turns import (
    AUTO_ID,
    DisconnectTurn,
    DripTurn,
    ErrorTurn,
    HangTurn,
    MatchRule,
    MatchTurn,
    RawTurn,
    ScriptedCall,
    TextTurn,
    ToolCallsTurn,
    Turn,
    TurnLike,
    call,
    completion_message,
    disconnect,
    drip,
    empty,
    error,
    hang,
    match,
    pieces,
    raw,
    rule,
    stream_deltas,
    text,
    tool_calls,
    turn_from_json,
    usage_for,
)

if TYPE_CHECKING:  # annotations only, so Python 3.10 never imports it
    from typing import Self

__all__ = [  # the turn builders are re-exported: tests import everything from here
    "AUTO_ID", "NO_TURN_MESSAGE", "DisconnectTurn", "ErrorTurn", "HangTurn", "MatchRule",
    "MatchTurn", "ScriptedCall", "ScriptedOpenAI", "TextTurn", "ToolCallsTurn", "Turn",
    "TurnLike", "call", "disconnect", "empty", "error", "hang", "main", "match", "rule", "text",
    "tool_calls", "turn_from_json",
    "DripTurn", "RawTurn", "drip", "raw",
]

NO_TURN_MESSAGE = "scripted server: no turn queued"
_CHAT_PATHS = ("/v1/chat/completions", "/chat/completions")
_REPO_ROOT = Path(__file__).resolve().parents[2]


def _error_body(status: int, message: str) -> dict[str, Any]:
    kinds = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error",
             429: "rate_limit_error"}
    kind = kinds.get(status, "server_error" if status >= 500 else "invalid_request_error")
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


def _peer_closed(conn: socket.socket) -> bool:
    """Whether the client closed ``conn`` (readable with nothing to read, or reset)."""
    try:
        ready, _, _ = select.select([conn], [], [], 0)
        return bool(ready) and conn.recv(1, socket.MSG_PEEK) == b""
    except (OSError, ValueError):
        return True


class _Dropped(Exception):
    """Raised inside the handler to abandon a connection without any further bytes."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive for both Content-Length and chunked replies
    server: _HTTPServer

    def setup(self) -> None:
        super().setup()
        # Small SSE chunks must not wait for Nagle's algorithm (about 40 ms each otherwise).
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server.owner._opened(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.owner._closed(self.connection)

    def handle(self) -> None:
        try:
            super().handle()
        except (_Dropped, OSError):
            self.close_connection = True  # the client went away (or we dropped it on purpose)

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: request logs would be noise, and headers carry the API key."""

    def do_GET(self) -> None:
        owner = self.server.owner
        if not self._authorised():
            return
        if urlsplit(self.path).path.rstrip("/") in ("/v1/models", "/models"):
            model = {"id": owner.model, "object": "model", "created": 0, "owned_by": "scripted"}
            self._send_json(200, {"object": "list", "data": [model]})
        else:
            self._send_json(404, _error_body(404, f"no route GET {self.path}"))

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if len(raw) < length:  # the client went away mid-body (killed): no request was made
            raise _Dropped
        if urlsplit(self.path).path.rstrip("/") not in _CHAT_PATHS:
            self._send_json(404, _error_body(404, f"no route POST {self.path}"))
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = None
        if not isinstance(body, dict):
            self._send_json(400, _error_body(400, "request body is not a JSON object"))
            return
        owner = self.server.owner
        self._number = next(owner._ids)  # names the completion and its auto tool-call ids
        index = owner._record(body, {k.lower(): v for k, v in self.headers.items()})
        if not self._authorised():
            return
        try:
            turn = owner._next_turn(body)
        except Exception as exc:  # noqa: BLE001 - a scripted callable failed: tell the test
            self._send_json(500, _error_body(500, f"scripted server: {type(exc).__name__}: {exc}"))
            return
        if turn is None:
            self._send_json(500, _error_body(500, NO_TURN_MESSAGE))
            return
        if owner.latency and owner._stopping.wait(owner.latency):
            raise _Dropped  # shutting down
        self._answer(turn, body)
        with owner._lock:
            owner.answer_times[index] = time.monotonic()

    def _authorised(self) -> bool:
        auth = self.headers.get("Authorization", "")
        key = auth[7:].strip() if auth.startswith("Bearer ") else ""
        expected = self.server.owner.expected_key
        if not key or (expected is not None and key != expected):
            self._send_json(401, _error_body(401, "scripted server: missing or wrong API key"))
            return False
        return True

    def _answer(self, turn: Turn, body: dict[str, Any]) -> None:
        stream = bool(body.get("stream"))
        if isinstance(turn, MatchTurn):
            picked = turn.pick(body)
            if picked is None:
                return self._send_json(500, _error_body(500, NO_TURN_MESSAGE))
            return self._answer(picked, body)
        if isinstance(turn, HangTurn):
            if self.server.owner._hang(turn.seconds, self.connection):
                raise _Dropped  # shutting down, or the client hung up: nothing more to send
            turn = turn.then or empty()
            return self._answer(turn, body)
        if isinstance(turn, ErrorTurn):
            extra = {"Retry-After": f"{turn.retry_after:g}"} if turn.retry_after is not None else {}
            return self._send_json(turn.status, _error_body(turn.status, turn.message), extra)
        if isinstance(turn, DripTurn):
            return self._drip(turn, body, stream)
        if isinstance(turn, RawTurn):
            return self._raw(turn, stream)
        if isinstance(turn, DisconnectTurn):
            if stream:
                self._start_stream()
                for piece in pieces(turn.content, turn.chunk_size)[: turn.after_chunks]:
                    self._send_chunk(self._chunk(body, {"content": piece}))
            self.connection.shutdown(socket.SHUT_RDWR)
            raise _Dropped
        if not stream:
            completion = self._envelope(body, "chat.completion")
            message = completion_message(turn, f"call_{self._number}")
            completion["choices"] = [
                {"index": 0, "message": message, "finish_reason": turn.finish_reason}]
            if (usage := usage_for(turn, body)) is not None:
                completion["usage"] = usage
            return self._send_json(200, completion)
        self._start_stream()
        for delta in stream_deltas(turn, f"call_{self._number}"):
            self._send_chunk(self._chunk(body, delta), turn.delay)
        self._send_chunk(self._chunk(body, {}, turn.finish_reason), turn.delay)
        usage = usage_for(turn, body)
        if usage is not None and (body.get("stream_options") or {}).get("include_usage"):
            self._send_chunk({**self._envelope(body, "chat.completion.chunk"),
                              "choices": [], "usage": usage})
        self._write_chunked(b"data: [DONE]\n\n")
        self._write_chunked(b"")  # zero-length chunk: the body ends, the connection stays usable

    def _drip(self, turn: DripTurn, body: dict[str, Any], stream: bool) -> None:
        stopping = self.server.owner._stopping
        if stream and turn.close_delimited:
            self._close_framed = True
            self.close_connection = True
        if stream:
            self._start_stream()
            for piece in pieces(turn.before, 8) if turn.before else ():
                self._send_chunk(self._chunk(body, {"content": piece}))
        else:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
        end = time.monotonic() + turn.seconds
        while (left := end - time.monotonic()) > 0:
            if stopping.wait(min(left, turn.interval or left)):
                raise _Dropped
            if turn.interval is not None and time.monotonic() < end:
                self._write_chunked(b": keep-alive\n\n" if stream else b" ")
        if turn.stall and stopping.wait(turn.stall):
            raise _Dropped
        if not isinstance(turn.then, (TextTurn, ToolCallsTurn)):  # nothing (else) to say
            self._write_chunked(b"data: [DONE]\n\n" if stream else b"{}")
            self._write_chunked(b"")
            return
        if not stream:
            message = completion_message(turn.then, f"call_{self._number}")
            completion = {**self._envelope(body, "chat.completion"), "choices": [
                {"index": 0, "message": message, "finish_reason": turn.then.finish_reason}]}
            self._write_chunked(json.dumps(completion).encode())
            self._write_chunked(b"")
            return
        for delta in stream_deltas(turn.then, f"call_{self._number}"):
            self._send_chunk(self._chunk(body, delta))
        self._send_chunk(self._chunk(body, {}, turn.then.finish_reason))
        self._write_chunked(b"data: [DONE]\n\n")
        self._write_chunked(b"")

    def _raw(self, turn: RawTurn, stream: bool) -> None:
        if not stream:
            data = "".join(turn.payloads).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        self._start_stream()
        for payload in turn.payloads:
            self._write_chunked(b"data: " + payload.encode() + b"\n\n")
        self._write_chunked(b"data: [DONE]\n\n")
        self._write_chunked(b"")

    def _envelope(self, body: dict[str, Any], obj: str) -> dict[str, Any]:
        model = body.get("model") or self.server.owner.model
        return {"id": f"chatcmpl-scripted-{self._number}", "object": obj,
                "created": int(time.time()), "model": model}

    def _chunk(self, body: dict[str, Any], delta: dict[str, Any],
               finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return {**self._envelope(body, "chat.completion.chunk"), "choices": [choice]}

    def _send_json(self, status: int, payload: dict[str, Any],
                   headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _start_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        if getattr(self, "_close_framed", False):
            self.send_header("Connection", "close")
        else:
            self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _send_chunk(self, payload: dict[str, Any], delay: float = 0.0) -> None:
        if delay and self.server.owner._stopping.wait(delay):
            raise _Dropped
        self._write_chunked(b"data: " + json.dumps(payload).encode() + b"\n\n")

    def _write_chunked(self, data: bytes) -> None:
        if getattr(self, "_close_framed", False):  # the body ends when the connection closes
            self.wfile.write(data)
            return
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    owner: ScriptedOpenAI


class ScriptedOpenAI:
    """The scripted server; use ``with ScriptedOpenAI() as srv`` or ``start()``/``stop()``.

    Attributes read by tests: ``base_url``, ``requests`` (JSON bodies of every chat request in
    order, refused ones included), ``request_headers`` (lower-cased names; the Authorization
    value redacted),
    ``auth_present`` (one bool per request), ``connections`` (TCP connections accepted) and
    ``default`` (the turn used when the queue is empty; None means HTTP 500).
    """

    def __init__(self, *, model: str = "scripted-model", host: str = "127.0.0.1", port: int = 0,
                 expected_key: str | None = None, record_to: str | Path | None = None,
                 latency: float = 0.0) -> None:
        """``expected_key`` also rejects a wrong key; ``record_to`` appends bodies as JSON lines;
        ``latency`` is waited before answering each chat request (a slow model)."""
        self.model = model
        self.latency = latency
        self.expected_key = expected_key
        self.record_to = Path(record_to) if record_to else None
        self._address = (host, port)
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._woken = threading.Condition()
        self._releases = 0  # release_hangs() calls so far
        self._ids = itertools.count(1)
        self._sockets: set[socket.socket] = set()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.reset()

    def reset(self) -> None:
        """Forget queued turns, recorded requests, the connection count and ``default``."""
        with self._lock:
            self._queue: deque[TurnLike] = deque()
            self.default: TurnLike | None = None
            self.requests: list[dict[str, Any]] = []
            self.request_times: list[float] = []
            """``time.monotonic()`` at each request's arrival, in the order of ``requests``."""
            self.answer_times: dict[int, float] = {}
            """Request index -> ``time.monotonic()`` when its whole answer had been sent."""
            self.request_headers: list[dict[str, str]] = []
            self.auth_present: list[bool] = []
            self.connections = 0
            self.hung_up: list[float] = []
            """``time.monotonic()`` each time a client closed the connection of a request
            the server was holding (a ``hang`` turn): a client that cancels does."""

    def enqueue(self, *turns: TurnLike) -> None:
        """Queue turns; each chat-completions request consumes one, in order."""
        with self._lock:
            self._queue.extend(turns)

    @property
    def pending(self) -> int:
        """How many queued turns are still unused."""
        return len(self._queue)

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``, for ``openai.OpenAI(base_url=...)``."""
        if self._httpd is None:
            raise RuntimeError("ScriptedOpenAI is not started")
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> Self:
        """Bind the port and serve from a daemon thread."""
        self._stopping.clear()
        self._httpd = _HTTPServer(self._address, _Handler)
        self._httpd.owner = self
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={
            "poll_interval": 0.05}, name="scripted-openai", daemon=True)
        self._thread.start()
        return self

    def release_hangs(self) -> None:
        """Let the hanging turns answer now (with their ``then``)."""
        with self._woken:
            self._releases += 1
            self._woken.notify_all()

    def _hang(self, seconds: float, conn: socket.socket | None = None) -> bool:
        """Wait ``seconds``, or until :meth:`release_hangs`, a stop, or the client closing
        ``conn`` (recorded in :attr:`hung_up`); ``True`` when stopping or hung up."""
        end = time.monotonic() + seconds
        with self._woken:
            seen = self._releases
            while not (self._stopping.is_set() or self._releases != seen):
                left = end - time.monotonic()
                if left <= 0:
                    break
                if conn is not None and _peer_closed(conn):
                    with self._lock:
                        self.hung_up.append(time.monotonic())
                    return True
                self._woken.wait(timeout=min(left, 0.02))
        return self._stopping.is_set()

    def stop(self) -> None:
        """Stop serving, wake hanging turns and close open keep-alive connections."""
        if self._httpd is None:
            return
        self._stopping.set()
        with self._woken:
            self._woken.notify_all()
        self._httpd.shutdown()
        with self._lock:
            sockets = list(self._sockets)
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)  # wakes handler threads blocked on keep-alive reads
            except OSError:
                pass
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _opened(self, sock: socket.socket) -> None:
        with self._lock:
            self.connections += 1
            self._sockets.add(sock)

    def _closed(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.discard(sock)

    def _record(self, body: dict[str, Any], headers: dict[str, str]) -> int:
        present = headers.get("authorization", "").startswith("Bearer ")
        if "authorization" in headers:
            headers["authorization"] = "Bearer <redacted>"  # never keep or print the key
        with self._lock:
            self.request_times.append(time.monotonic())
            self.requests.append(body)
            self.request_headers.append(headers)
            self.auth_present.append(present)
            if self.record_to is not None:
                with self.record_to.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps(body) + "\n")
            return len(self.requests) - 1

    def _next_turn(self, body: dict[str, Any]) -> Turn | None:
        with self._lock:
            turn = self._queue.popleft() if self._queue else self.default
        while callable(turn):
            turn = turn(body)
        return turn

    @staticmethod
    def serve_subprocess(script_turns: Sequence[Turn], *, default: Turn | None = None,
                         model: str = "scripted-model", record_to: str | Path | None = None,
                         timeout: float = 30.0, latency: float = 0.0
                         ) -> tuple[subprocess.Popen[str], str]:
        """Run the CLI in a child process; returns ``(process, base_url)`` once it is READY.

        The child also exits when its stdin closes, so it never outlives a crashed parent.
        Stop it with ``process.stdin.close(); process.wait()`` (or ``terminate()``).
        """
        script = {"turns": [t.model_dump(mode="json") for t in script_turns],
                  "default": default.model_dump(mode="json") if default else None}
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
            json.dump(script, fh)
        cmd = [sys.executable, "-m", "tests.fakes.openai_server", "--port", "0",
               "--script", fh.name, "--model", model, "--exit-with-parent"]
        if record_to is not None:
            cmd += ["--record", str(record_to)]
        if latency:
            cmd += ["--latency", str(latency)]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            p for p in (str(_REPO_ROOT), os.environ.get("PYTHONPATH")) if p)}
        proc = subprocess.Popen(cmd, cwd=_REPO_ROOT, env=env, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True)
        lines: list[str] = []
        reader = threading.Thread(target=lambda: lines.append(proc.stdout.readline()), daemon=True)
        reader.start()
        reader.join(timeout)
        os.unlink(fh.name)
        ready = bool(lines) and lines[0].startswith("READY ")
        if not ready:
            proc.kill()
            proc.wait()
        reader.join()  # done: READY was read, or the kill ended the pipe
        proc.stdout.close()  # nothing follows READY; an open pipe would leak a file
        if not ready:
            raise RuntimeError(f"scripted server did not start (got {lines!r}; see stderr)")
        return proc, lines[0].split(" ", 1)[1].strip()


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry: serve a script of turns until terminated; prints ``READY <base_url>``."""
    parser = argparse.ArgumentParser(description="Scripted OpenAI chat-completions server.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port.")
    parser.add_argument("--script", type=Path, help="JSON list of turns, or {turns, default}.")
    parser.add_argument("--model", default="scripted-model")
    parser.add_argument("--record", type=Path, help="Append each request body here (JSONL).")
    parser.add_argument("--latency", type=float, default=0.0,
                        help="Seconds to wait before answering each chat request.")
    parser.add_argument("--exit-with-parent", action="store_true",
                        help="Exit when stdin reaches EOF (the parent closed it or died).")
    args = parser.parse_args(argv)
    srv = ScriptedOpenAI(model=args.model, host=args.host, port=args.port, record_to=args.record,
                         latency=args.latency)
    if args.script:
        script = json.loads(args.script.read_text(encoding="utf-8"))
        if isinstance(script, list):
            script = {"turns": script}
        srv.enqueue(*(turn_from_json(t) for t in script.get("turns", [])))
        if script.get("default"):
            srv.default = turn_from_json(script["default"])
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # run the finally below on terminate
    done = threading.Event()
    if args.exit_with_parent:
        threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()
    srv.start()
    print(f"READY {srv.base_url}", flush=True)
    try:
        done.wait()
    except KeyboardInterrupt:
        pass
    finally:
        srv.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
