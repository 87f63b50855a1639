"""Driving a turn: the kernel call, the run's result, the session written round by round.

:func:`drive` runs the kernel (:func:`jupyter_agent.loop.kernel.run_loop`) with the turn's
client, maps its result onto the :class:`~jupyter_agent.agents.run.Run`, persists the turn and
emits ``run_finished``; the turn record is closed by :func:`~.finish.finish_turn`. The loop
only ever sees the :class:`~jupyter_agent.llm.protocol.ModelClient` protocol.
"""

from __future__ import annotations

import dataclasses
from contextvars import ContextVar
from typing import Callable

from ...base.events import OutputChecked, ToolCalled
from ...llm.structured import OutputSpec, retry_message
from ...llm.types import Message
from ...loop.hooks import LoopHooks
from ...loop.kernel import LoopConfig, LoopResult, answer_of, run_loop
from ..run import Run
from .finish import finish_turn
from .open import TurnContext

__all__ = ["drive", "calling_abort_check"]

# The abort check of the loop whose tools are running in this context (tool threads get a copy
# of the caller's context): a sub-agent started by a tool stops when the calling run is aborted.
_ABORT_CHECK: ContextVar[Callable[[], bool] | None] = ContextVar("jupyter_agent_abort_check",
                                                                 default=None)


def calling_abort_check() -> Callable[[], bool] | None:
    """The abort check of the run whose tool is calling (``None`` outside a run's tools)."""
    return _ABORT_CHECK.get()


class _SessionWriter:
    """Appends the turn's messages to the session round by round, so a crash mid-turn loses
    nothing already finished: ``head`` (the user message, or a resumed turn's messages from
    before its suspension) and then what the loop adds."""

    def __init__(self, p: TurnContext, head: list[Message]) -> None:
        self.p = p
        self.head = head
        self.written = p.persisted
        """Leading messages of head + output already in the session (a resumed run counts on)."""

    def persist(self, output: list[Message]) -> None:
        """Write what is new: the round's messages (a run in a session) and its buffered
        events, in one transaction (the only write a round makes)."""
        p = self.p
        if p.store is None:
            return
        full = [*self.head, *output]
        if not p.run.session or len(full) <= self.written:
            p.recorder.flush()
            return
        with p.store.transaction():
            p.store.append_messages(p.run.session, p.turn_id, full[self.written:])
            p.recorder.flush()
        self.written = len(full)


def _turn_hooks(p: TurnContext, hooks: LoopHooks, writer: _SessionWriter) -> LoopHooks:
    """``hooks`` with the session written at each round's end, and aborted by the run's stop
    button, the agent's own check or the caller's (``TurnOptions.is_aborted``)."""
    run, user_hook, user_aborted, caller_aborted = (p.run, hooks.on_round_end, hooks.is_aborted,
                                                    p.is_aborted)

    def on_round_end(output: list[Message]) -> None:
        writer.persist(output)
        if user_hook is not None:
            user_hook(output)

    return dataclasses.replace(
        hooks, on_round_end=on_round_end,
        is_aborted=lambda: run.abort_requested or bool(user_aborted and user_aborted())
        or bool(caller_aborted and caller_aborted()))


def _turn_config(p: TurnContext, cfg: LoopConfig) -> LoopConfig:
    """``cfg`` with the run's used call ids reserved and a typed run's response format."""
    run = p.run
    # A resumed run's earlier calls keep their ids: a new call never takes one of them, even
    # when context fitting dropped the message that carried it.
    used = {e.call_id for e in run.events if isinstance(e, ToolCalled)} | set(run.tool_values)
    if used:
        cfg = dataclasses.replace(cfg, reserved_ids=cfg.reserved_ids | used)
    if p.output is not None:
        cfg = dataclasses.replace(cfg, response_format=p.output.response_format)
    return cfg


def _add_result(run: Run, result: LoopResult) -> None:
    """What the loop did, added to the run (a resumed run adds to what it had)."""
    run.messages = result.messages
    run.tool_values.update(result.tool_values)
    run.tool_records.extend(result.tool_records)
    run.input_tokens += result.input_tokens
    run.output_tokens += result.output_tokens
    run.cost += result.cost
    run.rounds += result.rounds
    run.request_ids.extend(result.request_ids)


