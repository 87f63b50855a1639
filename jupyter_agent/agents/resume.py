"""Suspension as data: saving a run that waits for the user, and resuming it.

A run that asks a question (the plan's ``ask_agent``) or needs an approval (a tool whose
permission is ``ask``) ends with status ``ask``; everything needed to continue is saved in the
store as one ``pending`` dict. An answer (a click, ``%agent resume``, a headless
``--option N``) claims that record atomically, so a second click changes nothing, and hands it
to the resumer registered for the run's kind. Because the record is data, a new kernel can
resume it too: tools are looked up again by name.

The ``pending`` dict holds at least::

    {"kind": "plan" | "toolloop", "call_id": str, "ask": {...AskPending fields...},
     "messages": [...], "model": str, "tools": [names], "options": {...turn options...},
     "state": {...agent-specific...}, "user_message": {...}, "rounds": int}
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Literal

from ..errors import ResumeError
from ..events import EVENT_ADAPTER, AskAnswered, BaseEvent
from ..ui.view import new_view, reduce_event
from ._base import Prepared, _finish_turn
from .run import Run, RunRecorder

__all__ = ["Answer", "RESUMERS", "RESUME_CLIENTS", "register_resumer", "suspend", "resume",
           "pending_runs", "answer_text_for_approval"]


@dataclass
class Answer:
    """How the user answered: an option (1-based), free text ("Other"), or a dismissal."""

    how: Literal["option", "other", "dismissed"]
    option_index: int | None = None
    text: str = ""

    @classmethod
    def from_message(cls, msg: dict[str, Any]) -> Answer:
        """From the widget's click message ``{type:"answer", how, option_index, answer}``."""
        how = msg.get("how")
        if how == "option":
            return cls("option", option_index=int(msg.get("option_index") or 0))
        if how == "other":
            return cls("other", text=str(msg.get("answer") or ""))
        if how == "dismissed":
            return cls("dismissed")
        raise ResumeError(f"Unknown answer kind {how!r}.")

    def label(self, options: list[str]) -> str:
        """The answer as text (the chosen option's label, the typed text, or empty)."""
        if self.how == "option" and self.option_index and 1 <= self.option_index <= len(options):
            return options[self.option_index - 1]
        return self.text

    def event(self, call_id: str, options: list[str]) -> AskAnswered:
        """The ``ask_answered`` event."""
        return AskAnswered(call_id=call_id, how=self.how, answer=self.label(options),
                           option_index=self.option_index if self.how == "option" else None)


Resumer = Callable[[Prepared, dict[str, Any], Answer], Run]
RESUMERS: dict[str, Resumer] = {}
"""Resume functions by run kind; each continues the loop from the saved ``pending`` dict."""
RESUME_CLIENTS: dict[str, Any] = {}
"""Clients that must continue a suspended run (a cell recorded or replayed with ``--record`` /
``--replay``), by run id; set by the client's ``on_suspended`` hook, taken by ``resume``."""


def register_resumer(kind: str, fn: Resumer) -> Resumer:
    """Register how runs of ``kind`` continue after an answer."""
    RESUMERS[kind] = fn
    return fn


def suspend(p: Prepared, pending: dict[str, Any]) -> None:
    """Save ``pending`` for ``p.run``; the run's status becomes ``ask``."""
    p.run.pending = pending
    if p.store is not None:
        p.recorder.flush()
        p.store.suspend(p.run.run_id, pending, call_id=pending.get("call_id"))


def answer_text_for_approval(answer: Answer) -> str:
    """Which approval option was picked: ``allow_once``, ``allow_session`` or ``deny``."""
    if answer.how == "option":
        return {1: "allow_once", 2: "allow_session", 3: "deny"}.get(answer.option_index or 0, "deny")
    return "deny"  # dismissing an approval card, or typing text, never allows anything


def pending_runs(store: Any, session: str | None = None) -> list[Any]:
    """Suspended runs (of ``session`` or all), oldest first."""
    return list(store.list_pending(session))


def _rebuild_run(store: Any, run_id: str, pending: dict[str, Any]) -> Run:
    """A Run object for ``run_id`` from its stored events (after a kernel restart)."""
    record = store.get_run(run_id)
    run = Run(agent=record.kind if record else pending.get("kind", "plan"),
              model=pending.get("model", ""), session=record.session if record else None,
              run_id=run_id)
    view = new_view()
    for d in store.get_events(run_id):
        try:
            ev: BaseEvent = EVENT_ADAPTER.validate_python(d)
        except Exception:  # an event from a newer version: skip it, keep the rest
            continue
        run.events.append(ev)
        reduce_event(view, ev)
    run.view = view
    run.rounds = int(pending.get("rounds", 0))
    return run


