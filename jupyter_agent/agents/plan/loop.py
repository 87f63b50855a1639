"""The ``%%plan`` loop: a fresh run's first part, and a suspended run continued.

A run keeps an active plan up to date through ``update_plan``, may ask the user through
``ask_agent``, and may only finish when the stop gate allows it. An ask (or an approval card)
suspends the run: the cell ends (the kernel is never blocked) and everything needed to continue
is saved as a :class:`~jupyter_agent.agents.pending.PlanPending`. :func:`resume_plan` continues
it, in this kernel or in a new one, by appending the answer as the ask call's result.

The public entry point, with the answers given up front, is :func:`.agent.plan`.
"""

from __future__ import annotations

from typing import Final, Literal

from ...base.answers import Answer
from ...base.events import BaseEvent, PlanStatus, ToolCalled, Warning_
from ...base.jsontypes import as_list, object_field
from ...llm.profiles import map_temperature
from ...llm.tokens import count_tools_tokens
from ...llm.types import Message
from ...loop.kernel import LoopConfig, LoopResult
from ...tools.registry import REGISTRY, AnyTool
from ..held import HELD, Parts
from ..pending import ApprovalCard, PlanOptions, PlanPending, QuestionCard, parse_card
from ..run import Run
from ..turn.drive import drive
from ..turn.finish import suspend
from ..turn.open import TurnContext
from ..turn.setup import TurnSetup
from ..turn.start import Turn, restore_setup
from ._hooks import PlanHooks
from .approvals import plan_approval_answer
from .ask import AskAnswer, AskRequest, format_answer_for_model
from .constants import BATCH_TOOL_SIZE, UPDATE_PLAN_TOOL_NAME
from .run_state import PlanRunState, build_initial_messages, final_answer_text
from .tools import ToolCatalog, normalize_catalog

__all__ = ["KIND", "run_plan", "resume_plan"]

KIND: Final[Literal["plan"]] = "plan"
"""The run kind and agent name of ``%%plan`` runs."""


def run_plan(turn: Turn, max_rounds: int) -> Run:
    """The first part of a new ``%%plan`` run, on a started turn (until it ends or asks)."""
    p, rt = turn.ctx, turn.setup
    assert rt is not None  # a plan turn always has its runtime setup
    catalog = normalize_catalog(rt.tools)
    for warning in catalog.warnings:
        p.recorder.emit(Warning_(message=warning))
    messages = build_initial_messages([*p.history, turn.user_message], system_prompt=turn.system,
                                      has_runtime_tools=catalog.has_runtime_tools)
    state = PlanRunState.start(messages)
    kept = set(catalog.runtime_names)  # the catalog drops a tool named like an internal one
    by_name = {t.name: t for t in rt.tools if t.name in kept}
    opt = turn.opt
    lo = PlanOptions(temperature=opt.temperature, max_tokens=opt.max_tokens,
                     stream=opt.stream, max_rounds=max_rounds)
    return _drive_plan(p, messages, catalog, by_name, state, lo,
                       turn_messages=[turn.user_message], resumed=False, runtime=rt)


def resume_plan(p: TurnContext, pending: PlanPending, answer: Answer, held: Parts) -> Run:
    """Continue a suspended ``%%plan`` run with ``answer``.

    The request messages are the saved ones plus the ask call's result; no new system prompt
    is added. The plan state is restored, the stop-gate count starts again at 0 and round
    numbers go on from where the run stopped. Runtime tools are looked up again (by name in the
    registry when this process kept no objects for the run); if one is missing the run ends
    with status ``error`` naming it, and the question is saved again so nothing is lost.
    """
    rt = restore_setup(pending.turn, p, None) if pending.turn is not None else None
    rt_tools = {t.name: t for t in rt.tools} if rt is not None else {}
    live = {t.name: t for t in held.tools or []}
    found = [live.get(n) or rt_tools.get(n) or REGISTRY.get(n) for n in pending.tools]
    missing = [n for n, t in zip(pending.tools, found, strict=True) if t is None]
    if missing:
        return _fail_missing_tools(p, pending, missing)
    tools = [t for t in found if t is not None]
    catalog = normalize_catalog(tools)
    by_name = {t.name: t for t in tools}
    card = pending.card
    stopped = False
    if isinstance(card, ApprovalCard):  # an approval card: the call runs now, or is denied
        out = plan_approval_answer(p, card, answer, by_name,
                                   rt.permissions if rt is not None else None,
                                   round_=pending.rounds)
        # An approved call that raised the stop signal ends the run here, no further request,
        # as it would have without the card (docs/behaviour.md §2.7).
        content, stopped = out.output, out.stop
    else:
        request = _ask_request(card)
        content = format_answer_for_model(request, _ask_answer(request, answer))
    answer_msg: Message = {"role": "tool", "tool_call_id": pending.call_id, "content": content}
    messages = [*pending.messages, answer_msg]
    return _drive_plan(p, messages, catalog, by_name, pending.plan_state.model_copy(deep=True),
                       pending.options, turn_messages=[*pending.turn_messages, answer_msg],
                       resumed=True, round_offset=pending.rounds, runtime=rt, stopped=stopped)


