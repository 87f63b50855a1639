"""Answering approval cards: what happens to a waiting tool call once the user clicked.

Shared by both resumers (``%%toolloop`` in ``agents/toolloop_resume.py``, ``%%plan`` in
``agents/plan/loop.py``):

* "Allow once" runs the call now and its real result becomes the call's tool message;
* "Allow for this session" does the same and remembers ``allow`` for that tool in the session
  (in the kernel's memory, :mod:`jupyter_agent.runtime.grants`);
* "Deny" (also a dismissal or typed text) writes ``Permission denied by the user: <tool> was
  not run.``

The model then continues from there. A round can leave several calls waiting: they are
settled one card at a time, and a call whose tool became allowed meanwhile ("for this
session") runs without a second card.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Literal

from ..base.answers import Answer
from ..base.errors import ResumeError
from ..base.events import ToolReturned, ToolStarted, UsageRecorded
from ..llm.types import Message, ToolCall
from ..llm.usage_context import usage_sink
from ..loop.hooks import ToolOutcome, UsageItem, images_message
from ..runtime.policy import PermissionContext, check_permission
from ..session.permissions import denial_message
from ..tools.notebook.card_events import call_events, figure_images
from ..tools.registry import AnyTool
from .compression import tool_output_processor
from .pending import WaitingCall
from .tooling import unknown_tool_message
from .turn.open import TurnContext

__all__ = ["Choice", "approval_choice", "answered_outcome", "run_call", "settle_approvals",
           "replace_tool_result"]

Choice = Literal["allow_once", "allow_session", "deny"]


def approval_choice(answer: Answer) -> Choice:
    """Which approval option was picked: ``allow_once``, ``allow_session`` or ``deny``."""
    if answer.how == "option":
        picked: dict[int, Choice] = {1: "allow_once", 2: "allow_session", 3: "deny"}
        return picked.get(answer.option_index or 0, "deny")
    return "deny"  # dismissing an approval card, or typing text, never allows anything


def run_call(p: TurnContext, tool: AnyTool, call: ToolCall, *, round_: int) -> ToolOutcome:
    """Run one approved call outside the kernel, with what the kernel would do around it:
    usage of helpers inside the tool counted into the run, long output shortened, and a
    ``tool_returned`` event (which replaces the card's "Waiting for approval." in the view)."""
    usages: list[UsageItem] = []
    start = time.perf_counter()
    with usage_sink(lambda module, model, usage, cost: usages.append(
            UsageItem(module, model, usage, cost))):
        r = tool.invoke(call.arguments)
    out = ToolOutcome(output=r.output, value=r.value, error=r.error, stop=r.stop,
                      seconds=r.seconds or time.perf_counter() - start, usages=usages,
                      events=call_events(call.id, r.value), images=figure_images(r.value))
    if out.output:
        text, extra = tool_output_processor(p.client)(out.output)
        out.output = text
        out.usages.extend(extra)
    _account(p, out.usages, round_)
    return out


def _account(p: TurnContext, usages: list[UsageItem], round_: int) -> None:
    run = p.run
    for u in usages:
        run.input_tokens += u.usage.input_tokens
        run.output_tokens += u.usage.output_tokens
        run.cost += u.cost
        p.recorder.emit(UsageRecorded(round=round_, module=u.module, model=u.model,
                                      input_tokens=u.usage.input_tokens,
                                      output_tokens=u.usage.output_tokens, cost=u.cost,
                                      estimated=u.usage.estimated))


def answered_outcome(p: TurnContext, item: WaitingCall, choice: Choice, tool: AnyTool | None,
                     permissions: PermissionContext, *, round_: int,
                     available: list[str]) -> ToolOutcome:
    """The result of a waiting call after the user's ``choice`` (:func:`approval_choice`);
    emits the call's ``tool_returned`` event."""
    name = item.name
    call = ToolCall(id=item.call_id, name=name, arguments=item.arguments or "")
    if choice == "allow_session" and tool is not None:
        permissions.remember(tool, "allow")  # in this kernel's memory only (runtime/grants.py)
    if choice not in ("allow_once", "allow_session"):
        text = denial_message(name, by_user=True)
        out = ToolOutcome(output=text, error=text)
    elif tool is None:
        text = unknown_tool_message(name, available)
        out = ToolOutcome(output=text, error=text)
    else:
        # The approved call runs now: its card goes from waiting to running.
        p.recorder.emit(ToolStarted(round=round_, call_id=call.id, name=name))
        out = run_call(p, tool, call, round_=round_)
    _returned(p, call, out, round_)
    return out


def _returned(p: TurnContext, call: ToolCall, out: ToolOutcome, round_: int) -> None:
    p.recorder.emit(ToolReturned(round=round_, call_id=call.id, name=call.name,
                                 output=out.output, error=out.error,
                                 seconds=round(out.seconds, 4)))
    for extra in out.events:  # a figure, a proposed cell: after the call's result, as the kernel does
        if "round" in type(extra).model_fields:
            extra = extra.model_copy(update={"round": round_})
        p.recorder.emit(extra)
    run = p.run
    run.tool_values[call.id] = out.value
    for rec in run.tool_records:
        if rec.get("call_id") == call.id:
            rec.update({"output": out.output, "error": out.error, "seconds": out.seconds,
                        "value": out.value})
            break
    else:
        run.tool_records.append({"call_id": call.id, "name": call.name,
                                 "arguments": call.arguments, "output": out.output,
                                 "error": out.error, "seconds": out.seconds, "value": out.value})


def replace_tool_result(messages: list[Message], call_id: str, content: str) -> bool:
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


def settle_approvals(p: TurnContext, waiting: list[WaitingCall], call_id: str, choice: Choice,
                     tools: Mapping[str, AnyTool], permissions: PermissionContext, *, round_: int,
                     messages: list[list[Message]], stops: list[str] | None = None
                     ) -> list[WaitingCall]:
    """Apply ``choice`` to the call whose card was shown (``call_id``), then run, deny or
    queue the other ``waiting`` calls; each result replaces its call's placeholder in every
    list of ``messages`` (in place). The ids of calls that raised the stop signal are added
    to ``stops``.

    Returns:
        The calls still waiting, the first of which needs a new card (empty: all settled).
    """
    queue = _card_first(list(waiting), call_id)
    names = list(tools)
    images: list[str] = []
    for index, item in enumerate(queue):
        tool = tools.get(item.name)
        if index == 0:
            out = answered_outcome(p, item, choice, tool, permissions, round_=round_,
                                   available=names)
        else:
            call = ToolCall(id=item.call_id, name=item.name, arguments=item.arguments or "")
            if tool is None:
                out = answered_outcome(p, item, "allow_once", None, permissions, round_=round_,
                                       available=names)
            else:
                blocked = check_permission(call, tool, permissions)
                permissions.take_waiting()
                if blocked is not None and blocked.interactive is not None:
                    # Still needs the user: the next card. The figures of the calls settled
                    # so far go to the model now (their tool results are in place already);
                    # the pending state keeps the messages, so they are not lost at the card.
                    _show_images(p, images, messages)
                    return queue[index:]
                if blocked is not None:
                    out = blocked
                    _returned(p, call, out, round_)
                else:
                    out = run_call(p, tool, call, round_=round_)
                    _returned(p, call, out, round_)
        if out.stop and stops is not None:
            stops.append(item.call_id)
        for listed in messages:
            replace_tool_result(listed, item.call_id, out.output)
        images.extend(out.images)
    _show_images(p, images, messages)
    return []


def _show_images(p: TurnContext, images: list[str], messages: list[list[Message]]) -> None:
    """The figures of settled calls, as one user message after the round's tool results (as
    the loop does), for a model that accepts images."""
    shown = images_message(images) if images and p.client.profile.capabilities.vision else None
    if shown is not None:
        for listed in messages:
            listed.append(shown)


def _card_first(waiting: list[WaitingCall], call_id: str) -> list[WaitingCall]:
    """``waiting`` with the call the answered card was shown for first: an answer applies to
    exactly that call, never to another one waiting beside it."""
    for i, item in enumerate(waiting):
        if item.call_id == call_id:
            return [item, *waiting[:i], *waiting[i + 1:]]
    if waiting:
        raise ResumeError(f"No waiting call {call_id!r} in this run; nothing changed.")
    return waiting
