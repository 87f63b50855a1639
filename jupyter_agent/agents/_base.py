"""What every agent run shares: model resolution, the store, the recorder and the loop call.

An agent module (chat, toolloop, plan) builds its messages and hooks, then calls
:func:`drive`, which runs the kernel, maps its result onto the :class:`Run`, persists the turn
and emits ``run_finished``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable

from ..config import choose_model
from ..events import BaseEvent, ToolCalled, Warning_
from ..llm.client import ModelClient
from ..llm.types import Usage
from ..loop.hooks import ContextFit, LoopHooks, UsageItem
from ..loop.kernel import LoopConfig, LoopResult, run_loop
from .run import Run, RunRecorder

__all__ = ["TurnOptions", "Prepared", "prepare", "drive", "window_fitter", "tool_output_processor",
           "compress_llm"]


@dataclass
class TurnOptions:
    """Options shared by every agent entry point (the magics map their flags onto these)."""

    model: str | None = None
    system: str | None = None
    session: str | None = "default"
    history: int | None = 6
    """Rounds of session history sent along (``0``/``None``: none)."""
    temperature: float | None = None
    max_tokens: int | None = None
    stream: bool = True
    knowledge: Any = None
    listeners: list[Callable[[BaseEvent], None]] = field(default_factory=list)
    store: Any = "default"
    """A :class:`~jupyter_agent.session.Store`, ``None`` for no persistence, or ``"default"``."""
    client: ModelClient | None = None
    """Use this client instead of resolving one from the settings (tests, sub-agents)."""
    agent: Any = None
    """A named agent (:class:`~jupyter_agent.runtime.agents.Agent` or its name); ``%%toolloop``
    and ``%%plan`` only."""
    auto_approve: bool = False
    """Scripts: tools that would ask for approval run without a card (denies still apply)."""
    is_aborted: Callable[[], bool] | None = None
    """Polled before each round and between streamed chunks: ``True`` ends the run with
    status ``aborted`` (a batch's stop button aborts its items in flight this way)."""


@dataclass
class Prepared:
    """A run ready to start: client, Run, recorder and store resolved."""

    client: ModelClient
    run: Run
    recorder: RunRecorder
    store: Any
    turn_id: str | None
    history: list[dict[str, Any]]
    turn_base: tuple[int, int, float] = (0, 0, 0.0)
    """The run's tokens and cost before this turn (a resumed run): the turn records the rest."""
    persisted: int = 0
    """Leading messages of this turn already in the session (written before a suspension)."""
    is_aborted: Callable[[], bool] | None = None
    """The caller's abort check (:attr:`TurnOptions.is_aborted`)."""


def _store(opt: TurnOptions) -> Any:
    if opt.store == "default":
        from ..session import default_store

        return default_store()
    return opt.store


def prepare(kind: str, prompt: str, opt: TurnOptions, *, mode: str = "ask", intent: Any = None,
            agent: str | None = None) -> Prepared:
    """Resolve the model and client (raising a clear error before anything is recorded),
    create the run record and the turn, and load the session history.

    ``intent`` (an ``IntentResult``) and ``agent`` (the role's name) go into the turn record.
    """
    store = _store(opt)
    session_model = None
    if store is not None and opt.session:
        rec = store.get_session(opt.session)
        session_model = rec.model if rec is not None else None
    if opt.client is not None:
        client = opt.client
        model = opt.model or client.profile.name
    else:
        from ..runtime.failover import client_for

        model = choose_model(opt.model, session_model)
        client = client_for(model)  # a FailoverClient when fallback profiles are configured
    run = Run(agent=kind, model=model, prompt=prompt, session=opt.session)
    recorder = RunRecorder(run, store, opt.listeners)
    turn_id = None
    history: list[dict[str, Any]] = []
    if store is not None:
        if opt.session:
            store.supersede_pending(opt.session)  # a new turn makes older asks stale
            if opt.history:
                history = store.history_messages(opt.session, opt.history)
        store.create_run(run.run_id, opt.session, kind)
        if opt.session:
            turn_id = store.start_turn(opt.session, mode=mode, run_id=run.run_id,  # type: ignore[arg-type]
                                       agent=agent or kind, intent=intent, model=model,
                                       profile=client.profile.name)
    if hasattr(client, "answered_profile"):
        client.emit = recorder.emit  # a failover shows as a warning in the run
    from ..config import local_default_notice

    recorder.start()
    # Only when nothing chose the model: an explicit `--model local` needs no explanation.
    explicit = opt.model or session_model or opt.client is not None
    notice = None if explicit else local_default_notice(model)
    if notice:
        recorder.emit(Warning_(message=notice))
    return Prepared(client, run, recorder, store, turn_id, history, is_aborted=opt.is_aborted)


def window_fitter(max_context: int, max_tokens: int | None, tools_tokens: int
                  ) -> Callable[[int, list[dict[str, Any]], int], ContextFit | None]:
    """A ``fit_context`` hook that cuts old rounds above 85% of the window (spec 4.4/6.2)."""
    from ..llm.tokens import count_messages_tokens
    from ..loop.compress.window import fit_messages_to_window

    budget = max_context - (max_tokens or 0)
    threshold = int(budget * 0.85)

    def fit(round_: int, messages: list[dict[str, Any]], tokens: int) -> ContextFit | None:
        if tokens <= threshold:
            return None
        kept = fit_messages_to_window(messages, budget, tools_tokens)
        if len(kept) == len(messages):
            return None
        return ContextFit(messages=kept, tokens=count_messages_tokens(kept) + tools_tokens)

    return fit


def compress_llm(client: ModelClient, module: str) -> Callable[[str, str, int], tuple[str, Usage]]:
    """A compression LLM callable (non-streamed, no tools) bound to ``client``."""
    from ..llm.types import ChatRequest
    from ..loop.compress.types import CompressLLMError

    def call(system_prompt: str, user_prompt: str, max_tokens: int) -> tuple[str, Usage]:
        req = ChatRequest(model=client.profile.model, stream=False, max_tokens=max_tokens,
                          messages=[{"role": "system", "content": system_prompt},
                                    {"role": "user", "content": user_prompt}])
        resp = client.complete(req)
        if resp.error:
            raise CompressLLMError(resp.error)
        if resp.aborted:
            raise CompressLLMError("aborted", usage=resp.usage, aborted=True)
        return resp.text, resp.usage

    return call


def tool_output_processor(client: ModelClient) -> Callable[[str], tuple[str, list[UsageItem]]]:
    """The ``process_tool_output`` hook: spec 6.3 compression of long tool results."""
    from ..loop.compress.tool_response import compress_tool_response

    llm = compress_llm(client, "tool_response_compress")
    max_context = client.profile.max_context

    def process(text: str) -> tuple[str, list[UsageItem]]:
        result = compress_tool_response(text, max_context, llm)
        usages = [UsageItem(u.module, client.profile.name, u.usage, client.cost(u.usage))
                  for u in result.usage]
        return result.text, usages

    return process


def drive(p: Prepared, messages: list[dict[str, Any]], cfg: LoopConfig, hooks: LoopHooks,
          *, persist_from: int, on_result: Callable[[LoopResult], None] | None = None,
          persist_prefix: list[dict[str, Any]] | None = None) -> Run:
    """Run the kernel and finish the run.

    ``persist_from`` is the index in ``messages`` of the first message that belongs to this
    turn (the user message); it and everything the loop adds are appended to the session.
    A resumed run passes ``persist_prefix`` instead: the turn's messages from before the
    suspension (user message first), saved in front of what the loop adds.
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
    try:
        result = run_loop(p.client, messages, cfg, hooks, recorder.emit)
    except BaseException as exc:  # never leave a run "running" in the store
        recorder.finish("error", error=f"{type(exc).__name__}: {exc}")
        _finish_turn(p, "error")
        raise
    run.messages = result.messages
    run.tool_values.update(result.tool_values)
    run.tool_records.extend(result.tool_records)
    run.input_tokens += result.input_tokens
    run.output_tokens += result.output_tokens
    run.cost += result.cost
    run.rounds += result.rounds
    if on_result is not None:
        on_result(result)  # may suspend the run (plan ask, approvals)
    if result.status != "ask":
        persist(result.assistant_messages)
    elif p.store is not None and run.pending is not None and written:
        # The resume will save head + output again: tell it how much is already there.
        run.pending["persisted"] = written
        p.store.suspend(run.run_id, run.pending, call_id=run.pending.get("call_id"))
    status = result.status
    recorder.finish(status, answer=result.answer if status != "error" else "",
                    error=result.error, finish_reason=result.finish_reason)
    if p.store is not None and status != "ask":  # an ask was saved by ``suspend``
        p.store.set_status(run.run_id, status)
    _finish_turn(p, status)
    hook = getattr(p.client, "on_suspended", None)
    if status == "ask" and hook is not None:
        return hook(p)  # record/replay: keep the client; a replay answers from its cassette
    return run


def _finish_turn(p: Prepared, status: str) -> None:
    if p.store is None or p.turn_id is None:
        return
    r = p.run
    base_in, base_out, base_cost = p.turn_base
    # After a failover the turn records the profile that answered, not the one it started on.
    answered = getattr(p.client, "answered_profile", None)
    p.store.finish_turn(p.turn_id, status=status, input_tokens=r.input_tokens - base_in,
                        output_tokens=r.output_tokens - base_out, cost=r.cost - base_cost,
                        duration=r.seconds, model=answered, profile=answered)
