"""The permission check every tool runner makes before a call runs (toolloop, plan, sub-agents).

``check_permission(call, tool, ctx)`` returns ``None`` when the call may run, or the
:class:`~jupyter_agent.loop.hooks.ToolOutcome` that replaces it: a denial the model reads, or
an approval card (``interactive``) that suspends the run after the round, exactly like the
plan's ask. The decision itself is :class:`~jupyter_agent.session.permissions.PermissionPolicy`
(defaults, session memory, agent overrides, read-only workspace); this module adds where each
input comes from and what a decision does to the run.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypedDict

from ..base.events import AskPending
from ..base.jsontypes import JSONObject, JSONValue
from ..llm.types import ToolCall
from ..loop.hooks import ToolOutcome
from ..session.permissions import (
    APPROVAL_OPTIONS,
    Decision,
    PermissionPolicy,
    PermissionVerdict,
    Remembered,
    denial_message,
)
from .grants import GRANTS, CellApprovals, NamedTool, tool_identity, tool_label

if TYPE_CHECKING:
    from ..sandbox.bwrap import SandboxStatus
    from ..session.store import Store

__all__ = ["PermissionContext", "WaitingCard", "check_permission", "approval_ask",
           "tool_origin", "WAITING_FOR_APPROVAL", "NO_PROMPTS_REASON"]

WAITING_FOR_APPROVAL = "Waiting for approval."
"""The placeholder result of a call waiting on an approval card (replaced on resume)."""
NO_PROMPTS_REASON = "a sub-agent cannot ask for approval"
"""Why a sub-agent's ``ask`` becomes a denial."""

_DEFAULT_POLICY = PermissionPolicy()


def _sandbox_status() -> SandboxStatus:
    # Loaded for a bash call only: a run without one never needs the sandbox probe.
    from ..sandbox.bwrap import sandbox_status

    return sandbox_status()


class WaitingCard(TypedDict):
    """A call waiting on its approval card (what a suspended run saves of it)."""

    call_id: str
    name: str
    """The tool's name."""
    arguments: str
    """The call's arguments as the model sent them."""
    ask: JSONObject
    """The card: the ``ask_pending`` fields (:func:`approval_ask`)."""


def tool_origin(tool: object) -> str:
    """Where a tool comes from: ``user`` (``@tool``), ``builtin``, ``mcp`` or ``spawn``."""
    return str(getattr(tool, "origin", "user"))


