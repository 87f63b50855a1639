"""The Run object users get back, and the recorder that feeds every event to its consumers."""

from __future__ import annotations

import secrets
import signal
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Callable, Generic

from typing_extensions import TypeVar

from ..base.events import (
    BaseEvent,
    CellProposed,
    RunFinished,
    RunStarted,
    RunStatus,
    event_to_json,
    merge_deltas,
)
from ..base.interrupt import raise_in_thread
from ..base.jsontypes import JSONObject, as_list
from ..base.previews import STREAM_PREVIEW, head_tail
from ..base.secrets import StreamMasker, mask, mask_fields, masked_stdio
from ..base.state import STATE, Box
from ..tracing import run_tracer
from ..view.reduce import new_view, reduce_event

if TYPE_CHECKING:
    from pydantic import BaseModel

    from ..loop.hooks import ToolRecord
    from ..session.store import Store
    from .pending import PendingRun

__all__ = ["Run", "RunRecorder", "new_run_id", "last_run", "set_last_run"]

Listener = Callable[[BaseEvent], None]
_LAST: Box[Run] = STATE.slot("agents.last_run", Box)


_TICKS_PER_SECOND = 256
"""Run ids start with the time in 1/256 s: 6 hex digits, wrapping every 18 hours."""


def new_run_id() -> str:
    """A short, unique, URL-safe run id: ``run_``, the time (6 hex digits), 10 random ones.

    Ids made close together sort together, so the store's B-trees keyed by run id (the runs,
    their events, a batch's rows) take a batch's rows at one edge instead of at as many random
    pages as it has items: storing a batch item costs about a third less CPU. The random part
    is 40 bits (ids made before were 48 random bits, ``run_`` + 12 hex digits, and stay
    valid): even 10,000 runs in one tick, far more than any batch makes, would collide with
    odds of about 1 in 20,000; runs apart in time share a tick only once it wraps.
    """
    tick = int(time.time() * _TICKS_PER_SECOND) & 0xFFFFFF
    return f"run_{tick:06x}{secrets.token_hex(5)}"


def last_run() -> Run | None:
    """The most recent run of this process (also bound to ``_agent_run`` in a notebook)."""
    return _LAST.value


def set_last_run(run: Run | None) -> None:
    """Make ``run`` the process's most recent run again (a sub-run is never the user's)."""
    _LAST.value = run


Output = TypeVar("Output", covariant=True, default=object)
"""What a typed run's ``output`` is: its schema's model class (``chat(..., output=Ticket)`` is
a ``Run[Ticket]``, so mypy checks ``run.output.label``), ``JSONObject`` for a JSON schema dict,
``None`` for an untyped run. A bare ``Run`` (the loop's own code, which never looks inside the
output) is a ``Run[object]``. Covariant so that a ``Run[Ticket]`` is a ``Run``: ``output`` is
set only by the turn, from the run's own schema (``agents/turn/drive.py``)."""


Model = TypeVar("Model", bound="BaseModel")
"""A pydantic model class given as ``output=``: the entry points' overloads return
``Run[Model]``."""


