"""Run events as ACP session updates (docs/acp.md, "jupyter-agent as an ACP agent").

One pure function per direction, so the mapping is tested without a process: every text that
leaves goes through :func:`jupyter_agent.base.secrets.mask` here, whatever the caller did before.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Union

from acp import (
    plan_entry,
    start_tool_call,
    text_block,
    tool_content,
    tool_diff_content,
    update_agent_message_text,
    update_agent_thought_text,
    update_plan,
    update_tool_call,
    update_user_message_text,
)
from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    PermissionOption,
    PermissionOptionKind,
    PlanEntryStatus,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
    ToolKind,
    UserMessageChunk,
)

from ..base.events import (
    AskPending,
    BaseEvent,
    PlanUpdated,
    ReasoningDelta,
    TextDelta,
    ToolArgsDelta,
    ToolCalled,
    ToolReturned,
    ToolStarted,
)
from ..base.secrets import mask, mask_obj

if TYPE_CHECKING:
    from acp.helpers import ToolCallContentVariant

__all__ = ["KINDS", "Update", "UpdateMapper", "event_updates", "permission_options",
           "permission_call", "option_index", "history_updates", "tool_kind"]

Update = Union[AgentMessageChunk, AgentThoughtChunk, UserMessageChunk, ToolCallStart,
               ToolCallProgress, AgentPlanUpdate]
"""A session update this agent sends (the kinds of the SDK's ``session/update`` we use)."""

KINDS: dict[str, ToolKind] = {
    "read_file": "read", "write_file": "edit", "bash": "execute", "web_fetch": "fetch",
    "search": "search", "glob": "search",
}
"""The ACP tool kind of our tools; any other tool is ``other``."""

_OPTIONS: tuple[tuple[PermissionOptionKind, str], ...] = (("allow_once", "Allow once"), ("allow_always", "Allow for this session"),
            ("reject_once", "Deny"))
_PLAN_STATUS: dict[str, PlanEntryStatus] = {"done": "completed", "skipped": "completed", "in_progress": "in_progress"}


def tool_kind(name: str) -> ToolKind:
    """The ACP ``kind`` of the tool ``name``."""
    return KINDS.get(name, "other")


def _arguments(text: str) -> object:
    """The model's raw arguments text as JSON when it parses (rawInput), else the text."""
    try:
        return mask_obj(json.loads(text)) if text else {}
    except ValueError:
        return mask(text)


def _plan(plan: Mapping[str, object]) -> AgentPlanUpdate:
    steps = plan.get("steps")
    if not isinstance(steps, list):
        steps = []
    return update_plan([
        plan_entry(mask(str(s.get("title") or s.get("description") or "")),
                   status=_PLAN_STATUS.get(str(s.get("status")), "pending"))
        for s in steps if isinstance(s, dict)])


_INTERNAL = ("update_plan", "ask_agent")


class UpdateMapper:
    """The session updates a run's events become, one event at a time.

    A streamed call is announced (``tool_called``) before its arguments arrive in
    ``tool_args_delta`` pieces; its ``tool_call`` is held until the call starts, returns or
    waits for approval, so ``rawInput`` is always the whole arguments.
    """

    def __init__(self) -> None:
        self._held: dict[str, tuple[str, list[str]]] = {}

    def updates(self, event: BaseEvent) -> list[Update]:
        """The updates for ``event`` (none for most bookkeeping events)."""
        if isinstance(event, ToolCalled) and event.name not in _INTERNAL and not event.arguments:
            self._held[event.call_id] = (event.name, [])
            return []
        if isinstance(event, ToolArgsDelta):
            if event.call_id in self._held:
                self._held[event.call_id][1].append(event.delta)
            return []
        first: list[Update] = []
        if (isinstance(event, (ToolStarted, ToolReturned, AskPending))
                and event.call_id in self._held):
            name, parts = self._held.pop(event.call_id)
            first = event_updates(ToolCalled(round=0, call_id=event.call_id, name=name,
                                             arguments="".join(parts)))
        return first + event_updates(event)


def event_updates(event: BaseEvent) -> list[Update]:
    """The session updates one complete event becomes (stateless: see :class:`UpdateMapper`).

    Internal tools (``update_plan``, ``ask_agent``) are not shown as tool calls: their effect
    arrives as a ``plan`` update or as the question that ends the turn.
    """
    if isinstance(event, TextDelta):
        return [update_agent_message_text(mask(event.text))] if event.text else []
    if isinstance(event, ReasoningDelta):
        return [update_agent_thought_text(mask(event.text))] if event.text else []
    if isinstance(event, ToolCalled):
        if event.name in _INTERNAL:
            return []
        return [start_tool_call(event.call_id, mask(event.name), kind=tool_kind(event.name),
                                status="pending", raw_input=_arguments(event.arguments))]
    if isinstance(event, ToolStarted):
        if event.name in _INTERNAL:
            return []
        return [update_tool_call(event.call_id, status="in_progress")]
    if isinstance(event, ToolReturned):
        if event.internal:
            return []
        text = mask(event.output if event.error is None else (event.output or event.error))
        return [update_tool_call(event.call_id, status="failed" if event.error else "completed",
                                 content=[tool_content(text_block(text))])]
    if isinstance(event, PlanUpdated):
        return [_plan(event.plan)]
    return []


def permission_options() -> list[PermissionOption]:
    """The approval card's three choices, in the card's order (option 1, 2, 3)."""
    return [PermissionOption(option_id=oid, name=name, kind=oid)
            for oid, name in _OPTIONS]


def option_index(option_id: str) -> int | None:
    """The card's 1-based option for the client's ``optionId`` (``None``: not one of ours)."""
    for i, (oid, _name) in enumerate(_OPTIONS, start=1):
        if oid == option_id:
            return i
    return None


def permission_call(call_id: str, question: str, detail: Mapping[str, object]) -> ToolCallUpdate:
    """The waiting call as the ``toolCall`` of a permission request (a diff for write_file)."""
    tool = str(detail.get("tool") or "")
    args = mask_obj(detail.get("arguments"))
    content: list[ToolCallContentVariant] | None = None
    if tool == "write_file" and isinstance(args, dict):
        path, text = args.get("path"), args.get("content")
        if isinstance(path, str):
            content = [tool_diff_content(path, str(text or ""))]
    return ToolCallUpdate(tool_call_id=call_id, title=mask(question), kind=tool_kind(tool),
                          status="pending", raw_input=args, content=content)


def history_updates(messages: Sequence[Mapping[str, object]]) -> list[Update]:
    """A stored conversation as chunks: the user's turns and the assistant's answers."""
    out: list[Update] = []
    for msg in messages:
        content = msg.get("content")
        if isinstance(content, list):  # content parts: keep the text ones
            content = "".join(str(p.get("text") or "") for p in content if isinstance(p, dict))
        if not isinstance(content, str) or not content:
            continue
        if msg.get("role") == "user":
            out.append(update_user_message_text(mask(content)))
        elif msg.get("role") == "assistant":
            out.append(update_agent_message_text(mask(content)))
    return out
