"""``%%plan``: the planning agent on the shared loop kernel (spec: reference 3.2–3.3, 6.1).

A run keeps an active plan up to date through ``update_plan``, may ask the user through
``ask_agent``, and may only finish when the stop gate allows it. An ask suspends the run: the
cell ends (the kernel is never blocked) and everything needed to continue is saved as one
``pending`` dict (see :mod:`jupyter_agent.agents.resume`). :func:`resume_plan` continues it,
in this kernel or in a new one, by appending the answer as the ask call's result.

Up-front answers for headless runs (``answer=``, ``option=``, ``auto_answer="first"``) resume
in the same call: ``answer``/``option`` answer the first ask only; ``auto_answer="first"``
answers every (further) ask with option 1. An ask nobody answered up front leaves the run
suspended with status ``ask``; :func:`resume_hint` says how to continue it.
"""

from __future__ import annotations

import weakref
from dataclasses import asdict, dataclass
from typing import Any, Literal

from ...errors import MagicUsageError
from ...events import AskPending, Warning_
from ...llm.profiles import map_temperature
from ...llm.tokens import count_tools_tokens
from ...llm.types import Message
from ...loop.kernel import LoopConfig, LoopResult
from ...tools.registry import REGISTRY, Tool
from .._base import Prepared, TurnOptions, _store, drive, prepare
from .._params import check_parameters
from ..context import TOOL_SEPARATOR, apply_knowledge, join_system
from ..resume import Answer, register_resumer, resume, settle, suspend
from ..run import Run, RunRecorder
from ._hooks import PlanHooks
from .ask import AskAnswer, AskRequest, format_answer_for_model
from .constants import BATCH_TOOL_SIZE, MAX_ROUNDS
from .run_state import PlanRunState, build_initial_messages, final_answer_text
from .tools import ToolCatalog, normalize_catalog

__all__ = ["plan", "resume_plan", "resume_hint", "KIND"]

KIND = "plan"
"""The run kind (``pending["kind"]``) and agent name of ``%%plan`` runs."""

# The Tool objects of live runs, so a resume in the same kernel uses the very objects the run
# started with (plain functions passed as ``tools=`` are not in the registry). A Run rebuilt
# from the store (a new kernel) is not in here: its tools are looked up by name.
_LIVE_TOOLS: weakref.WeakKeyDictionary[Run, dict[str, Tool[Any]]] = weakref.WeakKeyDictionary()


@dataclass
class _LoopOptions:
    """The turn options a resume needs again (saved in ``pending["options"]``)."""

    system: str | None
    temperature: float | None
    max_tokens: int | None
    stream: bool
    max_rounds: int