@dataclass
class PermissionContext:
    """Everything a permission decision depends on, for one run.

    Remembered choices ("Allow for this session") are the kernel's, by ``session`` and tool
    identity (:data:`~jupyter_agent.runtime.grants.GRANTS`); ``memory`` holds choices made in
    a run without a session (and is what a sub-agent inherits). Nothing is read from the
    store: a row there could have been written by the sandbox (docs/security.md).
    """

    session: str | None = None
    store: Store | None = None
    """The run's store (kept for the resume; grants are never read from it)."""
    overrides: dict[str, Decision] = field(default_factory=dict)
    """The agent's overrides (tool name or ``"*"``)."""
    read_only: bool = False
    cwd: str | None = None
    """The workspace folder, shown on approval cards."""
    policy: PermissionPolicy = field(default_factory=lambda: _DEFAULT_POLICY)
    auto_approve: bool = False
    """Scripts: every ``ask`` is allowed without a card (hard denies still apply)."""
    approve: frozenset[str] = frozenset()
    """Tools the person approved in the cell (``--approve``, ``approve=``), as written."""
    approved: frozenset[str] = frozenset()
    """Their identities (``grants.resolve_approvals``): the tools whose calls show no card."""
    no_prompts: bool = False
    """Sub-agents: every ``ask`` becomes a denial (nobody can answer a card)."""
    memory: dict[str, Remembered] = field(default_factory=dict)
    """Choices of this run by tool identity, when there is no session to remember them."""
    waiting: list[WaitingCard] = field(default_factory=list)
    """Approval cards produced during the current round (a round may need several)."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def cell_approvals(self) -> CellApprovals:
        """What the person approved in the cell for this run."""
        return CellApprovals(names=frozenset(self.approve), every=self.auto_approve,
                             identities=frozenset(self.approved))

    def remembered(self, tool: NamedTool) -> Remembered | None:
        """The remembered ``allow``/``deny`` for ``tool``: this run's, then the kernel's."""
        identity = tool_identity(tool)
        if identity in self.memory:
            return self.memory[identity]
        return GRANTS.decision(self.session, tool)

    def remember(self, tool: NamedTool, decision: Remembered) -> None:
        """Remember ``decision`` for ``tool`` for the rest of the session (this kernel)."""
        self.memory[tool_identity(tool)] = decision
        if self.session:
            GRANTS.remember(self.session, tool, decision)

    def evaluate(self, tool: NamedTool) -> PermissionVerdict:
        """The policy's verdict for a call of ``tool``."""
        found = self.remembered(tool)
        memory: dict[str, Remembered] = {tool.name: found} if found is not None else {}
        return self.policy.evaluate(
            tool.name, is_user_tool=tool_origin(tool) == "user",
            requires_approval=bool(getattr(tool, "requires_approval", False)),
            session_memory=memory,
            agent_overrides=self.overrides, read_only_workspace=self.read_only)

    def child(self) -> PermissionContext:
        """The context of a sub-agent: same rules and memory, no store, no prompts."""
        memory = {**GRANTS.for_session(self.session), **self.memory}
        return PermissionContext(session=None, store=None, overrides=dict(self.overrides),
                                 read_only=self.read_only, cwd=self.cwd, policy=self.policy,
                                 auto_approve=False, no_prompts=True, memory=memory)

    def take_waiting(self) -> list[WaitingCard]:
        """The approval cards of the round, emptied."""
        with self._lock:
            out, self.waiting = self.waiting, []
        return out


def _arguments(call: ToolCall) -> JSONValue:
    """The call's arguments as JSON, or as the text the model sent when it is not JSON."""
    try:
        value: JSONValue = json.loads(call.arguments or "{}")
    except ValueError:
        return call.arguments
    return value


_QUESTIONS = {
    "bash": "Run this command in the workspace?",
    "write_file": "Write this file in the workspace?",
    "web_fetch": "Fetch this URL?",
    "spawn_agent": "Start a sub-agent on this task?",
    "sandbox_python": "Run this Python code in the workspace?",
    "run_python": "Run this code in the kernel?",
}


def approval_ask(call: ToolCall, tool_name: str, cwd: str | None,
                 display: dict[str, str] | None = None, *, label: str | None = None,
                 server: str | None = None) -> JSONObject:
    """The approval card for ``call``: the ``ask_pending`` fields as a dict.

    ``detail`` carries the tool, its arguments, the working directory, and for ``bash`` the
    command, for ``write_file`` the path, for ``web_fetch`` the URL, for ``run_python`` and
    ``sandbox_python`` the code (what the user must see), and the tool's ``display`` hints
    (``{"code": "python"}``: show that argument as highlighted Python). An MCP tool's card
    names its server (``label``, and ``detail["server"]``): two servers may offer tools that
    look alike.
    """
    args = _arguments(call)
    detail: JSONObject = {"tool": tool_name, "arguments": args}
    if cwd:
        detail["cwd"] = cwd
    if isinstance(args, dict):
        for key in ("command", "path", "url", "code"):
            if isinstance(args.get(key), str):
                detail[key] = args[key]
    if display:
        detail["display"] = {key: lang for key, lang in display.items()}
    if server:
        detail["server"] = server
    question = _QUESTIONS.get(tool_name, f"Allow the tool {label or tool_name} to run?")
    sandbox = _sandbox_status() if tool_name == "bash" else None
    warning = sandbox.card_note() if sandbox is not None else None
    if sandbox is not None and warning:  # nothing confines the command: say so plainly
        question = f"{question} {warning}"
        detail["sandbox"] = f"none: {sandbox.reason}"
    _show_hidden_characters(detail)
    event = AskPending(call_id=call.id, kind="approval", question=question,
                       options=list(APPROVAL_OPTIONS), allow_other=False, detail=detail)
    return event.model_dump(mode="json", exclude={"t", "type"})


