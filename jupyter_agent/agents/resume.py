"""Answering a suspended run and continuing it.

A run that asks a question (the plan's ``ask_agent``) or needs an approval ends with status
``ask``; its :class:`~jupyter_agent.agents.pending.PendingRun` is in the store. An answer (a
click, ``%agent resume``, a headless ``--option N``) claims that record atomically, so a second
click changes nothing, and continues the run by its kind: :func:`resume_toolloop` or
:func:`resume_plan`, chosen here, the one module above both. Because the record is data, a new
kernel can resume it too: tools are looked up again by name.

An answer to a question (never to an approval card: only a person approves, docs/security.md)
can also come from an :class:`~jupyter_agent.base.answers.AnswerSource` instead of the user: a
replayed cassette answers the questions that were clicked while recording. :func:`settle`
is that seam (the entry points call it after their first drive, :func:`resume` after each
resumed part), and ``resume(answers=...)`` hands the source on to the resumed run. A recording
keeps every answer given through the turn client's :class:`~jupyter_agent.base.answers.AnswerLog`.
A run suspended on a cassette's client continues on that client in this process
(:data:`~jupyter_agent.agents.held.HELD`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ..base.answers import Answer, AnswerSource, WaitingAsk
from ..base.errors import ParameterError, ResumeError
from ..base.events import EVENT_ADAPTER, BaseEvent
from ..base.jsontypes import list_field
from ..llm.protocol import ModelClient
from ..view.reduce import new_view, reduce_event
from .approval_answers import approval_choice
from .held import HELD, Parts
from .pending import PendingRun, ToolloopPending, load_pending
from .plan.loop import resume_plan
from .run import Run
from .toolloop_resume import resume_toolloop
from .turn.finish import finish_turn
from .turn.open import TurnContext, open_turn
from .turn.options import TurnOptions, with_cache

if TYPE_CHECKING:
    from ..clients.cassette import RecordedAnswer
    from ..clients.turn_client import TurnClient
    from ..session.store import Store, StoreChoice

__all__ = ["Answer", "resume", "answer_now", "settle", "OptionOutOfRange",
           "register_external", "ExternalResumer"]

ExternalResumer = Callable[..., "Run | None"]
"""Answers a run whose waiting request lives outside our loop (an ACP agent's permission,
``acp/bridge.py``): ``(run_id, answer, store=, listeners=, expected_call_id=) -> Run``."""
_EXTERNAL: dict[str, ExternalResumer] = {}


def register_external(kind: str, resumer: ExternalResumer) -> None:
    """Route answers to runs saved with pending ``kind`` to ``resumer`` (registered by the
    module that holds those requests, when it is imported: a kernel that never ran one has
    none, so the run is answered as ended)."""
    _EXTERNAL[kind] = resumer


def _external(store: Store, run_id: str, answer: Answer,
              listeners: Sequence[Callable[[BaseEvent], None]] | None,
              expected_call_id: str | None) -> Run | None:
    """The resumed run when ``run_id`` waits on an external request, else ``None``. Its
    request died with the kernel that held it: the run is marked aborted and refused."""
    record = store.get_run(run_id)
    pending = record.pending if record is not None else None
    kind = pending.get("kind") if isinstance(pending, dict) else None
    if kind not in ("acp",):
        return None
    resumer = _EXTERNAL.get(kind)
    if resumer is not None:
        run: Run | None = resumer(run_id, answer, store=store, listeners=list(listeners or []),
                                  expected_call_id=expected_call_id)
        if run is not None:
            return run
    words = (pending or {}).get("command")
    command = " ".join(str(a) for a in (words if isinstance(words, list) else [])) or "the agent"
    message = (f"The ACP agent `{command}` ended with its kernel: run its cell again "
               "(nothing was answered).")
    if store.claim_pending(run_id) is not None:
        store.set_status(run_id, "aborted", error=message)
    raise ResumeError(message)


class OptionOutOfRange(ResumeError, ParameterError):
    """An option number the waiting card does not have (nothing changed)."""


def _rebuild_run(store: Store, run_id: str, pending: PendingRun) -> Run:
    """A Run object for ``run_id`` from its stored events (after a kernel restart)."""
    record = store.get_run(run_id)
    run = Run(agent=record.kind if record else pending.kind, model=pending.model,
              session=record.session if record else None, run_id=run_id)
    view = new_view()
    for d in store.get_events(run_id):
        try:
            ev: BaseEvent = EVENT_ADAPTER.validate_python(d)
        except Exception:  # an event from a newer version: skip it, keep the rest
            continue
        run.events.append(ev)
        reduce_event(view, ev)
    run.view = view
    run.rounds = pending.rounds
    return run


def _recorded(ask: WaitingAsk) -> RecordedAnswer | None:
    """The answer the active cassette recorded for ``ask`` in replay mode (else ``None``)."""
    from ..base import config

    if config.settings.cassette_mode != "replay":
        return None
    from ..clients.cassettes import active_cassette

    return active_cassette().peek_answer(ask.call_id, ask.question)


def mark_recorded(run: Run) -> None:
    """In replay mode, put the option the recording answered a waiting card with into the
    view (``view["ask"]["recorded_option"]``), so the card marks it and says why the others
    are refused. Nothing for an answer given as text or a dismissal, or a damaged option."""
    ask = run.view.get("ask")
    if run.pending is None or not isinstance(ask, dict) or ask.get("answered"):
        return
    recorded = _recorded(run.pending.waiting_ask())
    n = len(list_field(ask, "options")) or (3 if ask.get("kind") == "approval" else 0)
    if (recorded is not None and recorded.how == "option" and recorded.option_index
            and 1 <= recorded.option_index <= n):
        ask["recorded_option"] = recorded.option_index


def _as_recorded(ask: WaitingAsk, answer: Answer, n_options: int) -> None:
    """In replay mode, refuse an answer other than the recorded one (the cassette holds no
    continuation for it), before anything changes: the question keeps waiting. A recorded
    option outside the card's options (a damaged cassette) refuses nothing here."""
    if ask.kind == "approval" and approval_choice(answer) == "deny":
        return  # a person may always refuse a call, whatever the recording did
    recorded = _recorded(ask)
    if recorded is not None and recorded.how == "option" and not (
            recorded.option_index and 1 <= recorded.option_index <= n_options):
        return
    if recorded is None or (recorded.how == answer.how and (
            recorded.how != "option" or recorded.option_index == answer.option_index)):
        return
    given = {"option": f"option {recorded.option_index}", "other": "with its own text",
             "dismissed": "by dismissing it"}[recorded.how]
    raise ResumeError(f"This recording answered {given}: answer the same way, or go live "
                      "(`%agent live`) and run the cell again to ask the model; the question "
                      "still waits.")