# ---------------------------------------------------------------------------- public API
def plan(prompt: str, *, tools: list[Any] | None = None, max_rounds: int = MAX_ROUNDS,
         answer: str | None = None, option: int | None = None,
         auto_answer: Literal["first"] | None = None, **options: Any) -> Run:
    """Run the planning agent on ``prompt`` and return its :class:`Run`.

    Args:
        prompt: The user's task.
        tools: Runtime tools (names, :class:`Tool` objects or functions); ``None`` means every
            registered ``@tool``. A tool named ``update_plan`` or ``ask_agent`` is dropped with
            a warning.
        max_rounds: Model requests for the whole run, across resumes (default 100).
        answer: Answer the first ask with this text (an option when it equals one's label).
        option: Answer the first ask with this option (counted from 1).
        auto_answer: ``"first"`` answers every ask with option 1 (after ``answer``/``option``
            answered the first one, if given).
        **options: :class:`~jupyter_agent.agents._base.TurnOptions` fields (``model``,
            ``system``, ``session``, ``history``, ``temperature``, ``max_tokens``,
            ``knowledge``, ``listeners``, ``store``, ``client``).

    Returns:
        The run: ``status`` is ``done``, ``incomplete`` (the draft kept, ``error`` listing the
        open steps), ``max_rounds``, ``error``, ``aborted`` or ``ask`` (suspended: see
        :func:`resume_hint`). ``run.plan`` is the final plan as JSON.
    """
    if not prompt or not prompt.strip():
        raise MagicUsageError("The cell is empty: write the task below %%plan.")
    check_parameters(options, max_rounds=max_rounds, option=option)
    if answer is not None and option is not None:
        raise MagicUsageError("Give either --answer or --option, not both.")
    if auto_answer not in (None, "first"):
        raise MagicUsageError(f"--auto-answer must be 'first', not {auto_answer!r}.")
    from ..turn import setup_turn

    opt = TurnOptions(**options)
    # Agent, intent, workspace, built-in/MCP tools and permissions (runtime); an unknown tool
    # name fails before anything is recorded.
    rt = setup_turn(KIND, prompt, opt, tools, store=_store(opt))
    selected = rt.tools
    p = prepare(KIND, prompt, opt, mode="agent", intent=rt.intent, agent=rt.agent_name)
    rt.bind(p)
    catalog = normalize_catalog(selected)
    for warning in catalog.warnings:
        p.recorder.emit(Warning_(message=warning))
    user_text, quote_part = apply_knowledge(prompt, opt.knowledge, mode="agent")
    background = join_system([p.client.profile.default_system_prompt, rt.system_text, opt.system,
                              quote_part], TOOL_SEPARATOR)
    user_message: Message = {"role": "user", "content": user_text}
    messages = build_initial_messages([*p.history, user_message], system_prompt=background,
                                      has_runtime_tools=catalog.has_runtime_tools)
    state = PlanRunState.start(messages)
    by_name = {t.name: t for t in catalog.runtime_tools}
    _LIVE_TOOLS[p.run] = by_name
    lo = _LoopOptions(system=opt.system, temperature=opt.temperature, max_tokens=opt.max_tokens,
                      stream=opt.stream, max_rounds=max_rounds)
    run = _drive_plan(p, messages, catalog, by_name, state, lo, user_message=user_message,
                      produced=[], persist_prefix=None, runtime=rt)
    run = settle(p, run)  # a replay answers the asks that were clicked
    return _answer_up_front(p, run, answer, option, auto_answer)


def resume_hint(run: Run) -> str:
    """How to answer a suspended run (empty when ``run`` is not waiting)."""
    if run.status != "ask":
        return ""
    return ("Waiting for your answer. Click an option, or run "
            f"`%agent resume {run.run_id} --option N` / `--answer \"...\"` / `--dismiss`.")


def resume_plan(p: Prepared, pending: dict[str, Any], answer: Answer) -> Run:
    """Continue a suspended ``%%plan`` run with ``answer`` (registered as the plan resumer).

    The request messages are the saved ones plus the ask call's result; no new system prompt
    is added. The plan state is restored, the stop-gate count starts again at 0 and round
    numbers go on from where the run stopped. Runtime tools are looked up again (by name in the
    registry when the run comes from the store); if one is missing the run ends with status
    ``error`` naming it, and the question is saved again so nothing is lost.
    """
    from .approvals import is_approval, plan_approval_answer, restore_plan_runtime

    rt = restore_plan_runtime(pending, p)  # workspace, permissions, built-in and MCP tools
    rt_tools = {t.name: t for t in rt.tools} if rt is not None else {}
    live = _LIVE_TOOLS.get(p.run, {})
    names = list(pending.get("tools") or [])
    found = [live.get(n) or rt_tools.get(n) or REGISTRY.get(n) for n in names]
    missing = [n for n, t in zip(names, found, strict=True) if t is None]
    if missing:
        return _fail_missing_tools(p, pending, missing)
    tools = [t for t in found if t is not None]
    catalog = normalize_catalog(tools)
    by_name = {t.name: t for t in tools}
    _LIVE_TOOLS[p.run] = by_name
    if is_approval(pending):  # an approval card: the call runs now, or is denied
        content = plan_approval_answer(p, pending, answer, by_name,
                                       rt.permissions if rt is not None else None)
    else:
        request = _ask_request(pending["ask"])
        content = format_answer_for_model(request, _ask_answer(request, answer))
    answer_msg: Message = {"role": "tool", "tool_call_id": pending["call_id"], "content": content}
    messages = [*pending["messages"], answer_msg]
    state = PlanRunState.model_validate(pending.get("state") or {})
    o = pending.get("options") or {}
    lo = _LoopOptions(system=o.get("system"), temperature=o.get("temperature"),
                      max_tokens=o.get("max_tokens"), stream=o.get("stream", True),
                      max_rounds=int(o.get("max_rounds", MAX_ROUNDS)))
    produced = [*pending.get("produced", []), answer_msg]
    user_message = pending["user_message"]
    return _drive_plan(p, messages, catalog, by_name, state, lo, user_message=user_message,
                       produced=produced, persist_prefix=[user_message, *produced],
                       round_offset=int(pending.get("rounds", 0)), runtime=rt)


