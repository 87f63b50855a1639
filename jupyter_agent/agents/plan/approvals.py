"""What ``%%plan`` takes from the runtime: the permission check with approval cards in the
plan's own suspension format, and the answer to such a card on resume.

The planning loop keeps one question per round (its ``interactive`` dict holds the round's
snapshot plus an assistant message carrying only the waiting call; the last one wins, as for
``ask_agent``), so an approval inside ``%%plan`` suspends exactly like the plan's ask, and the
answer becomes that call's result: the tool's real output, or the denial.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ...base.answers import Answer
from ...base.events import AskPending, BaseEvent
from ...base.jsontypes import JSONObject
from ...llm.types import Message, ToolCall
from ...loop.hooks import ToolOutcome
from ...runtime.policy import PermissionContext, check_permission
from ...tools.registry import AnyTool
from ..approval_answers import answered_outcome, approval_choice
from ..pending import ApprovalCard, WaitingCall
from ..turn.open import TurnContext

__all__ = ["plan_permission", "plan_approval_answer"]


def plan_permission(call: ToolCall, tool: AnyTool, permissions: PermissionContext | None,
                    snapshot: list[Message], state_json: JSONObject,
                    emit: Callable[[BaseEvent], None]) -> ToolOutcome | None:
    """The permission check of a ``%%plan`` runtime tool call.

    Returns ``None`` (run it), a denial, or an approval card shaped like the plan's ask
    (``interactive = {"ask", "messages", "state"}``, ``stop=True``; the card is emitted now).
    """
    out = check_permission(call, tool, permissions)
    if out is None or out.interactive is None:
        return out
    assert permissions is not None
    permissions.take_waiting()  # the plan saves one card per round in its own format
    emit(AskPending.model_validate(out.interactive))
    synthetic: JSONObject = {"role": "assistant", "content": "", "tool_calls": [call.to_message_part()]}
    out.interactive = {"ask": out.interactive, "messages": [*snapshot, synthetic],
                       "state": state_json}
    out.stop = True
    out.internal = False
    return out


def plan_approval_answer(p: TurnContext, card: ApprovalCard, answer: Answer,
                         tools: Mapping[str, AnyTool], permissions: PermissionContext | None, *,
                         round_: int) -> ToolOutcome:
    """The outcome of the call an approval card waited on, after ``answer``: the tool's
    (allowed; its ``stop`` says it raised the stop signal) or the denial ``Permission denied
    by the user: <tool> was not run.``"""
    item = WaitingCall.of(card)
    ctx = permissions or PermissionContext(session=p.run.session, store=p.store)
    out = answered_outcome(p, item, approval_choice(answer), tools.get(item.name), ctx,
                           round_=round_, available=list(tools))
    return out