def settle(p: TurnContext, run: Run) -> Run:
    """After ``run`` stopped: if it waits for an answer while a cassette is in use, keep its
    turn client for the resume, and answer it from the turn's answer source (a replay) as long
    as the source has the answer. Returns the run as it stands then."""
    tc = p.turn_client
    while (run.status == "ask" and run.pending is not None and tc.keeps_client
           and p.store is not None):
        HELD.keep(run.run_id, client=tc)
        pending = run.pending
        answer = None
        # Only questions: an approval card is answered by a person, never by a recording
        # (a cassette travels with a shared notebook, and the sandbox can write one).
        if tc.answers is not None and pending.card.kind != "approval":
            answer = tc.answers.answer_for(pending.waiting_ask())
        if answer is None:
            mark_recorded(run)
            break  # the user (or the notebook's own `%agent resume` cell) answers it
        p, run = _resume(run.run_id, answer, run=run, store=p.store,
                         listeners=list(p.recorder.listeners),
                         expected_call_id=pending.call_id, client=None, answers=tc.answers)
        tc = p.turn_client
    return run


def resume(run_id: str | None, answer: Answer, *, run: Run | None = None, store: StoreChoice = "default",
           listeners: Sequence[Callable[[BaseEvent], None]] | None = None,
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
        ResumeError: nothing is pending under that id (answered, superseded, unknown), the
            answer does not fit the question, or the saved state cannot be read (saved by a
            newer jupyter-agent, damaged). Nothing changes in that case.
    """
    found_store, found_id = _waiting_run(store, run_id)
    outside = _external(found_store, found_id, answer, listeners, expected_call_id)
    if outside is not None:  # never a cassette's answer: only a person answers an agent
        return outside
    p, run = _resume(run_id, answer, run=run, store=store, listeners=listeners,
                     expected_call_id=expected_call_id, client=client, answers=answers)
    return settle(p, run)


def _waiting_run(store: StoreChoice, run_id: str | None) -> tuple[Store, str]:
    """The store (``"default"``: the process-wide one) and the run to resume (``None``: the
    newest waiting one)."""
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
    return store, run_id


def _check_answer(store: Store, run_id: str, answer: Answer) -> None:
    """Refuse, before the claim, an answer the waiting card cannot take (an option it does
    not have; in replay mode, another answer than the recorded one). A saved state this code
    cannot read is refused here too, and stays waiting."""
    record = store.get_run(run_id)
    if record is None:
        raise ResumeError(f"No run {run_id!r} in the store.")
    if not record.pending:
        return  # no pending ask (answered, superseded): the claim refuses it with the reason
    pending = load_pending(record.pending, run_id)
    options = pending.card.options
    if (answer.how == "option" and options
            and not (answer.option_index and 1 <= answer.option_index <= len(options))):
        raise OptionOutOfRange(f"option must be between 1 and {len(options)}; nothing "
                               "changed.", parameters=("option",))
    if answer.how == "other" and not pending.card.allow_other:
        # The card offered no free text (an approval card, a question asked with
        # allowOther=false): typed text would reach the model as an answer nobody was offered.
        raise ResumeError(f"This card takes an option (1 to {len(options)}) or a dismissal, "
                          "not text; nothing changed.")
    _as_recorded(pending.waiting_ask(), answer, len(options))


def _resume(run_id: str | None, answer: Answer, *, run: Run | None, store: StoreChoice,
            listeners: Sequence[Callable[[BaseEvent], None]] | None, expected_call_id: str | None,
            client: ModelClient | None, answers: AnswerSource | None
            ) -> tuple[TurnContext, Run]:
    """:func:`resume` without :func:`settle`: the resumed part, and the run it leaves."""
    from ..clients.factory import turn_client
    from ..clients.turn_client import bind_client

    store, run_id = _waiting_run(store, run_id)
    _check_answer(store, run_id, answer)
    raw = store.claim_pending(run_id, expected_call_id)
    if raw is None:
        raise ResumeError(_refusal(store, run_id, expected_call_id))
    pending = load_pending(raw, run_id)
    held = HELD.take(run_id)
    try:
        if run is None:
            run = _rebuild_run(store, run_id, pending)
        if client is not None:
            tc = bind_client(client, pending.model)
        else:  # the client the run was suspended on, else one with the configured fallbacks
            tc = held.client or with_cache(turn_client(pending.model), pending.cache)
    except BaseException:
        store.suspend(run_id, raw)  # a missing key must not lose the question
        HELD.put_back(run_id, held)
        raise
    if answers is not None:
        tc = dataclasses.replace(tc, answers=answers)
    return _continue(run, pending, answer, tc, held, store=store, listeners=listeners,
                     by_click=expected_call_id is not None)


def answer_now(p: TurnContext, run: Run, answer: Answer) -> Run:
    """Answer ``run``'s waiting ask in this call, right after the turn ``p`` suspended it (an
    answer given up front): through the store when the turn has one, else from the Run
    object itself, which then is the only record. Either way the same road as any resume."""
    listeners = list(p.recorder.listeners)
    if p.store is not None:
        return resume(run.run_id, answer, run=run, store=p.store, listeners=listeners,
                      client=p.client)
    pending = run.pending
    if pending is None:
        raise ResumeError(f"Run {run.run_id} is not waiting for an answer; nothing changed.")
    held = HELD.take(run.run_id)
    _, run = _continue(run, pending, answer, held.client or p.turn_client, held, store=None,
                       listeners=listeners, by_click=False)
    return run


def _continue(run: Run, pending: PendingRun, answer: Answer, tc: TurnClient, held: Parts, *,
              store: Store | None, listeners: Sequence[Callable[[BaseEvent], None]] | None,
              by_click: bool) -> tuple[TurnContext, Run]:
    """The resumed part of a claimed run: a turn opened like the first one, with what the first
    was started with (its abort check, ``on_end``, a typed run's schema: ``held``), and the
    run continued by its kind."""
    run.pending = None
    opt = TurnOptions(session=run.session, history=0, store=store, listeners=list(listeners or []),
                      schema_retries=pending.schema_retries, is_aborted=held.is_aborted,
                      on_end=held.on_end, cache=pending.cache)
    if held.output is not None or pending.output is not None:  # a typed run stays typed
        from ..llm.structured import output_spec

        opt.output = output_spec(held.output or pending.output)
    # The same opening as a new turn's; a store failing here ends the claimed run "error".
    p = open_turn(pending.kind, run.prompt, opt, tc, store=store, mode="agent", resuming=run,
                  persisted=pending.persisted)
    recorder = p.recorder
    # From here the run is ours and "running": whatever raises ends it "error"/"aborted".
    with recorder.finishing(lambda status: finish_turn(p, status)):
        recorder.emit(answer.event(pending.call_id, pending.card.options))
        if tc.answer_log is not None:  # a recording keeps the answer for its replay
            tc.answer_log.keep(pending.waiting_ask(), answer, "click" if by_click else "code")
        run.status = "running"
        # The one dispatch by kind (no registry: both resumers sit below this module).
        if isinstance(pending, ToolloopPending):
            return p, resume_toolloop(p, pending, answer, held)
        return p, resume_plan(p, pending, answer, held)


def _refusal(store: Store, run_id: str, expected_call_id: str | None) -> str:
    """Why an answer was refused (read after the failed claim, so a race reports the winner)."""
    record = store.get_run(run_id)
    if (record is not None and record.status == "ask" and expected_call_id is not None
            and record.pending_call_id != expected_call_id):
        # A card answered already (or replaced by a later one): the run waits on another call.
        return (f"That card (call {expected_call_id}) is no longer waiting: run {run_id} now "
                f"waits on call {record.pending_call_id}; nothing changed.")
    status = record.status if record is not None and record.status != "ask" else "answered"
    return f"Run {run_id} is not waiting for an answer any more ({status}); nothing changed."
