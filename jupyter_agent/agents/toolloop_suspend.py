"""Suspending a ``%%toolloop`` run whose round left calls waiting on approval cards.

Every fresh tool-loop run installs :func:`approval_suspender`, but only a run that ends on
``ask`` needs the saved-state schema (:mod:`.pending`): it is imported then, so a run that
never waits does not pay for it (docs/architecture.md, "The first run"). Continuing the run
after an answer is :mod:`.toolloop_resume`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from ..llm.types import Message, tool_calls_of
from .held import HELD
from .turn.finish import suspend
from .turn.open import TurnContext

if TYPE_CHECKING:
    from ..loop.kernel import LoopResult
    from .pending import ToolloopOptions, ToolloopPending, WaitingCall
    from .turn.setup import TurnSetup

__all__ = ["approval_suspender", "show_card"]


def _in_call_order(waiting: list[WaitingCall], messages: list[Message]) -> list[WaitingCall]:
    """The waiting calls in the order the model made them (parallel batches finish unordered)."""
    order: dict[str, int] = {}
    for m in messages:
        for c in tool_calls_of(m):
            order.setdefault(str(c.get("id")), len(order))
    return sorted(waiting, key=lambda w: order.get(w.call_id, len(order)))


def show_card(p: TurnContext, pending: ToolloopPending) -> None:
    """Show the first waiting call's card and save the run as suspended."""
    p.recorder.emit(pending.card.event())
    suspend(p, pending)


def approval_suspender(p: TurnContext, setup: TurnSetup,
                       options: ToolloopOptions | Mapping[str, object],
                       turn_messages: list[Message]) -> Callable[[LoopResult], None]:
    """The ``on_result`` of a tool-loop run: on status ``ask``, save it with its approvals.

    Args:
        p: The turn.
        setup: Its runtime setup.
        options: Loop options a resume needs again (``max_rounds``, ``parallel``, ...): a
            :class:`~.pending.ToolloopOptions`, or its fields (validated when the run
            suspends).
        turn_messages: The turn's messages from before this loop part (the user's message
            first).
    """

    def on_result(result: LoopResult) -> None:
        cards = setup.permissions.take_waiting()
        if result.status != "ask" or not cards:
            return
        from .pending import ApprovalCard, ToolloopOptions, ToolloopPending, WaitingCall

        waiting = _in_call_order(
            [WaitingCall(call_id=w["call_id"], name=w["name"], arguments=w["arguments"],
                         card=ApprovalCard.model_validate(w["ask"])) for w in cards],
            result.assistant_messages)
        first = waiting[0]
        pending = ToolloopPending(
            call_id=first.call_id, card=first.card, approvals=waiting,
            messages=result.messages,
            model=p.turn_client.answered_profile() or p.run.model,
            tools=[t.name for t in setup.tools], options=ToolloopOptions.model_validate(options),
            turn=setup.state(),
            turn_messages=[*turn_messages, *result.assistant_messages], rounds=p.run.rounds,
            stopped=result.stopped, output=p.output.schema if p.output else None,
            schema_retries=p.schema_retries, cache=p.cache)
        HELD.keep(p.run.run_id, tools=setup.tools)
        show_card(p, pending)

    return on_result
