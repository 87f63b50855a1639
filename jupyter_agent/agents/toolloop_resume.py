"""Continuing a ``%%toolloop`` run that waits on approval cards.

A round whose calls need approval ends the loop (the kernel suspends after the round); the
other calls of that round have already run and have their results. The run is saved as a
:class:`~jupyter_agent.agents.pending.ToolloopPending` with the waiting calls in
``approvals``, oldest first, and the first one's card (:mod:`.toolloop_suspend`).
:func:`resume_toolloop` applies the answer (:mod:`.approval_answers`), shows the next card if
a call still waits, and otherwise continues the loop where it stopped.
"""

from __future__ import annotations

from ..base.answers import Answer
from .approval_answers import approval_choice, settle_approvals
from .held import HELD, Parts
from .pending import ToolloopPending
from .run import Run
from .tooling import loop_parts
from .toolloop_suspend import approval_suspender, show_card
from .turn.drive import drive
from .turn.finish import finish_turn
from .turn.open import TurnContext
from .turn.start import restore_setup

__all__ = ["approval_hint", "resume_toolloop"]


def approval_hint(run: Run) -> str:
    """How to answer a run waiting on an approval card (empty when it is not waiting)."""
    if run.status != "ask":
        return ""
    return ("Waiting for approval. Click a button, or run "
            f"`%agent resume {run.run_id} --option N` (1 Allow once, 2 Allow for this session, "
            "3 Deny).")


def resume_toolloop(p: TurnContext, pending: ToolloopPending, answer: Answer,
                    held: Parts) -> Run:
    """Continue a ``%%toolloop`` run after one of its approval cards was answered."""
    setup = restore_setup(pending.turn, p, held.tools)
    tools = {t.name: t for t in setup.tools}
    pending = pending.model_copy(deep=True)
    stops: list[str] = []
    rest = settle_approvals(p, pending.approvals, pending.call_id, approval_choice(answer),
                            tools, setup.permissions, round_=pending.rounds,
                            messages=[pending.messages, pending.turn_messages], stops=stops)
    run = p.run
    if rest:
        again = pending.model_copy(update={"approvals": rest, "call_id": rest[0].call_id,
                                           "card": rest[0].card,
                                           "stopped": pending.stopped or bool(stops)})
        HELD.keep(run.run_id, tools=setup.tools)
        run.messages = pending.messages
        show_card(p, again)
        p.recorder.finish("ask")
        finish_turn(p, "ask")
        return run
    o = pending.options
    cfg, hooks = loop_parts(
        p, setup.tools, parallel=o.parallel, max_rounds=max(0, o.max_rounds - pending.rounds),
        temperature=o.temperature, max_tokens=o.max_tokens, stream=o.stream,
        permissions=setup.permissions, round_offset=pending.rounds)
    # An approved call that raised the stop signal (or one beside it) ends the run here,
    # as it would have ended without the card (docs/behaviour.md §2.7).
    return drive(p, pending.messages, cfg, hooks, persist_from=0,
                 persist_prefix=pending.turn_messages,
                 on_result=approval_suspender(p, setup, o, pending.turn_messages),
                 stopped=pending.stopped or bool(stops))
