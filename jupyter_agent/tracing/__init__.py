"""Runs exported as OpenTelemetry GenAI spans to any OTLP/HTTP backend (docs/tracing.md).

Traces are one more consumer of a run's event stream: :func:`run_tracer` gives a run's
recorder a listener that turns the events into spans (``tracing/runs.py``), and
:func:`batch_span` opens the one span a batch's items hang under. Both return ``None`` / a
do-nothing handle while tracing is off.

Tracing is on when ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_ENDPOINT``
is set (the OpenTelemetry variables every backend documents), or after ``%agent trace URL``;
``%agent trace off`` turns it off whatever the environment says. This module imports nothing
of OpenTelemetry: while tracing is off, nothing of it is ever imported (``%load_ext`` and a
run stay as cheap as without the ``[otel]`` extra).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Protocol

from ..base.errors import ConfigError
from ..base.jsontypes import JSONObject, bool_field, str_field
from .switch import (
    CAPTURE_VAR,
    ENDPOINT_VAR,
    SWITCH,
    TRACES_ENDPOINT_VAR,
    capture_content,
    check_url,
    endpoint,
    say_sdk_missing,
    shown_url,
    traces_url,
    turn_off,
)

if TYPE_CHECKING:
    from ..base.events import BaseEvent
    from .export import Exporting

__all__ = ["TRACES_ENDPOINT_VAR", "ENDPOINT_VAR", "CAPTURE_VAR", "TracedRun", "RunListener",
           "BatchSpan",
           "endpoint", "set_endpoint", "turn_off", "status", "run_tracer", "batch_span",
           "traces_url", "shown_url", "capture_content", "remote_target", "remote_scope"]


class TracedRun(Protocol):
    """What the spans read of a run (``agents.run.Run`` has it; tracing sits below the agents,
    so it names the attributes instead of importing the class)."""

    @property
    def run_id(self) -> str:
        """The run's id (``jupyter_agent.run.id``)."""

    @property
    def agent(self) -> str:
        """The agent's name (``gen_ai.agent.name``)."""

    @property
    def model(self) -> str:
        """The model as configured (``gen_ai.request.model``)."""

    @property
    def session(self) -> str | None:
        """The session's name (``gen_ai.conversation.id``), if any."""

    @property
    def events(self) -> Sequence[BaseEvent]:
        """The run's events so far (a resumed part finds its first part's span there)."""


class RunListener(Protocol):
    """What a run's recorder holds while tracing is on (``tracing.runs.RunTracer``)."""

    def begin(self) -> str:
        """Open the run's span now; return its ``traceparent`` (for ``run_started``)."""

    def __call__(self, event: BaseEvent) -> None:
        """Take one (masked) event of the run."""


class BatchSpan(Protocol):
    """The span of one batch (a do-nothing one while tracing is off)."""

    def end(self, status: str, error: str | None = None) -> None:
        """End the span with the batch's status (``done``, ``stopped``, ``error``)."""


class _NoBatch:
    def end(self, status: str, error: str | None = None) -> None:
        """Nothing to end: tracing is off."""


_NO_BATCH = _NoBatch()


def set_endpoint(url: str) -> str:
    """Export every run from now on to the receiver at ``url`` (its base URL, or the full
    ``.../v1/traces`` URL); returns the traces URL.

    Raises:
        ParameterError: ``url`` is not an http(s) URL.
        ConfigError: the ``[otel]`` extra is not installed.
    """
    full = traces_url(check_url(url))
    _require_sdk()
    SWITCH.url, SWITCH.off = full, False
    return full


def status() -> str:
    """One line: where runs are exported, or why they are not."""
    url = endpoint()
    if url is None:
        how = "turned off with `%agent trace off`" if SWITCH.off else (
            f"set {ENDPOINT_VAR} or use `%agent trace URL`")
        return f"Traces: off ({how})."
    source = "%agent trace" if SWITCH.url else "the environment"
    content = "with" if capture_content() else "without"
    line = (f"Traces: every run is exported to {shown_url(url)} (from {source}), {content} "
            "message contents.")
    import sys

    if "jupyter_agent.tracing.export" in sys.modules:  # a run has been exported already
        from .export import health_line

        line += health_line()
    return line


def _require_sdk() -> None:
    import importlib.util

    for name in ("opentelemetry.sdk", "opentelemetry.exporter.otlp.proto.http"):
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):  # a parent missing, or an entry blocked as None
            found = False
        if not found:
            raise ConfigError("Exporting traces needs OpenTelemetry: pip install "
                              "'jupyter-agent[otel]'")


def _exporting(url: str) -> Exporting | None:
    """The exporter for ``url`` if it is up (``None``: the extra is missing, said once; or the
    receiver was found down a moment ago)."""
    try:
        from .export import exporting
    except ImportError:
        say_sdk_missing()
        return None
    ex = exporting(url)
    return ex if ex is not None and ex.health.recording() else None


def run_tracer(run: TracedRun) -> RunListener | None:
    """A listener that exports ``run`` (``agents.run.Run``) as spans, or ``None`` when tracing
    is off, the ``[otel]`` extra is missing, or the receiver was found down a moment ago."""
    url = endpoint()
    ex = _exporting(url) if url is not None else None
    if ex is None:
        return None
    from .runs import RunTracer

    return RunTracer(run, ex)


def batch_span(*, batch_id: str, kind: str, items: int, models: list[str]) -> BatchSpan:
    """The span of one batch: the runs of its items started after this (in this thread, or
    in threads started from it) are its children. A do-nothing handle when tracing is off."""
    url = endpoint()
    ex = _exporting(url) if url is not None else None
    if ex is None:
        return _NO_BATCH
    from .runs import open_batch

    return open_batch(ex, batch_id=batch_id, kind=kind, items=items, models=models)


def remote_target() -> JSONObject | None:
    """Where an item run in another process (a Dask worker) exports its spans, and under
    which span: ``{"url": str, "parent": str, "capture": bool}``, or ``None`` when tracing is
    off here. Plain JSON: it travels to the worker with the item."""
    url = endpoint()
    if url is None or "jupyter_agent.tracing.runs" not in sys.modules:
        return None  # off, or nothing of ours is open (no batch span) to hang under
    from .runs import current_parent

    return {"url": url, "parent": current_parent(), "capture": capture_content()}


@contextmanager
def remote_scope(target: Mapping[str, object] | None) -> Iterator[None]:
    """In a worker process: export the runs of the body as :func:`remote_target` said (to
    that URL, under that span), and send their spans before the body's result goes back."""
    if not target or not str_field(target, "url"):
        yield
        return
    SWITCH.url, SWITCH.off = str_field(target, "url"), False
    ex = _exporting(SWITCH.url)
    if ex is None:
        yield
        return
    from .runs import parented

    SWITCH.capture = bool_field(target, "capture")
    try:
        with parented(str_field(target, "parent")):
            yield
    finally:
        ex.flush()