# ---------------------------------------------------------------------------- the loop
def _drive_plan(p: TurnContext, messages: list[Message], catalog: ToolCatalog,
                by_name: dict[str, AnyTool], state: PlanRunState, lo: PlanOptions, *,
                turn_messages: list[Message], resumed: bool, round_offset: int = 0,
                runtime: TurnSetup | None = None, stopped: bool = False) -> Run:
    """Run (or continue) the loop; suspend on an ask, otherwise finish the Run and the store.

    ``turn_messages``: the turn's messages before this part, the user's first. ``stopped``:
    the answered call raised the stop signal: the run ends ``done`` without a request.
    """
    prof = p.client.profile
    schemas = catalog.schemas()
    ph = PlanHooks(p.client, catalog, by_name, state, p.recorder.emit, count_tools_tokens(schemas),
                   permissions=runtime.permissions if runtime is not None else None)
    max_tokens = None if lo.max_tokens is None else max(1, min(lo.max_tokens, prof.max_output))
    # The round budget is the run's: a resume gets what is left (0 still makes the final-answer
    # request, so the answer is always read by the model).
    cfg = LoopConfig(model=prof.model, tools=schemas, max_rounds=max(0, lo.max_rounds - round_offset),
                     batch_size=BATCH_TOOL_SIZE, temperature=map_temperature(prof, lo.temperature),
                     max_tokens=max_tokens, stream=lo.stream, round_offset=round_offset,
                     vision=prof.capabilities.vision)

    def announce(event: BaseEvent) -> None:
        # An update_plan call appeared in the stream (it has not run): say whether the plan is
        # being made or changed (docs/behaviour.md §6.4). Last listener, so every consumer
        # sees the call first, then the status.
        if isinstance(event, ToolCalled) and event.name == UPDATE_PLAN_TOOL_NAME:
            p.recorder.emit(PlanStatus(
                status="updating" if state.active_plan is not None else "generating",
                round=event.round, call_id=event.call_id))

    p.recorder.listeners.append(announce)

    def on_result(result: LoopResult) -> None:
        run = p.run
        run.plan = state.active_plan.to_json() if state.active_plan is not None else None
        if result.status == "ask":
            pending = _pending(p, result, catalog, lo, turn_messages, runtime)
            if object_field(run.view, "ask").get("call_id") != pending.call_id:
                # Parallel calls emit their cards in any order; the one shown must be the one
                # waiting, or its buttons would answer nothing.
                p.recorder.emit(pending.card.event())
            HELD.keep(run.run_id, tools=list(by_name.values()))
            suspend(p, pending)
            return
        if result.status in ("done", "max_rounds", "aborted"):
            # Text that came with tool calls is not the answer (§6.12).
            result.answer = final_answer_text(result.assistant_messages) or result.answer

    return drive(p, messages, cfg, ph.hooks(), persist_from=len(messages) - 1,
                 on_result=on_result, persist_prefix=turn_messages if resumed else None,
                 stopped=stopped)


def _pending(p: TurnContext, result: LoopResult, catalog: ToolCatalog, lo: PlanOptions,
             turn_messages: list[Message], runtime: TurnSetup | None) -> PlanPending:
    """The saved state of a suspended run."""
    interactive = result.interactive or {}
    saved = [m for m in as_list(interactive.get("messages")) if isinstance(m, dict)]
    # This run part's output up to the ask round, whose assistant message is replaced by the
    # synthetic one carrying only the winning ask call (§6.11): that is what the session
    # gets once the run ends, so its history matches what the model saw.
    out = result.assistant_messages
    last = max((i for i, m in enumerate(out) if m.get("role") == "assistant"), default=len(out))
    assert result.interactive_call_id is not None
    return PlanPending(
        call_id=result.interactive_call_id, card=parse_card(object_field(interactive, "ask")), messages=saved,
        model=p.client.profile.name, tools=list(catalog.runtime_names), options=lo,
        plan_state=PlanRunState.model_validate(interactive.get("state")), rounds=p.run.rounds,
        turn_messages=[*turn_messages, *out[:last], saved[-1]],
        turn=runtime.state() if runtime is not None else None,
        output=p.output.schema if p.output else None, schema_retries=p.schema_retries,
        cache=p.cache)


# ---------------------------------------------------------------------------- answers
def _ask_request(card: QuestionCard) -> AskRequest:
    """The validated question back from its card."""
    detail = card.detail
    return AskRequest.model_validate({
        "reason": detail.get("reason", ""),
        "blocker_type": detail.get("blockerType", "ambiguous_goal"),
        "question": card.question, "options": list(card.options),
        "descriptions": list(card.descriptions), "allow_other": card.allow_other})


def _ask_answer(request: AskRequest, answer: Answer) -> AskAnswer:
    if answer.how == "option":
        return AskAnswer.choose(request, answer.option_index or 0)
    if answer.how == "other":
        return AskAnswer.other(answer.text)
    return AskAnswer.dismiss()


def _fail_missing_tools(p: TurnContext, pending: PlanPending, missing: list[str]) -> Run:
    """End this resume attempt with ``error`` and put the question back, unchanged."""
    run = p.run
    names = ", ".join(f'"{n}"' for n in missing)
    noun = "Tool" if len(missing) == 1 else "Tools"
    msg = (f"{noun} {names} not found in this kernel: define {'it' if len(missing) == 1 else 'them'}"
           f" with @tool (run the cell that does), then answer again. The question is still "
           f"waiting (run {run.run_id}).")
    # Show the question again, so the card can be answered once the tool exists.
    run.pending = pending  # still waiting: its live display must stay
    p.recorder.emit(pending.card.event())
    p.recorder.finish("error", error=msg)
    if p.store is not None:
        if p.turn_id is not None:
            p.store.finish_turn(p.turn_id, status="error", error=msg)
        p.store.suspend(run.run_id, pending.to_json(), call_id=pending.call_id)
    return run