def check_permission(call: ToolCall, tool: NamedTool,
                     ctx: PermissionContext | None) -> ToolOutcome | None:
    """``None`` when ``call`` may run now; otherwise the outcome that stands in for it.

    A denial becomes the tool result (``Permission denied ...``) and the loop goes on. An
    ``ask`` becomes ``Waiting for approval.`` with the approval card in ``interactive``; the
    card is also queued on ``ctx.waiting``, so several asks in one round are all answered.
    """
    if ctx is None:
        return None
    verdict = ctx.evaluate(tool)
    if verdict.decision == "allow":
        return None
    if verdict.decision == "ask" and ctx.cell_approvals().covers(tool):
        return None  # the person approved it in the cell (shown on the run's card)
    if verdict.decision == "deny":
        by_user = verdict.reason == "session memory"
        text = denial_message(tool.name, by_user=by_user, reason=None if by_user else verdict.reason)
        return ToolOutcome(output=text, error=text)
    if ctx.no_prompts:
        text = denial_message(tool.name, by_user=False, reason=NO_PROMPTS_REASON)
        return ToolOutcome(output=text, error=text)
    ask = approval_ask(call, tool.name, ctx.cwd, getattr(tool, "display", None),
                       label=tool_label(tool), server=getattr(tool, "server_name", None))
    with ctx._lock:
        ctx.waiting.append({"call_id": call.id, "name": tool.name, "arguments": call.arguments,
                            "ask": ask})
    return ToolOutcome(output=WAITING_FOR_APPROVAL, interactive=ask, skip_compress=True)


def _visible(text: str) -> str:
    """``text`` with every character that changes or hides how it reads shown as an escape:
    bidi controls (``U+202E`` reverses what follows), zero-width and other format characters,
    control characters but newline and tab (``\\r`` overwrites a line in a terminal), line
    separators."""
    import unicodedata

    out = []
    for ch in text:
        if ch in "\n\t" or unicodedata.category(ch) not in ("Cf", "Cc", "Zl", "Zp", "Co", "Cn"):
            out.append(ch)
        else:
            out.append(f"\\u{ord(ch):04x}" if ord(ch) > 0xFF else f"\\x{ord(ch):02x}")
    return "".join(out)


def _show_hidden_characters(detail: JSONObject) -> None:
    """The card shows what will run, not what a renderer makes of it: a model can write a
    command whose bidi controls make ``rm -rf ~`` read as a comment. Such characters are
    shown escaped in the rows that show the call (the call itself is unchanged), and the card
    says so."""
    found = False

    def text(value: str) -> str:
        nonlocal found
        shown = _visible(value)
        found = found or shown != value
        return shown

    def fix(value: JSONValue) -> JSONValue:
        if isinstance(value, str):
            return text(value)
        if isinstance(value, dict):
            return {text(k): fix(v) for k, v in value.items()}
        if isinstance(value, list):
            return [fix(v) for v in value]
        return value

    # Only the rows that show the call: ``arguments`` stays as sent (a plan's approved call is
    # run from it).
    for key in ("command", "path", "url", "code", "cwd"):
        if key in detail:
            detail[key] = fix(detail[key])
    if found:
        detail["hidden characters"] = (
            "the call holds characters that change or hide how it reads (direction "
            "controls, zero-width or control characters); they are shown as \\u.... / \\x.. "
            "escapes here, and run as they are")
