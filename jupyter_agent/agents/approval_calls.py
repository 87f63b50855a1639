"""Answering approval cards: what happens to a waiting tool call once the user clicked.

Shared by every resumer (``%%toolloop`` in ``agents/approvals.py``, ``%%plan``):

* "Allow once" runs the call now and its real result becomes the call's tool message;
* "Allow for this session" does the same and remembers ``allow`` for that tool in the session;
* "Deny" (also a dismissal or typed text) writes ``Permission denied by the user: <tool> was
  not run.``

The model then continues from there. A round can leave several calls waiting: they are
settled one card at a time, and a call whose tool became allowed meanwhile ("for this
session") runs without a second card.
"""

from __future__ import annotations

import json
import time
from typing import Any

from ..errors import ResumeError
from ..events import ToolReturned, UsageRecorded
from ..llm.types import ToolCall
from ..llm.usage_context import usage_sink
from ..loop.hooks import ToolOutcome, UsageItem
from ..runtime.policy import PermissionContext, check_permission
from ..session.permissions import denial_message

__all__ = ["approval_item", "answered_outcome", "run_call", "settle_approvals",
           "replace_tool_result"]


def approval_item(ask: dict[str, Any]) -> dict[str, Any]:
    """The waiting call described by an approval card's fields (``call_id``, ``name``,
    ``arguments`` as raw JSON text)."""
    detail = ask.get("detail") or {}
    args = detail.get("arguments", {})
    raw = args if isinstance(args, str) else json.dumps(args)
    return {"call_id": ask["call_id"], "name": detail.get("tool", ""), "arguments": raw, "ask": ask}


def run_call(p: Any, tool: Any, call: ToolCall, *, round_: int) -> ToolOutcome:
    """Run one approved call outside the kernel, with what the kernel would do around it:
    usage of helpers inside the tool counted into the run, long output shortened, and a
    ``tool_returned`` event (which replaces the card's "Waiting for approval." in the view)."""
    from ._base import tool_output_processor

    usages: list[UsageItem] = []
    start = time.perf_counter()
    with usage_sink(lambda module, model, usage, cost: usages.append(
            UsageItem(module, model, usage, cost))):
        r = tool.invoke(call.arguments)
    out = ToolOutcome(output=r.output, value=r.value, error=r.error, stop=r.stop,
                      seconds=r.seconds or time.perf_counter() - start, usages=usages)
    if out.output:
        text, extra = tool_output_processor(p.client)(out.output)
        out.output = text
        out.usages.extend(extra)
    _account(p, out.usages, round_)
    return out


def _account(p: Any, usages: list[UsageItem], round_: int) -> None:
    run = p.run
    for u in usages:
        run.input_tokens += u.usage.input_tokens
        run.output_tokens += u.usage.output_tokens
        run.cost += u.cost
        p.recorder.emit(UsageRecorded(round=round_, module=u.module, model=u.model,
                                      input_tokens=u.usage.input_tokens,
                                      output_tokens=u.usage.output_tokens, cost=u.cost,
                                      estimated=u.usage.estimated))


def answered_outcome(p: Any, item: dict[str, Any], choice: str, tool: Any,
                     permissions: PermissionContext, *, round_: int,
                     available: list[str]) -> ToolOutcome:
    """The result of a waiting call after the user's ``choice`` (``allow_once``,
    ``allow_session`` or ``deny``, see ``resume.answer_text_for_approval``); emits the
    call's ``tool_returned`` event."""
    from .toolloop import unknown_tool_message

    name = item["name"]
    call = ToolCall(id=item["call_id"], name=name, arguments=item.get("arguments") or "")
    if choice == "allow_session":
        permissions.remember(name, "allow")
    if choice not in ("allow_once", "allow_session"):
        text = denial_message(name, by_user=True)
        out = ToolOutcome(output=text, error=text)
    elif tool is None:
        text = unknown_tool_message(name, available)
        out = ToolOutcome(output=text, error=text)
    else:
        out = run_call(p, tool, call, round_=round_)
    _returned(p, call, out, round_)
    return out


def _returned(p: Any, call: ToolCall, out: ToolOutcome, round_: int) -> None:
    p.recorder.emit(ToolReturned(round=round_, call_id=call.id, name=call.name,
                                 output=out.output, error=out.error,
                                 seconds=round(out.seconds, 4)))
    run = p.run
    run.tool_values[call.id] = out.value
    for rec in run.tool_records:
        if rec.get("call_id") == call.id:
            rec.update(output=out.output, error=out.error, seconds=out.seconds, value=out.value)
            break
    else:
        run.tool_records.append({"call_id": call.id, "name": call.name,
                                 "arguments": call.arguments, "output": out.output,
                                 "error": out.error, "seconds": out.seconds, "value": out.value})


def replace_tool_result(messages: list[dict[str, Any]], call_id: str, content: str) -> bool:
    """Put ``content`` into the tool message answering ``call_id`` (in place); False if none.

    Call ids are unique within a run (``loop/call_ids.py``); the search goes from the end so
    that even a history saved before that rule can only have its newest answer replaced.
    """
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if m.get("role") == "tool" and m.get("tool_call_id") == call_id:
            messages[i] = dict(m, content=content)
            return True
    return False


def settle_approvals(p: Any, pending: dict[str, Any], choice: str, tools: dict[str, Any],
                     permissions: PermissionContext) -> list[dict[str, Any]]:
    """Apply ``choice`` to the call whose card was shown (``pending["call_id"]``), then run,
    deny or queue the others of ``pending["approvals"]``; results go into
    ``pending["messages"]`` and ``pending["persist"]``.

    Returns:
        The calls still waiting, the first of which needs a new card (empty: all settled).
    """
    waiting = _card_first(list(pending.get("approvals") or []), pending.get("call_id"))
    round_ = int(pending.get("round") or pending.get("rounds") or 0)
    names = list(tools)
    for index, item in enumerate(waiting):
        tool = tools.get(item["name"])
        if index == 0:
            out = answered_outcome(p, item, choice, tool, permissions, round_=round_,
                                   available=names)
        else:
            call = ToolCall(id=item["call_id"], name=item["name"],
                            arguments=item.get("arguments") or "")
            if tool is None:
                out = answered_outcome(p, item, "allow_once", None, permissions, round_=round_,
                                       available=names)
            else:
                blocked = check_permission(call, tool, permissions)
                permissions.take_waiting()
                if blocked is not None and blocked.interactive is not None:
                    return waiting[index:]  # still needs the user: the next card
                if blocked is not None:
                    out = blocked
                    _returned(p, call, out, round_)
                else:
                    out = run_call(p, tool, call, round_=round_)
                    _returned(p, call, out, round_)
        for key in ("messages", "persist"):
            if pending.get(key) is not None:
                replace_tool_result(pending[key], item["call_id"], out.output)
    return []


def _card_first(waiting: list[dict[str, Any]], call_id: Any) -> list[dict[str, Any]]:
    """``waiting`` with the call the answered card was shown for first: an answer applies to
    exactly that call, never to another one waiting beside it."""
    for i, item in enumerate(waiting):
        if item.get("call_id") == call_id:
            return [item, *waiting[:i], *waiting[i + 1:]]
    if call_id is not None and waiting:
        raise ResumeError(f"No waiting call {call_id!r} in this run; nothing changed.")
    return waiting
