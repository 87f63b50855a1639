"""What every agent run shares: the turn's context, the loop call, the end of the turn.

:func:`open_turn` resolves the model and client (the client factory,
:func:`jupyter_agent.clients.factory.turn_client`, once per turn), creates the run and turn
records and loads the session history: a :class:`TurnContext`. The turn driver
(:mod:`jupyter_agent.agents.driver`) calls it for every new turn; a resume builds its context
from the saved run. :func:`drive` runs the kernel, maps its result onto the :class:`Run`,
persists the turn round by round and emits ``run_finished``; :func:`suspend` saves a run that
waits for an answer. The loop only ever sees the
:class:`~jupyter_agent.llm.protocol.ModelClient` protocol.
"""

from __future__ import annotations

import dataclasses
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Literal

from .._previews import history_text
from ..events import BaseEvent, ToolCalled, ToolReturned, Warning_
from ..llm.protocol import ModelClient
from ..loop.hooks import LoopHooks
from ..loop.kernel import LoopConfig, LoopResult, answer_of, run_loop
from .pending import PendingRun
from .run import Run, RunRecorder

if TYPE_CHECKING:
    from ..clients.turn import TurnClient
    from ..llm.profiles import ModelProfile
    from ..session.store import Store

__all__ = ["TurnOptions", "TurnContext", "resolve_store", "resolve_client", "resolve_profile", "open_turn", "drive", "finish_turn",
           "suspend", "calling_abort_check"]

# The abort check of the loop whose tools are running in this context (tool threads get a copy
# of the caller's context): a sub-agent started by a tool stops when the calling run is aborted.
_ABORT_CHECK: ContextVar[Callable[[], bool] | None] = ContextVar("jupyter_agent_abort_check",
                                                                 default=None)


def calling_abort_check() -> Callable[[], bool] | None:
    """The abort check of the run whose tool is calling (``None`` outside a run's tools)."""
    return _ABORT_CHECK.get()


@dataclass
class TurnOptions:
    """Options shared by every agent entry point (the magics map their flags onto these)."""

    model: str | None = None
    system: str | None = None
    session: str | None = field(default_factory=lambda: _current_session())
    """The session (its history, its questions); by default the current one: the notebook's
    own in a notebook, ``default`` in a script (:func:`jupyter_agent.config.default_session`)."""
    history: int | None = 6
    """Rounds of session history sent along (``0``/``None``: none)."""
    temperature: float | None = None
    max_tokens: int | None = None
    stream: bool = True
    knowledge: Any = None
    quote_role: Literal["system", "user"] = "system"
    """Where the knowledge goes: an extra system part, or the user message (docs/behaviour.md
    §3.2); a ``quote_prompt`` naming ``{{question}}`` always makes it ``user``."""
    quote_prompt: str | None = None
    """The knowledge prompt (``{{quote}}``, and ``{{question}}`` for the user role)."""
    quote_template: str | None = None
    """How one knowledge item is rendered (``{{q}}``, ``{{a}}``, ``{{source}}``...)."""
    listeners: list[Callable[[BaseEvent], None]] = field(default_factory=list)
    store: Store | Literal["default"] | None = "default"
    """A :class:`~jupyter_agent.session.Store`, ``None`` for no persistence, or ``"default"``."""
    client: ModelClient | None = None
    """Use this client instead of resolving one from the settings (tests, sub-agents)."""
    agent: Any = None
    """A named agent (:class:`~jupyter_agent.runtime.agents.Agent` or its name); ``%%toolloop``
    and ``%%plan`` only."""
    agent_model: str | None = None
    """The named agent's model, set by the runtime when it picks the agent (it comes after
    ``model`` in the model order of :mod:`jupyter_agent.clients.factory`)."""
    auto_approve: bool = False
    """Scripts: tools that would ask for approval run without a card (denies still apply)."""
    is_aborted: Callable[[], bool] | None = None
    """Polled before each round and between streamed chunks: ``True`` ends the run with
    status ``aborted`` (a batch's stop button aborts its items in flight this way)."""
    origin: str | None = None
    """Where the turn starts (``cell:<id>``: a notebook cell the front end named). A new turn
    supersedes only the questions waiting from the same origin (the cell re-run); ``None`` (a
    script, a console) supersedes nothing."""
    on_superseded: Callable[[list[str]], None] | None = None
    """Told the ids of the runs whose questions this turn superseded, at once (the notebook
    closes their cards)."""
    notebook: bool = False
    """Offer the notebook tools (``--notebook``; docs/notebook-tools.md)."""
    context: list[str] | None = None
    """Notebook variables whose summaries are added to the user's message (``--with``)."""
    shell: Any = None
    """The IPython shell (or a namespace dict) the notebook tools and ``context`` read; the
    edge passes it. ``None``: the running shell, else the script's ``__main__``."""


