"""The OpenTelemetry side: one span processor per receiver URL, and a receiver that is down.

Spans go through a ``BatchSpanProcessor`` (a bounded queue, sent from its own thread every
half second) to the OTLP/HTTP exporter, whose requests give up after a few seconds. So a run
never waits for the receiver. When an export fails (refused, no answer in time, an HTTP
error), one line says so on stderr and runs are not traced for :data:`RETRY_SECONDS`: a
receiver that is down costs a run nothing, not even the making of spans. The next run after
that tries again; the line comes back only after the receiver was reached in between.

The exporter's own log messages (one per failed batch, retries included) are kept from the
output; the last one gives the reason in our line.

This module imports OpenTelemetry; ``tracing/__init__.py`` imports it only once tracing is on.
"""

from __future__ import annotations

import atexit
import logging
import os
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

try:  # the [otel] extra; the package imports this module only when tracing is on
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        SpanExporter,
        SpanExportResult,
    )
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope
except ImportError as exc:  # caught by tracing._exporting, which says it once
    raise ImportError("tracing needs the OpenTelemetry SDK: pip install "
                      "'jupyter-agent[otel]'") from exc

from ..base.state import STATE
from .switch import say_sdk_missing, shown_url

__all__ = ["Exporting", "Health", "exporting", "health_line", "RETRY_SECONDS",
           "EXPORT_TIMEOUT", "QUEUE_SIZE"]

RETRY_SECONDS = 30.0
"""After a failed export, runs are not traced for this long (then the next run tries)."""
EXPORT_TIMEOUT = 3.0
"""Seconds one export request may take, retries included (unless
``OTEL_EXPORTER_OTLP_TRACES_TIMEOUT`` or ``OTEL_EXPORTER_OTLP_TIMEOUT`` says otherwise)."""
QUEUE_SIZE = 4096
"""Spans waiting to be sent at most; more are dropped (a run never waits for the queue)."""
SCHEDULE_MS = 500
"""How often waiting spans are sent."""
_LOGGERS = ("opentelemetry.exporter", "opentelemetry.sdk.trace.export")


class Health:
    """Whether the receiver was reachable at the last export, and the one warning line."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.up = True
        self.retry_at = 0.0
        self.warned = False
        self.sent = 0
        """Batches the receiver accepted."""
        self.failures = 0
        self.last_error = ""
        self._lock = threading.Lock()

    def recording(self) -> bool:
        """Whether a run starting now should make spans (not while the receiver is down)."""
        if self.up:
            return True
        if time.monotonic() < self.retry_at:
            return False
        self.up = True  # time to try again: the next export tells (no second line if not)
        return True

    def succeeded(self) -> None:
        with self._lock:
            self.up, self.warned = True, False
            self.sent += 1

    def failed(self, reason: str) -> None:
        # An HTTP library's message names the URL: its user, password and query stay out of
        # the warning and the status line (both end up in the saved notebook).
        parts = urlsplit(self.url)
        for secret in (parts.password, parts.query, parts.fragment):
            if secret and len(secret) >= 4:  # a shorter one would mangle the words around it
                reason = reason.replace(secret, "***")
        with self._lock:
            self.failures += 1
            self.last_error = reason
            say, self.warned = not self.warned, True
        if say:  # one line, never a traceback; the run that made the spans goes on regardless
            try:
                sys.stderr.write(f"jupyter-agent: traces could not be sent to {shown_url(self.url)} "
                                 f"({reason}); runs go on untraced, sending is tried again in "
                                 f"{RETRY_SECONDS:g} s.\n")
            except Exception:  # a closed stream at exit must not break the export thread
                pass
        with self._lock:  # down from now on (after the line: whoever sees it down sees it)
            self.up = False
            self.retry_at = time.monotonic() + RETRY_SECONDS


class _Reasons(logging.Handler):
    """Keeps the exporter's last message (the reason of a failure) instead of printing it."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.last = ""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.last = record.getMessage()
        except Exception:
            self.last = str(record.msg)

    def take(self) -> str:
        text, self.last = self.last, ""
        return text


_REASONS = _Reasons()


def _quiet_exporter_logs() -> None:
    for name in _LOGGERS:
        log = logging.getLogger(name)
        if _REASONS not in log.handlers:
            log.addHandler(_REASONS)
        log.propagate = False


