"""Showing a run in a notebook: one display, updated live, finished with the full bundle.

While the run streams, the widget is updated at most ``MAX_UPDATES_PER_SECOND`` times a
second. When it ends, the display is updated in place with the complete MIME bundle (widget
view + run JSON + markdown + plain text), so a saved notebook keeps the whole run. A resumed
run (a click, after the cell finished) updates the same display handle; it never prints.

:data:`displays` finds the display of a run by its id (a click or ``%agent resume`` draws into
it). A display is dropped from it once its run ends for good: while the run waits for an
answer it stays, since the answer needs it; at most :data:`MAX_DISPLAYS` are kept (a question
nobody answers is forgotten first).
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
import time
from collections.abc import Callable, Iterator, MutableMapping
from typing import TYPE_CHECKING, Protocol

from ..base.events import BaseEvent, ToolStarted
from ..base.fresh_stack import preimport
from ..base.jsontypes import JSONObject
from ..base.state import STATE
from ..view.bundle import build_bundle, output_metadata
from ..view.changes import has_open_decisions

if TYPE_CHECKING:
    from IPython.display import DisplayHandle

    from .widget import RunWidget

__all__ = ["LiveDisplay", "LiveRun", "MAX_UPDATES_PER_SECOND", "MAX_DISPLAYS", "displays", "show_hint",
           "close_superseded"]

MAX_UPDATES_PER_SECOND = 30
MAX_DISPLAYS = 256
"""Live displays kept at most (runs waiting for an answer; finished runs are dropped)."""
# Pushed at once: the run pauses for an answer from the user, or ended (the kernel may go
# idle: nothing else would draw it).
_AT_ONCE = frozenset({"ask_pending", "run_finished", "run_failed"})
# The kernel is about to wait (a model request, a retry, a user tool running): pushed as soon
# as the throttle allows, by a timer if no later event comes first, so the card shows it
# while the kernel waits. Everything else rides the throttle.
_BEFORE_WAIT = frozenset({"round_started", "ask_answered", "round_retried",
                          "stop_gate_feedback"})
_INTERNAL_TOOLS = frozenset({"update_plan", "ask_agent"})


class LiveRun(Protocol):
    """What a live display reads of its run (:class:`jupyter_agent.agents.run.Run` is one).

    A protocol, not an import: ``ui/`` draws runs and sits below ``agents/``, which makes them
    (docs/architecture.md). The view is the run's own, changed in place by its events."""

    @property
    def run_id(self) -> str: ...

    @property
    def status(self) -> str: ...

    @property
    def pending(self) -> object:
        """What a suspended run saved; ``None`` once it ended for good."""
        ...

    @property
    def view(self) -> JSONObject: ...

    def abort(self) -> None:
        """End the run as an interrupt would."""
        ...


class _Displays(MutableMapping[str, "LiveDisplay"]):
    """Live displays by run id, oldest first, at most :data:`MAX_DISPLAYS`."""

    def __init__(self) -> None:
        self._items: dict[str, LiveDisplay] = {}
        self._lock = threading.Lock()

    def __getitem__(self, run_id: str) -> LiveDisplay:
        return self._items[run_id]

    def __setitem__(self, run_id: str, display: LiveDisplay) -> None:
        with self._lock:
            self._items.pop(run_id, None)
            self._items[run_id] = display
            while len(self._items) > MAX_DISPLAYS:
                self._items.pop(next(iter(self._items)))

    def __delitem__(self, run_id: str) -> None:
        with self._lock:
            del self._items[run_id]

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._items))

    def __len__(self) -> int:
        return len(self._items)


displays: _Displays = STATE.slot("ui.displays", _Displays)
"""Live displays by run id, so a resume finds the widget of its run."""


def show_hint(run: LiveRun, text: str) -> None:
    """How to answer a waiting run, shown under its output (cleared when it is answered);
    printed when the run has no live display."""
    live = displays.get(run.run_id)
    if live is not None:
        live.show_hint(text)
    else:
        print(text)


def close_superseded(run_id: str, reason: str) -> bool:
    """The live card of ``run_id`` stops waiting at once: question closed, buttons off, hint
    gone, ``reason`` shown (it updates that output by display id, from whichever cell runs).
    Returns False when this kernel shows no such run. The run's own state (status, pending,
    error) is the caller's to change: ``ui/`` only draws runs."""
    from ..view.reduce import withdraw_ask

    live = displays.pop(run_id, None)
    if live is None:
        return False
    withdraw_ask(live.run.view, reason)
    live._clear_hint()
    live.refresh()
    return True