@dataclass
class TurnContext:
    """What one turn of a run works with: its client, Run, recorder, store and turn record
    (a new run's first turn, or the turn a resume adds)."""

    turn_client: TurnClient
    """The client and what comes with it (failover, a cassette's answers)."""
    run: Run
    recorder: RunRecorder
    store: Store | None
    turn_id: str | None
    history: list[dict[str, Any]]
    turn_base: tuple[int, int, float] = (0, 0, 0.0)
    """The run's tokens and cost before this turn (a resumed run): the turn records the rest."""
    persisted: int = 0
    """Leading messages of this turn already in the session (written before a suspension)."""
    event_base: int = 0
    """The run's events before this turn (a resumed run): the turn records the calls after."""
    is_aborted: Callable[[], bool] | None = None
    """The caller's abort check (:attr:`TurnOptions.is_aborted`)."""

    @property
    def client(self) -> ModelClient:
        """The model client of the run."""
        return self.turn_client.client


def _current_session() -> str:
    from ..config import settings

    return settings.session


def resolve_store(opt: TurnOptions) -> Any:
    """The session store of ``opt`` (``"default"``: the process-wide one; ``None``: none)."""
    if opt.store == "default":
        from ..session import default_store

        return default_store()
    return opt.store


def resolve_client(opt: TurnOptions, store: Any) -> TurnClient:
    """The model and client of a turn: ``opt.client`` when given, else the factory's choice
    (cell, agent, session model...; with a failover when fallback profiles are configured).

    Raises a clear error (a missing key, an unknown profile) before anything is recorded.
    """
    from ..clients.factory import turn_client
    from ..clients.turn import bind_client

    if opt.client is not None:
        return bind_client(opt.client, opt.model or opt.agent_model)
    return turn_client(opt.model, agent=opt.agent_model, session=_session_model(opt, store))


def resolve_profile(opt: TurnOptions, store: Any) -> ModelProfile:
    """The profile :func:`resolve_client` would give the turn, without building its client
    (no server started, no key needed): for checks before anything runs."""
    from ..clients.factory import turn_profile

    if opt.client is not None:
        return opt.client.profile
    return turn_profile(opt.model, agent=opt.agent_model, session=_session_model(opt, store))


def _session_model(opt: TurnOptions, store: Any) -> str | None:
    """The model bound to the turn's session, if any."""
    if store is None or not opt.session:
        return None
    rec = store.get_session(opt.session)
    return rec.model if rec is not None else None


def open_turn(kind: str, prompt: str, opt: TurnOptions, tc: TurnClient, *, store: Any,
              mode: str = "ask", intent: Any = None, agent: str | None = None) -> TurnContext:
    """Create the run (``run_started``), its record and the turn, and load the session history.

    ``tc`` is :func:`resolve_client`'s, ``store`` :func:`resolve_store`'s; ``intent`` (an
    ``IntentResult``) and ``agent`` (the role's name) go into the turn record.
    """
    from ..clients.factory import local_default_notice

    model, client = tc.model, tc.client
    run = Run(agent=kind, model=model, prompt=prompt, session=opt.session)
    recorder = RunRecorder(run, store, opt.listeners)
    turn_id = None
    history: list[dict[str, Any]] = []
    # A very small model follows an earlier answer instead of calling the tools: its tool
    # loops get no history, and the card says so (once the recorder runs, below).
    fresh = (kind == "toolloop" and bool(opt.history)
             and not client.profile.capabilities.history_in_tool_loop)
    if store is not None:
        if opt.session and opt.history and not fresh:
            history = store.history_messages(opt.session, opt.history)
        store.create_run(run.run_id, opt.session, kind, origin=opt.origin)
        if opt.session:
            turn_id = store.start_turn(opt.session, mode=mode, run_id=run.run_id,
                                       agent=agent or kind, intent=intent, model=model,
                                       profile=client.profile.name)
    recorder.start()
    # Only when nothing chose the model: an explicit `--model local` needs no explanation.
    notice = local_default_notice(tc)
    if notice:
        recorder.emit(Warning_(message=notice))
    if fresh and opt.session and store is not None and store.history_messages(opt.session, 1):
        recorder.emit(Warning_(message=(
            f"Earlier turns were not sent: {model} is a small model that copies an earlier "
            "answer instead of calling the tools, so its tool loops start fresh.")))
    return TurnContext(tc, run, recorder, store, turn_id, history, is_aborted=opt.is_aborted)