def drive(p: TurnContext, messages: list[Message], cfg: LoopConfig, hooks: LoopHooks,
          *, persist_from: int, on_result: Callable[[LoopResult], None] | None = None,
          persist_prefix: list[Message] | None = None, stopped: bool = False) -> Run:
    """Run the kernel and finish the run.

    ``persist_from`` is the index in ``messages`` of the first message that belongs to this
    turn (the user message); it and everything the loop adds are appended to the session.
    A resumed run passes ``persist_prefix`` instead: the turn's messages from before the
    suspension (user message first), saved in front of what the loop adds.
    ``stopped``: a tool raised the stop signal before this call (a resumed run's approved
    call): no request is made and the run ends ``done`` (docs/behaviour.md §2.7).
    """
    run, recorder = p.run, p.recorder
    writer = _SessionWriter(p, persist_prefix if persist_prefix is not None
                            else messages[persist_from:persist_from + 1])
    hooks = _turn_hooks(p, hooks, writer)
    cfg = _turn_config(p, cfg)
    # Whatever raises from here on (a hook, the store, Ctrl-C) ends the run "error"/"aborted".
    with recorder.finishing(lambda status: finish_turn(p, status)):
        with p.turn_client.reporting_to(recorder.emit), run.looping():
            # (a failover shows as a warning; a stop from another thread interrupts the loop)
            if stopped:
                result = LoopResult(status="done", messages=list(messages), stopped=True,
                                    answer=answer_of(list(writer.head)))
            else:
                token = _ABORT_CHECK.set(hooks.is_aborted)
                try:
                    result = run_loop(p.client, messages, cfg, hooks, recorder.emit)
                    if p.output is not None and result.status == "done":
                        result = _typed(p, p.output, result, cfg, hooks)
                finally:
                    _ABORT_CHECK.reset(token)
        _add_result(run, result)
        if on_result is not None:
            on_result(result)  # may suspend the run (plan ask, approvals)
        if result.status != "ask":
            writer.persist(result.assistant_messages)
        elif p.store is not None and run.pending is not None and writer.written:
            # The resume will save head + output again: tell it how much is already there.
            run.pending.persisted = writer.written
            p.store.suspend(run.run_id, run.pending.to_json(), call_id=run.pending.call_id)
        status = result.status
        # Also writes the status to the store (an ask was saved by ``suspend``).
        recorder.finish(status, answer=result.answer if status != "error" else "",
                        error=result.error, finish_reason=result.finish_reason)
    finish_turn(p, status)
    return run


def _typed(p: TurnContext, spec: OutputSpec, result: LoopResult, cfg: LoopConfig,
           hooks: LoopHooks) -> LoopResult:
    """Check a typed run's answer; send the errors back and ask again (one round, no tools)
    at most ``p.schema_retries`` times; then the run ends ``invalid`` (docs/behaviour.md §10.14).
    """
    checked = spec.check(result.answer)
    attempts = 1
    retry_hooks = LoopHooks(is_aborted=hooks.is_aborted)
    while not checked.valid and attempts <= p.schema_retries:
        ask: Message = {"role": "user", "content": retry_message(checked.errors)}
        retry_cfg = dataclasses.replace(cfg, tools=None, max_rounds=1, final_answer_round=False,
                                        round_offset=cfg.round_offset + result.rounds)
        more = run_loop(p.client, [*result.messages, ask], retry_cfg, retry_hooks,
                        p.recorder.emit)
        result.assistant_messages += [ask, *more.assistant_messages]
        result.messages = more.messages
        result.rounds += more.rounds
        result.input_tokens += more.input_tokens
        result.output_tokens += more.output_tokens
        result.cost += more.cost
        result.usages += more.usages
        result.request_ids += more.request_ids
        result.status, result.error = more.status, more.error
        result.finish_reason = more.finish_reason or result.finish_reason
        if more.status != "done":
            return result
        result.answer = more.answer
        checked = spec.check(more.answer)
        attempts += 1
    p.recorder.emit(OutputChecked(schema_name=spec.name, valid=checked.valid,
                                  data=checked.data, errors=list(checked.errors),
                                  attempts=attempts))
    p.run.output = checked.value
    if not checked.valid:
        result.status = "invalid"  # type: ignore[assignment]  # a run status, not the loop's
        result.error = (f"The answer does not match {spec.name} after {attempts} "
                        f"attempt{'s' if attempts != 1 else ''}: {checked.errors[0]}")
    return result
