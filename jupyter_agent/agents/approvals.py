"""Approval cards of ``%%toolloop`` runs: suspending on them, and the resumer after a click.

A round whose calls need approval ends the loop (the kernel suspends after the round); the
other calls of that round have already run and have their results. The run is saved as a
``pending`` dict of kind ``toolloop`` (format: :mod:`jupyter_agent.agents.resume`) with the
waiting calls in ``approvals``, oldest first, and the first one's card in ``ask``.
:func:`resume_toolloop` applies the answer (``agents.approval_calls``), asks the next card if a
call still waits, and otherwise continues the loop where it stopped.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..events import AskPending
from ..loop.kernel import LoopResult
from ._base import Prepared, _finish_turn, drive
from .resume import Answer, answer_text_for_approval, register_resumer, suspend
from .run import Run

__all__ = ["KIND", "approval_suspender", "approval_hint", "resume_toolloop"]

KIND = "toolloop"


def _in_call_order(waiting: list[dict[str, Any]], messages: list[dict[str, Any]]
                   ) -> list[dict[str, Any]]:
    """The waiting calls in the order the model made them (parallel batches finish unordered)."""
    order: dict[str, int] = {}
    for m in messages:
        for c in m.get("tool_calls") or []:
            order.setdefault(str(c.get("id")), len(order))
    return sorted(waiting, key=lambda w: order.get(w["call_id"], len(order)))


def _card(p: Prepared, pending: dict[str, Any]) -> None:
    """Show the first waiting call's card and save the run as suspended."""
    p.recorder.emit(AskPending(**pending["ask"]))
    suspend(p, pending)


def approval_suspender(p: Prepared, setup: Any, user_message: dict[str, Any],
                       options: dict[str, Any], prefix: list[dict[str, Any]] | None = None
                       ) -> Callable[[LoopResult], None]:
    """The ``on_result`` of a tool-loop run: on status ``ask``, save it with its approvals.

    Args:
        p: The prepared run.
        setup: Its :class:`~jupyter_agent.agents.turn.TurnSetup`.
        user_message: The turn's user message (first of what the session gets).
        options: Loop options a resume needs again (``max_rounds``, ``parallel``, ...).
        prefix: Messages of the turn from before this loop part (a resumed run).
    """

    def on_result(result: LoopResult) -> None:
        waiting = setup.permissions.take_waiting()
        if result.status != "ask" or not waiting:
            return
        waiting = _in_call_order(waiting, result.assistant_messages)
        first = waiting[0]
        pending = {
            "kind": KIND,
            "call_id": first["call_id"],
            "ask": first["ask"],
            "approvals": waiting,
            "messages": result.messages,
            "model": p.turn_client.answered_profile() or p.run.model,
            "tools": [t.name for t in setup.tools],
            "options": dict(options),
            "state": setup.state(),
            "user_message": user_message,
            "persist": [*(prefix if prefix is not None else [user_message]),
                        *result.assistant_messages],
            "rounds": p.run.rounds,
            "round": p.run.rounds,
        }
        setup.remember_tools(p.run.run_id)
        _card(p, pending)

    return on_result


def approval_hint(run: Run) -> str:
    """How to answer a run waiting on an approval card (empty when it is not waiting)."""
    if run.status != "ask":
        return ""
    return ("Waiting for approval. Click a button, or run "
            f"`%agent resume {run.run_id} --option N` (1 Allow once, 2 Allow for this session, "
            "3 Deny).")


def resume_toolloop(p: Prepared, pending: dict[str, Any], answer: Answer) -> Run:
    """Continue a ``%%toolloop`` run after an approval card was answered."""
    from .approval_calls import settle_approvals
    from .toolloop import MAX_ROUNDS, loop_parts
    from .turn import restore_turn

    setup = restore_turn(pending.get("state") or {}, p)
    tools = {t.name: t for t in setup.tools}
    pending = dict(pending, messages=list(pending["messages"]),
                   persist=list(pending.get("persist") or [pending["user_message"]]))
    rest = settle_approvals(p, pending, answer_text_for_approval(answer), tools,
                            setup.permissions)
    run = p.run
    if rest:
        again = dict(pending, approvals=rest, call_id=rest[0]["call_id"], ask=rest[0]["ask"])
        setup.remember_tools(run.run_id)
        run.messages = pending["messages"]
        _card(p, again)
        p.recorder.finish("ask")
        _finish_turn(p, "ask")
        return run
    o = pending.get("options") or {}
    rounds = int(pending.get("rounds") or 0)
    cfg, hooks = loop_parts(
        p, setup.tools, parallel=bool(o.get("parallel")),
        max_rounds=max(0, int(o.get("max_rounds", MAX_ROUNDS)) - rounds),
        temperature=o.get("temperature"), max_tokens=o.get("max_tokens"),
        stream=bool(o.get("stream", True)), permissions=setup.permissions, round_offset=rounds)
    return drive(p, pending["messages"], cfg, hooks, persist_from=0,
                 persist_prefix=pending["persist"],
                 on_result=approval_suspender(p, setup, pending["user_message"], o,
                                              prefix=pending["persist"]))


register_resumer(KIND, resume_toolloop)