# ---------------------------------------------------------------------------- the loop
def _drive_plan(p: Prepared, messages: list[Message], catalog: ToolCatalog,
                by_name: dict[str, Tool[Any]], state: PlanRunState, lo: _LoopOptions, *,
                user_message: Message, produced: list[Message],
                persist_prefix: list[Message] | None, round_offset: int = 0,
                runtime: Any = None) -> Run:
    """Run (or continue) the loop; suspend on an ask, otherwise finish the Run and the store."""
    prof = p.client.profile
    schemas = catalog.schemas()
    ph = PlanHooks(p.client, catalog, by_name, state, p.recorder.emit, count_tools_tokens(schemas),
                   permissions=runtime.permissions if runtime is not None else None)
    max_tokens = None if lo.max_tokens is None else max(1, min(lo.max_tokens, prof.max_output))
    # The round budget is the run's: a resume gets what is left (0 still makes the final-answer
    # request, so the answer is always read by the model).
    cfg = LoopConfig(model=prof.model, tools=schemas, max_rounds=max(0, lo.max_rounds - round_offset),
                     batch_size=BATCH_TOOL_SIZE, temperature=map_temperature(prof, lo.temperature),
                     max_tokens=max_tokens, stream=lo.stream, round_offset=round_offset)

    def on_result(result: LoopResult) -> None:
        run = p.run
        run.plan = state.active_plan.to_json() if state.active_plan is not None else None
        if result.status == "ask":
            pending = _pending(p, result, catalog, lo, user_message, produced)
            if runtime is not None:
                pending["runtime"] = runtime.state()  # workspace, overrides, tool names
            if (run.view.get("ask") or {}).get("call_id") != pending["call_id"]:
                # Parallel calls emit their cards in any order; the one shown must be the one
                # waiting, or its buttons would answer nothing.
                p.recorder.emit(AskPending(**pending["ask"]))
            suspend(p, pending)
            return
        _LIVE_TOOLS.pop(run, None)
        if result.status in ("done", "max_rounds", "aborted"):
            # Text that came with tool calls is not the answer (scenario 33).
            result.answer = final_answer_text(result.assistant_messages) or result.answer

    return drive(p, messages, cfg, ph.hooks(), persist_from=len(messages) - 1,
                 on_result=on_result, persist_prefix=persist_prefix)


def _pending(p: Prepared, result: LoopResult, catalog: ToolCatalog, lo: _LoopOptions,
             user_message: Message, produced: list[Message]) -> dict[str, Any]:
    """The saved state of a suspended run (format: :mod:`jupyter_agent.agents.resume`)."""
    interactive = result.interactive or {}
    saved = interactive["messages"]
    # This run part's output up to the ask round, whose assistant message is replaced by the
    # synthetic one carrying only the winning ask call (edge case 7): that is what the session
    # gets once the run ends, so its history matches what the model saw.
    out = result.assistant_messages
    last = max((i for i, m in enumerate(out) if m.get("role") == "assistant"), default=len(out))
    rounds = p.run.rounds
    return {
        "kind": KIND,
        "call_id": result.interactive_call_id,
        "ask": interactive["ask"],
        "messages": saved,
        "model": p.client.profile.name,
        "tools": list(catalog.runtime_names),
        "options": {**asdict(lo), "rounds": rounds},
        "state": interactive["state"],
        "user_message": user_message,
        "rounds": rounds,
        "produced": [*produced, *out[:last], saved[-1]],
    }


