"""The Run object users get back, and the recorder that feeds every event to its consumers."""

from __future__ import annotations

import secrets
import threading
import time
from typing import TYPE_CHECKING, Any, Callable

from .._state import STATE, Box
from ..events import BaseEvent, RunFinished, RunStarted, event_to_json, merge_deltas
from ..view.state import new_view, reduce_event

if TYPE_CHECKING:
    from .pending import PendingRun

__all__ = ["Run", "RunRecorder", "new_run_id", "last_run", "set_last_run"]

Listener = Callable[[BaseEvent], None]
_LAST: Box = STATE.slot("agents.last_run", Box)


def new_run_id() -> str:
    """A short, unique, URL-safe run id."""
    return "run_" + secrets.token_hex(6)


def last_run() -> Run | None:
    """The most recent run of this process (also bound to ``_agent_run`` in a notebook)."""
    return _LAST.value  # type: ignore[no-any-return]


def set_last_run(run: Run | None) -> None:
    """Make ``run`` the process's most recent run again (a sub-run is never the user's)."""
    _LAST.value = run


class Run:
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
        self.view: dict[str, Any] = new_view()
        self.messages: list[dict[str, Any]] = []
        self.tool_values: dict[str, Any] = {}
        self.tool_records: list[dict[str, Any]] = []
        self.input_tokens = 0
        self.output_tokens = 0
        self.cost = 0.0
        self.rounds = 0
        self.seconds = 0.0
        self.pending: PendingRun | None = None
        """What a suspended run saved (status ``ask``); ``None`` otherwise."""
        self.plan: dict[str, Any] | None = None
        self.abort_requested = False
        _LAST.value = self

    def abort(self) -> None:
        """Ask the run to stop: the loop checks this flag before each round and between
        streamed chunks; the run then ends with status ``aborted`` (an open ask still wins)."""
        self.abort_requested = True

    # ------------------------------------------------------------ conveniences
    @property
    def reasoning(self) -> str:
        """All reasoning text of the run."""
        return "".join(i["text"] for i in self.view["items"] if i["kind"] == "reasoning")

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        """Every tool call with its arguments, output, error, duration and raw ``value``."""
        return self.tool_records

    def events_json(self) -> list[dict[str, Any]]:
        """The event log as JSON dicts."""
        return [event_to_json(e) for e in self.events]

    def __repr__(self) -> str:
        return (f"<Run {self.run_id} {self.agent} status={self.status} rounds={self.rounds} "
                f"tokens={self.input_tokens}/{self.output_tokens}>")

    def _repr_markdown_(self) -> str:
        from ..view.bundle import render_markdown

        return render_markdown(self.view)


class RunRecorder:
    """Receives every event of a run and hands it to the view, the listeners and the store.

    Events are written to the store in batches at round boundaries and at the end, so a
    streamed token costs no disk write, while a crash loses at most the current round.
    """

    # Once per round (plus the ends of a run): one small transaction per model request.
    _FLUSH_ON = frozenset({"round_started", "run_finished", "ask_pending", "ask_answered",
                           "run_failed"})

    def __init__(self, run: Run, store: Any = None, listeners: list[Listener] | None = None):
        self.run = run
        self.store = store
        self.listeners: list[Listener] = list(listeners or [])
        self._pending_store: list[dict[str, Any]] = []
        self._t0 = time.perf_counter()
        # Parallel tools report from worker threads; one event at a time keeps the view whole.
        self._lock = threading.RLock()

    def emit(self, event: BaseEvent) -> None:
        """Record ``event`` and pass it on (thread-safe)."""
        with self._lock:
            self._emit(event)

    def _emit(self, event: BaseEvent) -> None:
        run = self.run
        run.events.append(event)
        reduce_event(run.view, event)
        if self.store is not None:
            self._pending_store.append(event_to_json(event))
            if event.type in self._FLUSH_ON:  # type: ignore[attr-defined]
                self.flush()
        for listener in self.listeners:
            listener(event)

    def flush(self) -> None:
        """Write buffered events to the store."""
        if self.store is not None and self._pending_store:
            batch, self._pending_store = self._pending_store, []
            self.store.append_events(self.run.run_id, merge_deltas(batch))

    def start(self) -> None:
        """Emit ``run_started``."""
        r = self.run
        self.emit(RunStarted(run_id=r.run_id, agent=r.agent, model=r.model, prompt=r.prompt,
                             session=r.session))

    def finish(self, status: str, *, answer: str = "", error: str | None = None,
               finish_reason: str | None = None) -> None:
        """Emit ``run_finished`` with the run's totals and update the Run object."""
        r = self.run
        seconds = time.perf_counter() - self._t0
        r.seconds += seconds
        r.status, r.answer, r.error = status, answer, error
        self.emit(RunFinished(status=status, answer=answer, rounds=r.rounds,  # type: ignore[arg-type]
                              input_tokens=r.input_tokens, output_tokens=r.output_tokens,
                              cost=r.cost, seconds=round(seconds, 3), finish_reason=finish_reason,
                              error=error))
        self.flush()

