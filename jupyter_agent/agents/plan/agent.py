"""``%%plan``: the planning agent on the shared loop kernel (docs/behaviour.md §6).

:func:`plan` starts the turn (:mod:`jupyter_agent.agents.turn.start`), runs the loop
(:mod:`.loop`) and answers what it can without the user: a replayed cassette's clicks
(:func:`~jupyter_agent.agents.resume.settle`) and the answers given up front.

Up-front answers for headless runs (``answer=``, ``option=``, ``auto_answer="first"``) resume
in the same call: ``answer``/``option`` answer the first question only; ``auto_answer="first"``
answers every (further) question with option 1. None of them answers an approval card: only a
person approves (a click, ``%agent resume``, or ``approve=`` naming the tool; docs/security.md). An ask nobody answered up front leaves the run
suspended with status ``ask``; :func:`resume_hint` says how to continue it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal, overload

from typing_extensions import Unpack

from ...base.answers import Answer
from ...base.errors import ParameterError
from ...base.events import Warning_
from ...base.jsontypes import JSONObject
from ..pending import PlanPending, QuestionCard
from ..resume import answer_now, settle
from ..run import Model, Run, RunRecorder
from ..tooling import ToolSpec
from ..turn.open import TurnContext
from ..turn.options import OutputOption, TurnArgs
from ..turn.start import start_turn
from .constants import MAX_ROUNDS
from .loop import KIND, resume_plan, run_plan

__all__ = ["plan", "resume_plan", "resume_hint", "KIND", "MAX_ROUNDS"]


@overload
def plan(prompt: str, *, tools: Sequence[ToolSpec] | None = None, max_rounds: int = MAX_ROUNDS,
         answer: str | None = None, option: int | None = None,
         auto_answer: Literal["first"] | None = None, output: type[Model],
         **options: Unpack[TurnArgs]) -> Run[Model]: ...
@overload
def plan(prompt: str, *, tools: Sequence[ToolSpec] | None = None, max_rounds: int = MAX_ROUNDS,
         answer: str | None = None, option: int | None = None,
         auto_answer: Literal["first"] | None = None, output: Mapping[str, object],
         **options: Unpack[TurnArgs]) -> Run[JSONObject]: ...
@overload
def plan(prompt: str, *, tools: Sequence[ToolSpec] | None = None, max_rounds: int = MAX_ROUNDS,
         answer: str | None = None, option: int | None = None,
         auto_answer: Literal["first"] | None = None, output: None = None,
         **options: Unpack[TurnArgs]) -> Run[None]: ...
def plan(prompt: str, *, tools: Sequence[ToolSpec] | None = None, max_rounds: int = MAX_ROUNDS,
         answer: str | None = None, option: int | None = None,
         auto_answer: Literal["first"] | None = None, output: OutputOption = None,
         **options: Unpack[TurnArgs]) -> Run:
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
        **options: :class:`~jupyter_agent.agents.turn.options.TurnOptions` fields (``model``,
            ``system``, ``session``, ``history``, ``temperature``, ``max_tokens``,
            ``knowledge``, ``listeners``, ``store``, ``client``, ``agent``).

    Returns:
        The run: ``status`` is ``done``, ``incomplete`` (the draft kept, ``error`` listing the
        open steps), ``max_rounds``, ``error``, ``aborted`` or ``ask`` (suspended: see
        :func:`resume_hint`). ``run.plan`` is the final plan as JSON.

    Raises:
        ParameterError: an empty prompt, a value outside its range, ``answer`` together with
            ``option``, or an ``auto_answer`` other than ``"first"``.
    """
    if answer is not None and option is not None:
        raise ParameterError("Give either answer or option, not both.",
                             parameters=("answer", "option"))
    if auto_answer not in (None, "first"):
        raise ParameterError(f"auto_answer must be 'first', not {auto_answer!r}.",
                             parameters=("auto_answer",))
    turn = start_turn(KIND, prompt, options, output=output, tools=tools,
                      checks={"max_rounds": max_rounds, "option": option})
    run = run_plan(turn, max_rounds)
    run = settle(turn.ctx, run)  # a replay answers the asks that were clicked
    return _answer_up_front(turn.ctx, run, answer, option, auto_answer)


def resume_hint(run: Run) -> str:
    """How to answer a suspended run (empty when ``run`` is not waiting)."""
    if run.status != "ask":
        return ""
    return ("Waiting for your answer. Click an option, or run "
            f"`%agent resume {run.run_id} --option N` / `--answer \"...\"` / `--dismiss`.")


def _up_front(card: QuestionCard, first: bool, answer: str | None, option: int | None,
              auto_answer: str | None) -> Answer | None:
    """The answer given in advance for this ask, if any."""
    if first and option is not None:
        return Answer("option", option_index=option)
    if first and answer is not None:
        wanted = answer.strip().casefold()
        for i, label in enumerate(card.options, start=1):
            if label.casefold() == wanted:
                return Answer("option", option_index=i)
        return Answer("other", text=answer)
    if auto_answer == "first":
        return Answer("option", option_index=1)
    return None


def _answer_up_front(p: TurnContext, run: Run, answer: str | None, option: int | None,
                     auto_answer: str | None) -> Run:
    """Resume right away while an up-front answer covers the pending ask."""
    first = True
    while run.status == "ask" and isinstance(run.pending, PlanPending):
        card = run.pending.card
        if card.kind == "approval":
            break  # answers given up front answer questions, never an approval card
        a = _up_front(card, first, answer, option, auto_answer)
        if a is None:
            break
        n = len(card.options)
        if a.how == "option" and not 1 <= (a.option_index or 0) <= n:
            rec = RunRecorder(run, p.store, p.recorder.listeners)
            rec.emit(Warning_(message=f"--option {a.option_index} does not fit this question "
                                      f"({n} options); the run is waiting for an answer."))
            rec.flush()
            break
        first = False
        run = answer_now(p, run, a)
    return run