def resume(run_id: str | None, answer: Answer, *, run: Run | None = None, store: Any = "default",
           listeners: list[Callable[[BaseEvent], None]] | None = None,
           expected_call_id: str | None = None, client: Any = None) -> Run:
    """Answer a suspended run and continue it.

    Args:
        run_id: The run to resume; ``None`` takes the newest pending run.
        answer: The user's answer.
        run: The live Run object when the same kernel still holds it (the widget keeps
            drawing into the same view); otherwise it is rebuilt from the store.
        store: The session store (``"default"`` for the process-wide one).
        listeners: Event listeners for the resumed part (the live display).
        expected_call_id: Refuse unless the run still waits on this tool call (a click on an
            old card).
        client: A model client to use instead of resolving one from the saved model name.

    Raises:
        ResumeError: nothing is pending under that id (answered, superseded, unknown), or the
            answer does not fit the question. Nothing changes in that case.
    """
    if store == "default":
        from ..session import default_store

        store = default_store()
    if store is None:
        raise ResumeError("Resuming needs the session store.")
    if run_id is None:
        waiting = store.list_pending()
        if not waiting:
            raise ResumeError("No run is waiting for an answer.")
        run_id = waiting[-1].run_id
    record = store.get_run(run_id)
    if record is None:
        raise ResumeError(f"No run {run_id!r} in the store.")
    ask = (record.pending or {}).get("ask") or {}
    options = list(ask.get("options") or [])
    # No pending ask (answered, superseded): the claim below refuses it with the right message.
    if (answer.how == "option" and options
            and not (answer.option_index and 1 <= answer.option_index <= len(options))):
        raise ResumeError(f"--option must be between 1 and {len(options)}; nothing changed.")
    pending = store.claim_pending(run_id, expected_call_id)
    if pending is None:
        status = record.status if record.status != "ask" else "answered"
        raise ResumeError(f"Run {run_id} is not waiting for an answer any more ({status}); "
                          "nothing changed.")
    kind = pending.get("kind", record.kind)
    resumer = RESUMERS.get(kind)
    if resumer is None:
        _load_resumers()
        resumer = RESUMERS.get(kind)
    if resumer is None:
        store.suspend(run_id, pending)  # put it back: nothing was lost
        raise ResumeError(f"Runs of kind {kind!r} cannot be resumed.")
    try:
        if run is None:
            run = _rebuild_run(store, run_id, pending)
        if client is None:
            from ..runtime.failover import client_for  # with the configured fallbacks

            client = RESUME_CLIENTS.pop(run_id, None) or client_for(pending.get("model"))
    except BaseException:
        store.suspend(run_id, pending)  # a missing key must not lose the question
        raise
    run.pending = None
    recorder = RunRecorder(run, store, listeners or [])
    p: Prepared | None = None

    def finish_turn(status: str) -> None:
        if p is not None:
            _finish_turn(p, status)

    # From here the run is ours and "running": whatever raises ends it "error"/"aborted".
    with recorder.finishing(finish_turn):
        turn_id = None
        if run.session:
            turn_id = store.start_turn(run.session, mode="agent", run_id=run_id, agent=kind,
                                       model=pending.get("model"), profile=client.profile.name)
        p = Prepared(client=client, run=run, recorder=recorder, store=store, turn_id=turn_id,
                     history=[], turn_base=(run.input_tokens, run.output_tokens, run.cost),
                     persisted=int(pending.get("persisted", 0)))
        recorder.emit(answer.event(pending["call_id"], options))
        keep = getattr(client, "record_answer", None)  # a recording client keeps it for replays
        if keep is not None:
            keep(pending, answer, via="click" if expected_call_id else "code")
        run.status = "running"
        return resumer(p, pending, answer)


def _load_resumers() -> None:
    """Import the agent modules that register resumers (lazily: they are not all needed)."""
    import importlib

    for mod in ("jupyter_agent.agents.plan.agent", "jupyter_agent.agents.approvals"):
        try:
            importlib.import_module(mod)
        except ImportError:
            pass