class Run(Generic[Output]):
    """One agent run: its answer, events, tool results, usage and status.

    ``status`` is ``running`` while it runs, then ``done``, ``ask`` (suspended, waiting for an
    answer or an approval), ``aborted``, ``error``, ``max_rounds`` or ``incomplete``.
    """

    def __init__(self, *, agent: str, model: str, prompt: str = "", session: str | None = None,
                 run_id: str | None = None) -> None:
        self.run_id = run_id or new_run_id()
        self.agent = agent
        self.model = model
        self.prompt = prompt
        self.session = session
        self.status = "running"
        self.answer = ""
        self.error: str | None = None
        self.events: list[BaseEvent] = []
        self.view = new_view()
        self.messages: list[JSONObject] = []
        self.tool_values: dict[str, object] = {}
        """Each tool call's raw Python value, by call id."""
        self.tool_records: list[ToolRecord] = []
        self.input_tokens = 0
        self.output_tokens = 0
        self.cost = 0.0
        self.rounds = 0
        self.request_ids: list[str] = []
        """One id per model request made (the provider's, else a local ``local-...`` one)."""
        self.seconds = 0.0
        self.pending: PendingRun | None = None
        """What a suspended run saved (status ``ask``); ``None`` otherwise."""
        self.plan: JSONObject | None = None
        self.output: Output | None = None
        """A typed run's validated answer (an instance of its schema's model, a dict for a
        JSON schema); ``None`` otherwise, and when the answer never validated (``invalid``)."""
        self.abort_requested = False
        # The thread running this run's loop (None when it is not running), and whether an
        # abort already interrupted it: see abort().
        self._loop_thread: int | None = None
        self._interrupted = False
        self._loop_lock = threading.Lock()
        self.event_lock = threading.RLock()
        """Held while an event is recorded (view reduced, listeners told): a display that
        draws the view from another thread (a deferred update) holds it too."""
        _LAST.value = self

    def abort(self) -> None:
        """Ask the run to stop; it then ends with status ``aborted``, keeping what it did so
        far (an open ask still wins).

        The loop checks the flag before each round and between streamed chunks. Called from
        another thread while the loop runs (a stop message, a timer), it also interrupts the
        loop's thread as Ctrl-C would, so a silent server or a running tool stops at once
        instead of at the next chunk. A run that is not running is only flagged.
        """
        self.abort_requested = True
        with self._loop_lock:
            ident = self._loop_thread
            if ident is None or ident == threading.get_ident() or self._interrupted:
                return
            self._interrupted = True
            _interrupt_thread(ident)

    @contextmanager
    def looping(self) -> Iterator[None]:
        """Mark the current thread as the one running this run's loop (for :meth:`abort`)."""
        with self._loop_lock:
            self._loop_thread = threading.get_ident()
            self._interrupted = False
        try:
            yield
        finally:
            with self._loop_lock:
                self._loop_thread = None

    # ------------------------------------------------------------ conveniences
    @property
    def reasoning(self) -> str:
        """All reasoning text of the run."""
        return "".join(str(i.get("text", "")) for i in as_list(self.view.get("items"))
                       if isinstance(i, dict) and i.get("kind") == "reasoning")

    @property
    def tool_calls(self) -> list[ToolRecord]:
        """Every tool call with its arguments, output, error, duration and raw ``value``."""
        return self.tool_records

    @property
    def proposals(self) -> list[JSONObject]:
        """The cells the agent proposed (``insert_cell``), in order, as JSON (``id``,
        ``source``, ``kind``, ``explanation``, ``status``): headless, this is where they stay."""
        return [dict(e.proposal) for e in self.events if isinstance(e, CellProposed)]

    def events_json(self) -> list[JSONObject]:
        """The event log as JSON dicts."""
        return [event_to_json(e) for e in self.events]

    def __repr__(self) -> str:
        return (f"<Run {self.run_id} {self.agent} status={self.status} rounds={self.rounds} "
                f"tokens={self.input_tokens}/{self.output_tokens}>")

    def _repr_markdown_(self) -> str:
        from ..view.bundle import render_markdown

        return render_markdown(self.view)


def _interrupt_thread(ident: int) -> None:
    """Raise KeyboardInterrupt in thread ``ident``, as a kernel interrupt would.

    The main thread gets a real SIGINT (it wakes a blocking read or sleep) when Python's own
    handler is installed (the kernel's while it executes; anything else might not raise). A
    worker thread gets the exception at its next Python instruction.
    """
    if ident == threading.main_thread().ident:
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.pthread_kill(ident, signal.SIGINT)
        return
    from ..llm.http import cut_requests

    # A worker blocked on a model request would get the exception only when the server
    # answers: its connection is closed instead (not awaited), which raises it at once.
    if cut_requests([ident], only_reading=True):
        return
    raise_in_thread(ident, KeyboardInterrupt)


# The text field of each streamed delta event.
_DELTA_FIELDS = {"text_delta": "text", "reasoning_delta": "text", "tool_args_delta": "delta"}


