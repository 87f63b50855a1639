"""The end of a turn: the turn record closed with what the turn added, or the run suspended
(saved as a :class:`~jupyter_agent.agents.pending.PendingRun` while it waits for an answer).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...base.events import ToolReturned
from ...base.jsontypes import JSONObject
from ...base.previews import history_text
from ..held import HELD
from .open import TurnContext

if TYPE_CHECKING:  # the schema loads only when a run suspends
    from ..pending import PendingRun

__all__ = ["finish_turn", "suspend"]


def finish_turn(p: TurnContext, status: str) -> None:
    """Close the turn record: its status, and the tokens, cost and time this turn added (a
    resumed run's turn: its part; the run's footer sums the parts). Then the turn's
    ``on_end`` is told the run: every part of a run ends here, first or resumed."""
    if p.store is not None and p.turn_id is not None:
        _close_record(p, status)
    if p.on_end is not None:
        p.on_end(p.run)


def _close_record(p: TurnContext, status: str) -> None:
    assert p.store is not None and p.turn_id is not None
    r = p.run
    base_in, base_out, base_cost = p.turn_base
    # After a failover the turn records the profile that answered, not the one it started on.
    answered = p.turn_client.answered_profile()
    p.store.finish_turn(p.turn_id, status=status, input_tokens=r.input_tokens - base_in,
                        output_tokens=r.output_tokens - base_out, cost=r.cost - base_cost,
                        duration=p.recorder.seconds, model=answered, profile=answered,
                        error=r.error if status == "error" else None,
                        tools=_turn_tools(p), history=history_text(r.messages))


def _turn_tools(p: TurnContext) -> list[JSONObject]:
    """The tool calls this turn answered, with their whole results (the store keeps previews:
    the events hold only the stream preview)."""
    whole = {rec["call_id"]: rec["output"] for rec in p.run.tool_records}
    out: list[JSONObject] = []
    for e in p.run.events[p.event_base:]:
        if isinstance(e, ToolReturned):
            out.append({"call_id": e.call_id, "name": e.name, "error": e.error,
                        "output": whole.get(e.call_id, e.output)})
    return out


def suspend(p: TurnContext, pending: PendingRun) -> None:
    """Save ``pending`` for ``p.run``; the run's status becomes ``ask``.

    What the turn was started with and is no data (the caller's abort check, its ``on_end``,
    a typed run's model class) is kept for the resume in this process: a resumed part opens
    its turn with them, so a batch's stop, ``--out`` and the schema hold after an answer."""
    p.run.pending = pending
    HELD.keep(p.run.run_id, output=p.output, is_aborted=p.is_aborted, on_end=p.on_end)
    if p.store is not None:
        p.recorder.flush()
        p.store.suspend(p.run.run_id, pending.to_json(), call_id=pending.call_id)