class _GuardedExporter(SpanExporter):
    """The OTLP exporter behind a breaker: a down receiver is not asked again for a while,
    an exception is a failure like any other, and failures are told once (:class:`Health`)."""

    def __init__(self, inner: SpanExporter, health: Health) -> None:
        self._inner = inner
        self._health = health

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        h = self._health
        if not h.up and time.monotonic() < h.retry_at:
            return SpanExportResult.FAILURE  # down a moment ago: drop, do not wait again
        try:
            result = self._inner.export(spans)
        except Exception as exc:
            h.failed(_one_line(f"{type(exc).__name__}: {exc}"))
            return SpanExportResult.FAILURE
        if result is SpanExportResult.SUCCESS:
            h.succeeded()
        else:
            h.failed(_one_line(_REASONS.take() or "the receiver refused the spans"))
        return result

    def shutdown(self) -> None:
        try:
            self._inner.shutdown()
        except Exception:
            pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def _one_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[0][:200] if lines else "unknown error"


@dataclass
class Exporting:
    """The span processor, resource and health of one receiver URL.

    Spans are handed to the processor finished (``tracing/runs.py`` builds them as the SDK's
    ``ReadableSpan`` when a span ends): the SDK's live ``Span`` objects, with a lock per
    attribute and a sampler per span, cost a loop round more than the whole span needs.
    """

    url: str
    processor: BatchSpanProcessor
    resource: Resource
    scope: InstrumentationScope
    health: Health

    def flush(self, timeout: float = 5.0) -> bool:
        """Send every finished span now (tests, the end of a notebook)."""
        return bool(self.processor.force_flush(int(timeout * 1000)))

    def close(self) -> None:
        """Send what is left (not waiting for a receiver that is down) and stop."""
        try:
            # the SDK's BatchSpanProcessor.shutdown carries no annotations
            self.processor.shutdown()  # type: ignore[no-untyped-call]
        except Exception:
            pass


class _Exports:
    """The STATE slot: the processor in use (one URL at a time)."""

    def __init__(self) -> None:
        self.current: Exporting | None = None
        self.lock = threading.Lock()

    def clear(self) -> None:
        with self.lock:
            current, self.current = self.current, None
        if current is not None:
            current.close()


_EXPORTS: _Exports = STATE.slot("tracing.exports", _Exports)


def _timeout() -> float | None:
    """``None`` (the exporter reads it) when the environment sets a timeout."""
    if os.environ.get("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT") or \
            os.environ.get("OTEL_EXPORTER_OTLP_TIMEOUT"):
        return None
    return EXPORT_TIMEOUT


def _make(url: str) -> Exporting:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    # The package's version without importing the edge (it is loaded: it imported us).
    __version__ = str(getattr(sys.modules.get("jupyter_agent"), "__version__", ""))
    attrs: dict[str, str] = {"service.version": __version__}
    if not os.environ.get("OTEL_SERVICE_NAME"):
        attrs["service.name"] = "jupyter-agent"
    health = Health(url)
    _quiet_exporter_logs()
    # Headers (an API key for a hosted backend) come from OTEL_EXPORTER_OTLP_(TRACES_)HEADERS,
    # which the exporter reads itself.
    inner = OTLPSpanExporter(endpoint=url, timeout=_timeout())
    processor = BatchSpanProcessor(
        _GuardedExporter(inner, health), max_queue_size=QUEUE_SIZE,
        schedule_delay_millis=SCHEDULE_MS, max_export_batch_size=512,
        export_timeout_millis=int(EXPORT_TIMEOUT * 1000))
    made = Exporting(url, processor, Resource.create(attrs),
                     InstrumentationScope("jupyter_agent", __version__), health)
    atexit.register(made.close)  # what is queued at the end of the kernel is still sent
    return made


def exporting(url: str) -> Exporting | None:
    """The processor for ``url`` (made once; a new URL replaces the old one), or ``None``
    when the ``[otel]`` extra is missing (said once)."""
    ex = _EXPORTS
    with ex.lock:
        current = ex.current
        if current is not None and current.url == url:
            return current
        try:
            made = _make(url)
        except ImportError:  # the exporter is missing (the SDK was found)
            say_sdk_missing()
            return None
        ex.current = made
    if current is not None:
        current.close()
    return made


def current() -> Exporting | None:
    """The processor in use, if a run was exported since the process started."""
    return _EXPORTS.current


def health_line() -> str:
    """`` Last export: ...`` for ``%agent trace`` (empty before the first export)."""
    cur = _EXPORTS.current
    if cur is None:
        return ""
    h = cur.health
    if not h.up:
        return f" The receiver was not reached: {h.last_error}."
    if h.sent:
        return f" {h.sent} batch(es) of spans accepted so far."
    return ""
