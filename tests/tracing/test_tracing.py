"""The trace switch and hostile receivers (no receiver process needed).

* Off (no variable, no ``%agent trace``): a run imports nothing of OpenTelemetry; on, it does.
* A receiver that is down (port closed) or hangs (accepts, never answers): the runs finish as
  usual, one warning line is printed, never a traceback, and the next runs are not traced
  while it is down.
* ``%agent trace``: status, a URL, ``off``, and a bad URL as one line.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from IPython import get_ipython
from IPython.core.error import UsageError
from IPython.testing.globalipapp import start_ipython
from IPython.utils.capture import capture_output

from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls

pytestmark = pytest.mark.timeout(120)

ROOT = Path(__file__).resolve().parents[2]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again when the block ends


@pytest.fixture
def silent_receiver() -> Iterator[str]:
    """A receiver that accepts connections and never answers."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except OSError:
                continue
            held.append(conn)  # kept open, never read, never answered

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.getsockname()[1]}"
    stop.set()
    t.join(2)
    for c in held:
        c.close()
    srv.close()


@pytest.fixture
def short_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    from jupyter_agent.tracing import export

    monkeypatch.setattr(export, "EXPORT_TIMEOUT", 1.0)


def _two_tool_runs(server: ScriptedOpenAI, n: int = 2) -> list[object]:
    from jupyter_agent import toolloop
    from jupyter_agent.tools.registry import Tool

    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    runs = []
    for _ in range(n):
        server.enqueue(tool_calls([call("add", {"a": 1, "b": 2})]), text("3"))
        runs.append(toolloop("1+2?", tools=[Tool(add)]))
    return runs


def _wait_down(ex: object, timeout: float = 60.0) -> None:
    """Until an export failed (sent in the background: a loaded machine may take a while)."""
    import time

    deadline = time.monotonic() + timeout
    while ex.health.up and time.monotonic() < deadline:  # type: ignore[attr-defined]
        ex.flush()  # type: ignore[attr-defined]
        time.sleep(0.1)
    assert not ex.health.up  # type: ignore[attr-defined]


def _warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("jupyter-agent: traces")]


# --------------------------------------------------------------------------- off / on
_PROBE = """
import json, sys
from jupyter_agent import chat
run = chat("Hi")
print(json.dumps({"status": run.status,
                  "otel": sorted(m for m in sys.modules if m.startswith("opentelemetry"))[:3]}))
"""