def drive(p: TurnContext, messages: list[dict[str, Any]], cfg: LoopConfig, hooks: LoopHooks,
          *, persist_from: int, on_result: Callable[[LoopResult], None] | None = None,
          persist_prefix: list[dict[str, Any]] | None = None, stopped: bool = False) -> Run:
    """Run the kernel and finish the run.

    ``persist_from`` is the index in ``messages`` of the first message that belongs to this
    turn (the user message); it and everything the loop adds are appended to the session.
    A resumed run passes ``persist_prefix`` instead: the turn's messages from before the
    suspension (user message first), saved in front of what the loop adds.
    ``stopped``: a tool raised the stop signal before this call (a resumed run's approved
    call): no request is made and the run ends ``done`` (docs/behaviour.md §2.7).
    """
    run, recorder = p.run, p.recorder
    head = (persist_prefix if persist_prefix is not None
            else messages[persist_from:persist_from + 1])
    # Leading messages of head + output already in the session (a resumed run counts on).
    written = p.persisted

    def persist(output: list[dict[str, Any]]) -> None:
        # Written round by round, so a crash mid-turn loses nothing already finished.
        nonlocal written
        if p.store is None or not run.session:
            return
        full = [*head, *output]
        if len(full) > written:
            # One transaction per round: the round's messages and its buffered events.
            with p.store.transaction():
                p.store.append_messages(run.session, p.turn_id, full[written:])
                recorder.flush()
            written = len(full)

    user_hook = hooks.on_round_end

    def on_round_end(output: list[dict[str, Any]]) -> None:
        persist(output)
        if user_hook is not None:
            user_hook(output)

    user_aborted = hooks.is_aborted
    caller_aborted = p.is_aborted
    hooks = dataclasses.replace(
        hooks, on_round_end=on_round_end,
        is_aborted=lambda: run.abort_requested or bool(user_aborted and user_aborted())
        or bool(caller_aborted and caller_aborted()))
    # A resumed run's earlier calls keep their ids: a new call never takes one of them, even
    # when context fitting dropped the message that carried it.
    used = {e.call_id for e in run.events if isinstance(e, ToolCalled)} | set(run.tool_values)
    if used:
        cfg = dataclasses.replace(cfg, reserved_ids=cfg.reserved_ids | used)
    # Whatever raises from here on (a hook, the store, Ctrl-C) ends the run "error"/"aborted".
    with recorder.finishing(lambda status: finish_turn(p, status)):
        with p.turn_client.reporting_to(recorder.emit), run.looping():
            # (a failover shows as a warning; a stop from another thread interrupts the loop)
            if stopped:
                result = LoopResult(status="done", messages=list(messages), stopped=True,
                                    answer=answer_of(list(head)))
            else:
                token = _ABORT_CHECK.set(hooks.is_aborted)
                try:
                    result = run_loop(p.client, messages, cfg, hooks, recorder.emit)
                finally:
                    _ABORT_CHECK.reset(token)
        run.messages = result.messages
        run.tool_values.update(result.tool_values)
        run.tool_records.extend(result.tool_records)
        run.input_tokens += result.input_tokens
        run.output_tokens += result.output_tokens
        run.cost += result.cost
        run.rounds += result.rounds
        run.request_ids.extend(result.request_ids)
        if on_result is not None:
            on_result(result)  # may suspend the run (plan ask, approvals)
        if result.status != "ask":
            persist(result.assistant_messages)
        elif p.store is not None and run.pending is not None and written:
            # The resume will save head + output again: tell it how much is already there.
            run.pending.persisted = written
            p.store.suspend(run.run_id, run.pending.to_json(), call_id=run.pending.call_id)
        status = result.status
        # Also writes the status to the store (an ask was saved by ``suspend``).
        recorder.finish(status, answer=result.answer if status != "error" else "",
                        error=result.error, finish_reason=result.finish_reason)
    finish_turn(p, status)
    return run


def finish_turn(p: TurnContext, status: str) -> None:
    """Close the turn record: its status, and the tokens, cost and time this turn added (a
    resumed run's turn: its part; the run's footer sums the parts)."""
    if p.store is None or p.turn_id is None:
        return
    r = p.run
    base_in, base_out, base_cost = p.turn_base
    # After a failover the turn records the profile that answered, not the one it started on.
    answered = p.turn_client.answered_profile()
    p.store.finish_turn(p.turn_id, status=status, input_tokens=r.input_tokens - base_in,
                        output_tokens=r.output_tokens - base_out, cost=r.cost - base_cost,
                        duration=p.recorder.seconds, model=answered, profile=answered,
                        error=r.error if status == "error" else None,
                        tools=_turn_tools(p), history=history_text(r.messages))


def _turn_tools(p: TurnContext) -> list[dict[str, Any]]:
    """The tool calls this turn answered, with their whole results (the store keeps previews:
    the events hold only the stream preview)."""
    whole = {rec.get("call_id"): rec for rec in p.run.tool_records}
    out = []
    for e in p.run.events[p.event_base:]:
        if isinstance(e, ToolReturned):
            rec = whole.get(e.call_id) or {}
            out.append({"call_id": e.call_id, "name": e.name, "error": e.error,
                        "output": rec.get("output", e.output)})
    return out


def suspend(p: TurnContext, pending: PendingRun) -> None:
    """Save ``pending`` for ``p.run``; the run's status becomes ``ask``."""
    p.run.pending = pending
    if p.store is not None:
        p.recorder.flush()
        p.store.suspend(p.run.run_id, pending.to_json(), call_id=pending.call_id)