def masked_event(event: BaseEvent) -> BaseEvent:
    """``event`` with every known secret masked in its text fields (the same object when
    there was nothing to mask)."""
    changes = mask_fields(event.__dict__)
    return event.model_copy(update=changes) if changes else event


def _stream_preview(event: BaseEvent) -> BaseEvent:
    """A ``tool_returned`` event keeps the first and last 5000 characters of a longer result
    (``_previews.STREAM_PREVIEW``); the model, ``Run.tool_calls`` and the session history keep
    it whole. Cut after masking, so a cut never keeps half a key."""
    output = event.__dict__.get("output") if event.__dict__.get("type") == "tool_returned" else None
    if not isinstance(output, str) or len(output) <= sum(STREAM_PREVIEW):
        return event
    return event.model_copy(update={"output": head_tail(output, *STREAM_PREVIEW)})


class RunRecorder:
    """Receives every event of a run and hands it to the view, the listeners and the store.

    Events are written to the store in batches: at each round's end, in the transaction that
    writes the round's messages (``agents/turn/drive.py``), at a pause and at the end. A
    streamed token costs no disk write, and a crash loses at most the current round.

    This is the one door of a run's events, so secrets are masked here, before the view, the
    live display, the store or ``Run.events`` see them (docs/security.md). A streamed delta
    whose end could be the start of a secret is held back until the next delta of the same
    part shows whether it is, or until any other event, which releases it first. From the
    first event to the end of the run, ``print`` output is masked too.
    """

    # A pause and the ends of a run; a round's end is written by the turn (its messages too).
    _FLUSH_ON = frozenset({"run_finished", "ask_pending", "ask_answered", "run_failed"})

    def __init__(self, run: Run, store: Store | None = None, listeners: list[Listener] | None = None):
        self.run = run
        self.store = store
        self.listeners: list[Listener] = list(listeners or [])
        self._pending_store: list[JSONObject] = []
        self._t0 = time.perf_counter()
        # Parallel tools report from worker threads; one event at a time keeps the view whole.
        self._lock = getattr(run, "event_lock", None) or threading.RLock()
        # Per streamed part (kind, round, call id): its masker and its last event.
        self._streams: dict[tuple[str, int, str | None], tuple[StreamMasker, BaseEvent]] = {}
        self._stdio: weakref.finalize[..., object] | None = None
        self.finished = False  # set by finish(); a resume gets a new recorder
        self.seconds = 0.0
        """This part's time (set by finish()): a resumed run's turn records its own part."""
        # Traces are one more consumer of the (masked) events, apart from ``listeners``,
        # which are handed on to a resumed part's recorder (that one gets its own tracer).
        self._tracer = run_tracer(run)

    def emit(self, event: BaseEvent) -> None:
        """Record ``event`` (secrets masked) and pass it on (thread-safe)."""
        with self._lock:
            if self._stdio is None:
                self._hold_stdio()
            d = event.__dict__  # plain dict reads: this runs for every streamed token
            field = _DELTA_FIELDS.get(d["type"])
            if field is None:
                self._release_streams()
                self._emit(_stream_preview(masked_event(event)))
                return
            key = (d["type"], d["round"], d.get("call_id"))
            stream = self._streams.get(key)
            masker = stream[0] if stream is not None else StreamMasker()
            self._streams[key] = (masker, event)
            text = masker.feed(d[field])
            if text == d[field]:
                self._emit(event)
            elif text:
                self._emit(event.model_copy(update={field: text}))

    def _release_streams(self) -> None:
        """Show what the stream maskers hold back (something else happens now)."""
        streams, self._streams = self._streams, {}
        for masker, last in streams.values():
            text = masker.flush()
            if text:
                self._emit(last.model_copy(update={_DELTA_FIELDS[last.__dict__["type"]]: text}))

    def _hold_stdio(self) -> None:
        # Released by finish(), or when the recorder is dropped unfinished (a run that failed
        # before its loop started), so a stray recorder never leaves the wrapper behind.
        guard = masked_stdio().__enter__()
        self._stdio = weakref.finalize(self, guard.__exit__, None, None, None)

    def _emit(self, event: BaseEvent) -> None:
        run = self.run
        run.events.append(event)
        reduce_event(run.view, event)
        if self.store is not None:
            d = event.__dict__
            field = _DELTA_FIELDS.get(d["type"])
            pending = self._pending_store
            last = pending[-1] if pending else None
            if (field is not None and last is not None and last["type"] == d["type"]
                    and last.get("round") == d.get("round")
                    and last.get("call_id") == d.get("call_id")):
                # What merge_deltas does at the flush, done as the deltas come: a streamed
                # token costs no dict of its own (the buffered one is our copy).
                so_far = last[field]
                if isinstance(so_far, str):
                    last[field] = so_far + d[field]
            else:
                pending.append(event_to_json(event))
                if d["type"] in self._FLUSH_ON:
                    self.flush()
        if self._tracer is not None:
            self._trace(event)
        for listener in self.listeners:
            listener(event)

    def _trace(self, event: BaseEvent) -> None:
        tracer = self._tracer
        if tracer is None:
            return
        try:
            tracer(event)
        except Exception as exc:  # a tracing bug must never fail the run: stop tracing it
            self._tracer = None
            import sys

            sys.stderr.write(f"jupyter-agent: tracing this run stopped: {_one_line(exc)}\n")

    def flush(self) -> None:
        """Write buffered events to the store."""
        if self.store is None:
            return
        with self._lock:  # a tool thread may be adding to the buffer (not held while writing)
            batch, self._pending_store = self._pending_store, []
        if batch:
            self.store.append_events(self.run.run_id, merge_deltas(batch))

    def start(self) -> None:
        """Emit ``run_started``."""
        r = self.run
        trace = ""
        if self._tracer is not None:
            try:
                trace = self._tracer.begin()
            except Exception as exc:  # as in _trace: the run goes on untraced
                self._tracer = None
                import sys

                sys.stderr.write(f"jupyter-agent: tracing this run stopped: {_one_line(exc)}\n")
        self.emit(RunStarted(run_id=r.run_id, agent=r.agent, model=r.model, prompt=r.prompt,
                             session=r.session, trace=trace))

    def finish(self, status: RunStatus, *, answer: str = "", error: str | None = None,
               finish_reason: str | None = None) -> None:
        """Emit ``run_finished`` with the run's totals, update the Run object and write the
        final status to the store (``ask`` is written by the store's ``suspend``)."""
        self.finished = True
        r = self.run
        seconds = time.perf_counter() - self._t0
        self.seconds = seconds
        r.seconds += seconds
        r.status, r.answer, r.error = status, mask(answer), None if error is None else mask(error)
        try:
            self.emit(RunFinished(status=status, answer=answer, rounds=r.rounds,
                                  input_tokens=r.input_tokens, output_tokens=r.output_tokens,
                                  cost=r.cost, seconds=round(seconds, 3),
                                  finish_reason=finish_reason, error=error))
            self.flush()
        finally:  # a listener or the event write failing must not leave the row "running"
            if self.store is not None and status != "ask":
                self.store.set_status(r.run_id, status, error=r.error)
            if self._stdio is not None:
                self._stdio()  # stop masking print output (once; later calls do nothing)

    @contextmanager
    def finishing(self, after: Callable[[str], None] | None = None) -> Iterator[None]:
        """Guard the body of a run: if it raises before :meth:`finish`, the run ends
        ``aborted`` (KeyboardInterrupt) or ``error`` (with a one-line message), ``after(status)``
        records the turn, and the exception goes on. So no exception leaves a run ``running``.
        """
        try:
            yield
        except BaseException as exc:
            if not self.finished:
                status: RunStatus = "aborted" if isinstance(exc, KeyboardInterrupt) else "error"
                self.finish(status, error=_one_line(exc))
                if after is not None:
                    after(status)
            raise


def _one_line(exc: BaseException) -> str:
    """``Type: first line of the message`` (at most 300 characters)."""
    if isinstance(exc, KeyboardInterrupt):
        return "Interrupted by the user."
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300]}" if text else type(exc).__name__