class LiveDisplay:
    """The live output of one run (widget when possible, markdown otherwise)."""

    def __init__(self, run: LiveRun, *, widgets: bool = True,
                 on_answer: Callable[[JSONObject], None] | None = None,
                 on_decide: Callable[[JSONObject], None] | None = None) -> None:
        from IPython.display import display

        self.run = run
        self.widget: RunWidget | None = None
        self.updates = 0
        self._dirty = False
        self._timer: threading.Timer | None = None
        self._recovery: threading.Timer | None = None
        self._interval = 1.0 / MAX_UPDATES_PER_SECOND
        if widgets:
            try:
                preimport("jupyter_agent.ui.widget")  # anywidget, ipywidgets
                from .widget import RunWidget

                self.widget = RunWidget(run.view, on_answer=on_answer, on_stop=self.on_stop,
                                        on_decide=on_decide)
            except Exception:  # no widget support (plain terminal IPython): markdown only
                self.widget = None
        self.handle: DisplayHandle | None = display(self._bundle(), metadata=output_metadata(run.view), raw=True,
                              display_id=True)
        # While the cell that drew this display runs, a bundle that keeps the widget waits for
        # the cell's end (see finish).
        self._held = False
        self._in_cell = self._watch_cell_end()
        # The display just drew the whole view: the throttle counts from here.
        self._last = time.monotonic()
        displays[run.run_id] = self
        self._schedule_recovery()

    def _watch_cell_end(self) -> bool:
        """Call :meth:`_cell_ended` once the running cell ends (IPython's ``post_run_cell``);
        False without an IPython shell (nothing to wait for)."""
        try:
            from IPython import get_ipython
        except ImportError:  # pragma: no cover - IPython is a dependency
            return False
        events = getattr(get_ipython(), "events", None)
        if events is None:
            return False
        events.register("post_run_cell", self._cell_ended)
        return True

    def _cell_ended(self, *_: object) -> None:
        """The cell that drew this display ended: send the bundle held back meanwhile (still
        inside the cell's execution, so a headless run saves it with the cell)."""
        from IPython import get_ipython

        events = getattr(get_ipython(), "events", None)
        if events is not None:
            with contextlib.suppress(ValueError):
                events.unregister("post_run_cell", self._cell_ended)
        self._in_cell = False
        if self._held:
            self._held = False
            self._send_final()

    def on_stop(self, msg: JSONObject) -> None:
        """The card's stop button: end the run as an interrupt would. The message usually
        arrives late (a busy kernel reads widget messages once the cell ends; the JupyterLab
        extension interrupts the kernel meanwhile), so a stop naming another run, or for a run
        no longer running, changes nothing."""
        if msg.get("run_id") != self.run.run_id or self.run.status != "running":
            return
        self.run.abort()

    def show_hint(self, text: str) -> None:
        """Show how to answer a waiting run, in its own output (``view["hint"]``: drawn by the
        card and the text fallbacks); cleared once the run goes on. Not a second output: a
        cleared one would be saved as an empty output."""
        self.run.view["hint"] = text
        self.refresh()

    def _buttons(self) -> bool:
        """The finished output keeps the live widget: the run waits for an answer, or a
        sandboxed command's change row still has a Keep, Discard or Undo to press."""
        view = self.run.view
        return view.get("status") == "ask" or has_open_decisions(view)

    def _clear_hint(self) -> None:
        self.run.view.pop("hint", None)  # the event that cleared it pushes the view

    def _bundle(self, final: bool = False) -> JSONObject:
        # A finished run is shown by the static renderer (same look, no kernel needed), so a
        # saved notebook never depends on widget state. A run waiting for an answer keeps the
        # live widget: its buttons must stay clickable.
        widget = self.widget
        live = widget is not None and (not final or self._buttons())
        return build_bundle(self.run.view, widget.model_id if widget is not None and live else None)

    def on_event(self, event: BaseEvent) -> None:
        """Listener for the run's recorder: push the view, at most ``MAX_UPDATES_PER_SECOND``
        times a second but for a pause or the end of the run (drawn at once)."""
        self._dirty = True
        now = time.monotonic()
        kind = getattr(event, "type", "")
        if kind == "ask_answered":
            self._clear_hint()  # the hint would be stale (an output after a click updates only)
        if kind in _AT_ONCE or now - self._last >= self._interval:
            self.flush(now)
        elif kind in _BEFORE_WAIT or (isinstance(event, ToolStarted)
                                      and event.name not in _INTERNAL_TOOLS):
            # The kernel waits next (a model request, a user tool running; internal tools
            # are fast): draw this once the interval is over, even if no event comes.
            self._defer(self._last + self._interval - now)
        if kind in ("run_finished", "run_failed"):
            self.finish()
            if (self.run.status != "ask" and self.run.pending is None
                    and not has_open_decisions(self.run.view)):
                # Ended for good: nothing can draw into it any more (a new answer would be
                # refused, no change row has a button left), so the kernel need not keep it.
                if displays.get(self.run.run_id) is self:
                    displays.pop(self.run.run_id, None)

    def _defer(self, delay: float) -> None:
        """Flush after ``delay`` seconds unless something flushes first (one timer at most).

        The timer runs in the caller's context (ipykernel keeps the cell's parent message
        there, so the update belongs to the cell) and holds the run's event lock, so it never
        diffs the view while an event changes it.
        """
        if self._timer is not None:
            return
        ctx = contextvars.copy_context()
        timer = threading.Timer(max(0.0, delay), ctx.run, (self._deferred_flush,))
        timer.daemon = True
        self._timer = timer
        timer.start()

    def _deferred_flush(self) -> None:
        lock = getattr(self.run, "event_lock", None)
        with lock if lock is not None else contextlib.nullcontext():
            if self._timer is not None and self._timer is threading.current_thread():
                self._timer = None
                self.flush()

    def _schedule_recovery(self) -> None:
        """Push when the widget's next unasked snapshot is due (``RunWidget.recovery_in``),
        whether or not an event comes: while a slow synchronous tool runs, no event comes,
        and a front end that dropped the first patches (its module was still loading) would
        show "Waiting for the model…" and no tool row until the tool returned. Same context
        and lock as :meth:`_defer`."""
        widget = self.widget
        if widget is None or self._recovery is not None:
            return
        delay = widget.recovery_in()
        if delay is None:
            return
        ctx = contextvars.copy_context()
        timer = threading.Timer(delay + 0.01, ctx.run, (self._recover,))
        timer.daemon = True
        self._recovery = timer
        timer.start()

    def _recover(self) -> None:
        lock = getattr(self.run, "event_lock", None)
        with lock if lock is not None else contextlib.nullcontext():
            if self._recovery is not threading.current_thread():
                return  # cancelled (the run ended) while this waited for the lock
            self._recovery = None
            if self.widget is None or self.run.view.get("status") != "running":
                return
            self.widget.push()  # a snapshot when due (patches otherwise)
            self._schedule_recovery()

    def _cancel_timer(self) -> None:
        """Drop the pending deferred flush (not from the timer's own thread: it is running)."""
        timer, self._timer = self._timer, None
        if timer is not None and timer is not threading.current_thread():
            timer.cancel()

    def refresh(self) -> None:
        """Redraw the whole output now (after the run's view was changed from outside, e.g. a
        warning added by a failed click)."""
        self._dirty = True
        self.finish()

    def flush(self, now: float | None = None) -> None:
        """Send pending changes to the front end."""
        self._cancel_timer()  # this flush draws what it was waiting to draw
        if not self._dirty:
            return
        self._dirty = False
        self._last = now if now is not None else time.monotonic()
        self.updates += 1
        if self.widget is not None:
            self.widget.push()
        elif self.handle is not None:
            self.handle.update(self._bundle(), metadata=output_metadata(self.run.view), raw=True)

    def finish(self) -> None:
        """Replace the output with the complete bundle (what a saved notebook keeps)."""
        recovery, self._recovery = self._recovery, None
        if recovery is not None and recovery is not threading.current_thread():
            recovery.cancel()
        if self.handle is None:
            self.flush()
        else:
            # The bundle below draws everything: a patch (or a markdown update) just before it
            # would be one more message that nobody sees.
            self._cancel_timer()
            self._dirty = False
            self._last = time.monotonic()
            self.updates += 1
        if self.widget is not None and self._buttons():
            # The widget stays shown (its buttons must work): one drawn again later (a reload)
            # starts from this snapshot. A finished run is shown statically: no snapshot.
            self.widget.snapshot()
        if self.handle is None:
            return
        if self._in_cell and self.widget is not None and self._buttons():
            # The output shows this widget already. The same widget sent again makes JupyterLab
            # render a second view of it while the first is still being built; an update
            # right after (an ask answered up front, a hint, the run's end) then disposes an
            # output whose views are still arriving, and ipywidgets throws
            # (``processLuminoMessage`` of null, issue #22). So within the cell it is sent once,
            # when the cell ends (the saved notebook gets it), or never if the run ends first.
            self._held = True
            return
        self._held = False
        self._send_final()

    def _send_final(self) -> None:
        assert self.handle is not None
        self.handle.update(self._bundle(final=True), metadata=output_metadata(self.run.view),
                           raw=True)

