"""Suspension as data: saving a run that waits for the user, and resuming it.

A run that asks a question (the plan's ``ask_agent``) or needs an approval (a tool whose
permission is ``ask``) ends with status ``ask``; everything needed to continue is saved in the
store as one ``pending`` dict. An answer (a click, ``%agent resume``, a headless
``--option N``) claims that record atomically, so a second click changes nothing, and hands it
to the resumer registered for the run's kind. Because the record is data, a new kernel can
resume it too: tools are looked up again by name.

An answer can also come from an :class:`~jupyter_agent.answers.AnswerSource` instead of the
user: a replayed cassette answers the asks that were clicked while recording. :func:`settle`
is that seam (the entry points call it after their first drive, :func:`resume` after each
resumed part), and ``resume(answers=...)`` hands the source on to the resumed run. A recording
keeps every answer given through the turn client's :class:`~jupyter_agent.answers.AnswerLog`.

The ``pending`` dict holds at least::

    {"kind": "plan" | "toolloop", "call_id": str, "ask": {...AskPending fields...},
     "messages": [...], "model": str, "tools": [names], "options": {...turn options...},
     "state": {...agent-specific...}, "user_message": {...}, "rounds": int}
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Callable

from ..answers import Answer, AnswerSource
from ..errors import ResumeError
from ..events import EVENT_ADAPTER, BaseEvent
from ..llm.protocol import ModelClient
from ..view.state import new_view, reduce_event
from ._base import Prepared
from .run import Run, RunRecorder

if TYPE_CHECKING:
    from ..clients.turn import TurnClient

__all__ = ["Answer", "RESUMERS", "RESUME_CLIENTS", "register_resumer", "suspend", "resume",
           "settle", "pending_runs", "answer_text_for_approval"]

Resumer = Callable[[Prepared, dict[str, Any], Answer], Run]
RESUMERS: dict[str, Resumer] = {}
"""Resume functions by run kind; each continues the loop from the saved ``pending`` dict."""
RESUME_CLIENTS: dict[str, TurnClient] = {}
"""Turn clients that must continue a suspended run (it records into or replays a cassette,
e.g. a cell run with ``--record`` / ``--replay``), by run id; set by :func:`settle`, taken by
:func:`resume`."""


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


def settle(p: Prepared, run: Run) -> Run:
    """After ``run`` stopped: if it waits for an answer while a cassette is in use, keep its
    turn client for the resume, and answer it from the turn's answer source (a replay) as long
    as the source has the answer. Returns the run as it stands then."""
    tc = p.turn_client
    while (run.status == "ask" and run.pending is not None and tc.keeps_client
           and p.store is not None):
        RESUME_CLIENTS[run.run_id] = tc
        pending = run.pending
        answer = tc.answers.answer_for(pending) if tc.answers is not None else None
        if answer is None:
            break  # the user (or the notebook's own `%agent resume` cell) answers it
        p, run = _resume(run.run_id, answer, run=run, store=p.store,
                         listeners=list(p.recorder.listeners),
                         expected_call_id=pending.get("call_id"), client=None,
                         answers=tc.answers)
        tc = p.turn_client
    return run


def resume(run_id: str | None, answer: Answer, *, run: Run | None = None, store: Any = "default",
           listeners: list[Callable[[BaseEvent], None]] | None = None,
           expected_call_id: str | None = None, client: ModelClient | None = None,
           answers: AnswerSource | None = None) -> Run:
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
        answers: Answers the resumed run's further asks without the user, when it can (a
            replay); by default the source of the client the run was suspended on.

    Raises:
        ResumeError: nothing is pending under that id (answered, superseded, unknown), or the
            answer does not fit the question. Nothing changes in that case.
    """
    p, run = _resume(run_id, answer, run=run, store=store, listeners=listeners,
                     expected_call_id=expected_call_id, client=client, answers=answers)
    return settle(p, run)


def _resume(run_id: str | None, answer: Answer, *, run: Run | None, store: Any,
            listeners: list[Callable[[BaseEvent], None]] | None, expected_call_id: str | None,
            client: ModelClient | None, answers: AnswerSource | None
            ) -> tuple[Prepared, Run]:
    """:func:`resume` without :func:`settle`: the resumed part, and the run it leaves."""
    from ..clients.factory import turn_client
    from ..clients.turn import bind_client

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
        raise ResumeError(_refusal(store, run_id, expected_call_id))
    kind = pending.get("kind", record.kind)
    resumer = RESUMERS.get(kind)
    if resumer is None:
        _load_resumers()
        resumer = RESUMERS.get(kind)
    if resumer is None:
        store.suspend(run_id, pending)  # put it back: nothing was lost
        raise ResumeError(f"Runs of kind {kind!r} cannot be resumed.")
    if run is None:
        run = _rebuild_run(store, run_id, pending)
    run.pending = None
    recorder = RunRecorder(run, store, listeners or [])
    held = RESUME_CLIENTS.pop(run_id, None)
    try:
        if client is not None:
            tc = bind_client(client, pending.get("model"))
        else:  # the client the run was suspended on, else one with the configured fallbacks
            tc = held or turn_client(pending.get("model"))
    except Exception:
        store.suspend(run_id, pending)  # a missing key must not lose the question
        raise
    if answers is not None:
        tc = dataclasses.replace(tc, answers=answers)
    turn_id = None
    if run.session:
        turn_id = store.start_turn(run.session, mode="agent", run_id=run_id, agent=kind,
                                   model=pending.get("model"), profile=tc.client.profile.name)
    p = Prepared(turn_client=tc, run=run, recorder=recorder, store=store, turn_id=turn_id,
                 history=[], turn_base=(run.input_tokens, run.output_tokens, run.cost),
                 persisted=int(pending.get("persisted", 0)))
    recorder.emit(answer.event(pending["call_id"], options))
    if tc.answer_log is not None:  # a recording keeps the answer for its replay
        tc.answer_log.keep(pending, answer, "click" if expected_call_id else "code")
    run.status = "running"
    return p, resumer(p, pending, answer)


def _refusal(store: Any, run_id: str, expected_call_id: str | None) -> str:
    """Why an answer was refused (read after the failed claim, so a race reports the winner)."""
    record = store.get_run(run_id)
    if (record is not None and record.status == "ask" and expected_call_id is not None
            and record.pending_call_id != expected_call_id):
        # A card answered already (or replaced by a later one): the run waits on another call.
        return (f"That card (call {expected_call_id}) is no longer waiting: run {run_id} now "
                f"waits on call {record.pending_call_id}; nothing changed.")
    status = record.status if record is not None and record.status != "ask" else "answered"
    return f"Run {run_id} is not waiting for an answer any more ({status}); nothing changed."


def _load_resumers() -> None:
    """Import the agent modules that register resumers (lazily: they are not all needed)."""
    import importlib

    for mod in ("jupyter_agent.agents.plan.agent", "jupyter_agent.agents.approvals"):
        try:
            importlib.import_module(mod)
        except ImportError:
            pass