# ---------------------------------------------------------------------------- answers
def _ask_request(ask: dict[str, Any]) -> AskRequest:
    """The validated question back from the saved ``ask_pending`` fields."""
    detail = ask.get("detail") or {}
    return AskRequest(reason=detail.get("reason", ""),
                      blocker_type=detail.get("blockerType", "ambiguous_goal"),
                      question=ask["question"], options=list(ask["options"]),
                      descriptions=list(ask.get("descriptions") or []),
                      allow_other=ask.get("allow_other", True))


def _ask_answer(request: AskRequest, answer: Answer) -> AskAnswer:
    if answer.how == "option":
        return AskAnswer.choose(request, answer.option_index or 0)
    if answer.how == "other":
        return AskAnswer.other(answer.text)
    return AskAnswer.dismiss()


def _up_front(ask: dict[str, Any], first: bool, answer: str | None, option: int | None,
              auto_answer: str | None) -> Answer | None:
    """The answer given in advance for this ask, if any."""
    if first and option is not None:
        return Answer("option", option_index=option)
    if first and answer is not None:
        wanted = answer.strip().casefold()
        for i, label in enumerate(ask.get("options") or [], start=1):
            if label.casefold() == wanted:
                return Answer("option", option_index=i)
        return Answer("other", text=answer)
    if auto_answer == "first":
        return Answer("option", option_index=1)
    return None


def _answer_up_front(p: Prepared, run: Run, answer: str | None, option: int | None,
                     auto_answer: str | None) -> Run:
    """Resume right away while an up-front answer covers the pending ask."""
    first = True
    while run.status == "ask" and run.pending is not None:
        ask = run.pending["ask"]
        a = _up_front(ask, first, answer, option, auto_answer)
        if a is None:
            break
        n = len(ask.get("options") or [])
        if a.how == "option" and not 1 <= (a.option_index or 0) <= n:
            rec = RunRecorder(run, p.store, p.recorder.listeners)
            rec.emit(Warning_(message=f"--option {a.option_index} does not fit this question "
                                      f"({n} options); the run is waiting for an answer."))
            rec.flush()
            break
        first = False
        run = _resume_now(p, run, a)
    return run


def _resume_now(p: Prepared, run: Run, a: Answer) -> Run:
    """Answer ``run``'s pending ask in this call (through the store when there is one)."""
    listeners = list(p.recorder.listeners)
    if p.store is not None:
        return resume(run.run_id, a, run=run, store=p.store, listeners=listeners, client=p.client)
    pending = run.pending
    assert pending is not None
    run.pending = None
    recorder = RunRecorder(run, None, listeners)
    recorder.emit(a.event(pending["call_id"], list(pending["ask"].get("options") or [])))
    run.status = "running"
    q = Prepared(turn_client=p.turn_client, run=run, recorder=recorder, store=None,
                 turn_id=None, history=[])
    return resume_plan(q, pending, a)


def _fail_missing_tools(p: Prepared, pending: dict[str, Any], missing: list[str]) -> Run:
    """End this resume attempt with ``error`` and put the question back, unchanged."""
    run = p.run
    names = ", ".join(f'"{n}"' for n in missing)
    noun = "Tool" if len(missing) == 1 else "Tools"
    msg = (f"{noun} {names} not found in this kernel: define {'it' if len(missing) == 1 else 'them'}"
           f" with @tool (run the cell that does), then answer again. The question is still "
           f"waiting (run {run.run_id}).")
    # Show the question again, so the card can be answered once the tool exists.
    p.recorder.emit(AskPending(**pending["ask"]))
    p.recorder.finish("error", error=msg)
    if p.store is not None:
        if p.turn_id is not None:
            p.store.finish_turn(p.turn_id, status="error", error=msg)
        p.store.suspend(run.run_id, pending)
    run.pending = pending
    return run


register_resumer(KIND, resume_plan)