def _python(server: ScriptedOpenAI, code: str, **env: str) -> subprocess.CompletedProcess[str]:
    import os

    base = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    base.update(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="sk-test-key-0123456789",
                PYTHONPATH=str(ROOT), **env)
    out = subprocess.run([sys.executable, "-c", code], env=base, capture_output=True,
                         text=True, timeout=90, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    return out


def _probe(server: ScriptedOpenAI, **env: str) -> dict[str, object]:
    server.enqueue(text("Hello."))
    out = _python(server, _PROBE, **env)
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_off_a_run_imports_nothing_of_opentelemetry_and_on_it_does(
        server: ScriptedOpenAI) -> None:
    off = _probe(server)
    assert off == {"status": "done", "otel": []}
    on = _probe(server, OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{_closed_port()}")
    assert on["status"] == "done" and on["otel"], on


_MISSING = """
import sys
sys.modules["opentelemetry.sdk"] = None  # as if the [otel] extra were not installed
from jupyter_agent import chat, tracing
from jupyter_agent.base.errors import ConfigError
statuses = [chat("Hi").status, chat("Hi").status]
try:
    tracing.set_endpoint("http://127.0.0.1:4318")
except ConfigError as exc:
    print("refused:", exc)
print(statuses)
"""


def test_without_the_otel_extra_runs_go_on_and_it_is_said_once(server: ScriptedOpenAI) -> None:
    server.enqueue(text("Hello."), text("Hello again."))
    out = _python(server, _MISSING,
                  OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{_closed_port()}")
    assert out.stdout.splitlines() == [
        "refused: Exporting traces needs OpenTelemetry: pip install 'jupyter-agent[otel]'",
        "['done', 'done']"]
    assert [line for line in out.stderr.splitlines() if line.strip()] == [
        "jupyter-agent: traces are not exported: OpenTelemetry is not installed "
        "(pip install 'jupyter-agent[otel]')."], out.stderr


# --------------------------------------------------------------------------- hostile receivers
def test_a_receiver_that_is_down_costs_one_line_and_no_run(
        server: ScriptedOpenAI, monkeypatch: pytest.MonkeyPatch, short_timeout: None,
        capsys: pytest.CaptureFixture[str]) -> None:
    from jupyter_agent.tracing import run_tracer, status
    from jupyter_agent.tracing.export import current

    url = f"http://127.0.0.1:{_closed_port()}"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)
    first, second = _two_tool_runs(server)
    assert first.status == second.status == "done"  # type: ignore[attr-defined]
    ex = current()
    assert ex is not None
    _wait_down(ex)
    assert ex.health.failures >= 1

    # While it is down, runs make no spans at all, and nothing more is printed.
    (third,) = _two_tool_runs(server, 1)
    assert third.status == "done"  # type: ignore[attr-defined]
    assert run_tracer(third) is None
    assert third.events[0].trace == ""  # type: ignore[attr-defined]
    ex.flush()
    err = capsys.readouterr().err
    lines = _warnings(err)
    assert len(lines) == 1, err
    assert lines[0].startswith(f"jupyter-agent: traces could not be sent to {url}/v1/traces (")
    assert "Traceback" not in err
    assert "not reached" in status()


def test_a_receiver_that_hangs_never_holds_a_run(
        server: ScriptedOpenAI, monkeypatch: pytest.MonkeyPatch, short_timeout: None,
        silent_receiver: str, capsys: pytest.CaptureFixture[str]) -> None:
    from jupyter_agent.tracing.export import current

    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", silent_receiver + "/v1/traces")
    runs = _two_tool_runs(server)
    assert [r.status for r in runs] == ["done", "done"]  # type: ignore[attr-defined]
    assert all(r.events[0].trace for r in runs)  # type: ignore[attr-defined]  # traced
    ex = current()
    assert ex is not None
    _wait_down(ex)
    err = capsys.readouterr().err
    assert len(_warnings(err)) == 1 and "Traceback" not in err, err


class _Sink:
    """A minimal OTLP/HTTP receiver on ``port``: decodes what it is sent, answers 200."""

    def __init__(self, port: int) -> None:
        import http.server

        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )

        names: list[str] = []
        self.names = names

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                req = ExportTraceServiceRequest.FromString(body)
                names.extend(s.name for r in req.resource_spans for ss in r.scope_spans
                             for s in ss.spans)
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_a_receiver_that_comes_back_gets_whole_runs_again(
        server: ScriptedOpenAI, monkeypatch: pytest.MonkeyPatch, short_timeout: None,
        capsys: pytest.CaptureFixture[str]) -> None:
    import time

    from jupyter_agent.tracing import export

    monkeypatch.setattr(export, "RETRY_SECONDS", 0.5)
    port = _closed_port()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{port}")
    _two_tool_runs(server)
    ex = export.current()
    assert ex is not None
    _wait_down(ex)
    sink = _Sink(port)  # the receiver is back
    try:
        time.sleep(0.6)  # the retry time passes
        (run,) = _two_tool_runs(server, 1)  # the first run after the retry time: whole
        assert run.status == "done" and run.events[0].trace  # type: ignore[attr-defined]
        deadline = time.monotonic() + 60
        while "execute_tool add" not in sink.names and time.monotonic() < deadline:
            ex.flush()
            time.sleep(0.1)
        # Whole runs, not just their top span: the request and the tool are there.
        assert {"invoke_agent toolloop", "chat gpt-4.1-mini", "execute_tool add"} <= set(
            sink.names), sink.names
        assert ex.health.up
    finally:
        sink.close()
    assert len(_warnings(capsys.readouterr().err)) == 1


# --------------------------------------------------------------------------- %agent trace
def test_agent_trace_status_url_off_and_a_bad_url(monkeypatch: pytest.MonkeyPatch) -> None:
    ip = start_ipython() or get_ipython()
    assert ip is not None
    ip.run_cell("%load_ext jupyter_agent")
    with capture_output() as cap:
        ip.run_cell("%agent trace")
    assert cap.stdout.strip() == ("Traces: off (set OTEL_EXPORTER_OTLP_ENDPOINT or use "
                                  "`%agent trace URL`).")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318/")
    with capture_output() as cap:
        ip.run_cell("%agent trace")
    assert cap.stdout.strip() == ("Traces: every run is exported to "
                                  "http://127.0.0.1:4318/v1/traces (from the environment), "
                                  "without message contents.")
    with capture_output() as cap:
        result = ip.run_cell("%agent trace localhost:6006")
    assert isinstance(result.error_in_exec, UsageError)
    lines = [x for x in cap.stderr.splitlines() if x.strip()]
    assert lines == ["UsageError: %agent trace: URL must be an http(s) URL of an OTLP "
                     "receiver, not 'localhost:6006'"], cap.stderr
    with capture_output() as cap:
        ip.run_cell("%agent trace http://127.0.0.1:6006/v1/traces")
        ip.run_cell("%agent trace")
    assert cap.stdout.splitlines() == [
        "Traces: every run is exported to http://127.0.0.1:6006/v1/traces.",
        "Traces: every run is exported to http://127.0.0.1:6006/v1/traces (from %agent "
        "trace), without message contents."]
    with capture_output() as cap:
        ip.run_cell("%agent trace off")
        ip.run_cell("%agent trace")
    assert "Traces: off (turned off with `%agent trace off`)." in cap.stdout
    from jupyter_agent.tracing import run_tracer

    assert run_tracer(object()) is None  # off wins over the environment


def test_credentials_in_a_receiver_url_are_never_printed(
        server: ScriptedOpenAI, monkeypatch: pytest.MonkeyPatch, short_timeout: None,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A hosted backend's URL may carry a user and password or a token in its query; the
    printed lines stay in the saved notebook."""
    from jupyter_agent.tracing.export import current

    ip = start_ipython() or get_ipython()
    assert ip is not None
    ip.run_cell("%load_ext jupyter_agent")
    url = f"http://alice:hunter2secret@127.0.0.1:{_closed_port()}/v1/traces?token=tok9secret"
    with capture_output() as cap:
        ip.run_cell(f"%agent trace {url}")
        ip.run_cell("%agent trace")
        ip.run_cell("%agent trace ftp://bob:pw7secret@host")
    first, second = _two_tool_runs(server)
    ex = current()
    assert ex is not None
    _wait_down(ex)
    with capture_output() as after:
        ip.run_cell("%agent trace")  # the status line with the last failure's reason
    assert "not reached" in after.stdout
    printed = cap.stdout + cap.stderr + after.stdout + "\n".join(capsys.readouterr())
    assert "every run is exported to http://***@127.0.0.1:" in cap.stdout
    assert "/v1/traces?***" in cap.stdout  # the path added before the query, not after it
    for secret in ("hunter2secret", "tok9secret", "pw7secret", "alice"):
        assert secret not in printed, printed
    ip.run_cell("%agent trace off")


def test_a_failure_reason_naming_the_url_hides_its_secrets(
        capsys: pytest.CaptureFixture[str]) -> None:
    """requests' ConnectionError names the URL (query included) in its message."""
    from jupyter_agent.tracing.export import Health

    h = Health("https://u:pw7secret@otel.example/v1/traces?token=tok9secret")
    h.failed("ConnectionError: Max retries exceeded with url: /v1/traces?token=tok9secret "
             "(u:pw7secret)")
    err = capsys.readouterr().err
    assert "tok9secret" not in err + h.last_error and "pw7secret" not in err + h.last_error
    assert "Max retries exceeded" in err


def test_the_content_switch_set_in_the_notebook_counts_from_the_next_run(
        server: ScriptedOpenAI, monkeypatch: pytest.MonkeyPatch) -> None:
    """``%agent trace`` reads the variable each time it prints; the runs must too, or the
    status line says "with message contents" while the spans have none."""
    from jupyter_agent import chat, tracing
    from jupyter_agent.tracing.export import exporting
    from jupyter_agent.tracing.runs import RunTracer

    url = tracing.set_endpoint(f"http://127.0.0.1:{_closed_port()}")
    try:
        server.enqueue(text("one"))
        run = chat("Hi")
        ex = exporting(url)
        assert ex is not None
        assert RunTracer(run, ex)._capture is False
        monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
        assert "with message contents" in tracing.status()
        assert exporting(url) is ex and RunTracer(run, ex)._capture is True
    finally:
        tracing.turn_off()


def test_a_batchs_error_reaches_its_span_masked(server: ScriptedOpenAI) -> None:
    """A batch's error is an exception's text (``batch/engine.py``), not a masked run event."""
    from jupyter_agent import tracing
    from jupyter_agent.tracing.export import exporting
    from jupyter_agent.tracing.runs import open_batch

    url = tracing.set_endpoint(f"http://127.0.0.1:{_closed_port()}")
    try:
        ex = exporting(url)
        assert ex is not None
        failed = open_batch(ex, batch_id="b1", kind="chat", items=1, models=["m"])
        failed.end("error", "RuntimeError: rejected key sk-test-key-0123456789")
        stopped = open_batch(ex, batch_id="b2", kind="chat", items=1, models=["m"])
        stopped.end("stopped", "budget: key sk-test-key-0123456789")
        assert "sk-test-key" not in str(failed._span.status.description)
        assert "RuntimeError: rejected key" in str(failed._span.status.description)
        assert "sk-test-key" not in str(stopped._span.attributes)
    finally:
        tracing.turn_off()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_makes_its_own_trace_ids() -> None:
    """A process pool's forked workers trace runs too: each must start new traces, not repeat
    its parent's ids (two runs' spans in one trace). Run in a fresh interpreter: forking this
    test process, with its threads, is not safe."""
    code = """
import os
from jupyter_agent.tracing import runs
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.write(w, b"%d" % runs._ids.getrandbits(64))
    os._exit(0)
os.waitpid(pid, 0)
print(os.read(r, 64).decode(), runs._ids.getrandbits(64))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, timeout=60, check=True).stdout.split()
    assert len(out) == 2 and out[0] != out[1]
