"""Who may run which tool: the permission policy consulted before every tool call.

A decision is ``allow`` (run it), ``ask`` (suspend the run on an approval card: Allow once /
Allow for this session / Deny) or ``deny`` (do not run it; the model is told so).

Precedence, first match wins:

1. Internal tools of the loop (``update_plan``, ``ask_agent``, ``stop``) are always allowed:
   they touch nothing outside the run, and denying them would break the agents.
2. Hard denies: the workspace constraint (a read-only workspace denies ``write_file``,
   ``bash``, ``sandbox_python`` and ``run_python``) and any ``deny`` in the agent's overrides (exact name or ``"*"``). A deny written
   by the agent's author or forced by the workspace cannot be lifted by a click.
3. Session memory: what the user chose "for this session" (``allow`` or ``deny``).
4. Agent override for the exact tool name, then the agent's ``"*"`` wildcard.
5. Tool default: a user's ``@tool`` function is allowed unless it was declared with
   ``requires_approval=True`` (then ``ask``); built-ins follow :data:`BUILTIN_DEFAULTS`;
   anything else (MCP tools, ``spawn_agent``, agent-as-tool) uses ``other_tools``, ``ask``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, Field

from ..base.deferred import DeferredModel

__all__ = [
    "APPROVAL_OPTIONS",
    "BUILTIN_DEFAULTS",
    "INTERNAL_TOOLS",
    "WRITE_TOOLS",
    "Decision",
    "PermissionPolicy",
    "PermissionVerdict",
    "denial_message",
]

Decision = Literal["allow", "ask", "deny"]
"""What happens to a tool call: run it, ask the user first, or refuse it."""
Remembered = Literal["allow", "deny"]
"""What the session may remember for a tool ("ask" is never remembered)."""

APPROVAL_OPTIONS = ["Allow once", "Allow for this session", "Deny"]
"""Buttons of an approval card, in the order shown (``--option N`` counts from 1)."""

BUILTIN_DEFAULTS: dict[str, Decision] = {
    "read_file": "allow",
    "search_files": "allow",
    "glob_files": "allow",
    "bash": "ask",
    "write_file": "ask",
    "web_fetch": "ask",
}
"""Default decision for each built-in workspace tool (docs/behaviour.md §10.5)."""

INTERNAL_TOOLS = frozenset({"update_plan", "ask_agent", "stop"})
"""Tools the loop itself provides; always allowed."""

WRITE_TOOLS = frozenset({"write_file", "bash", "sandbox_python", "run_python"})
"""Tools that can change the workspace; denied when it is read-only (``sandbox_python`` is the
Python sandbox tool, ``run_python`` the notebook's: their code can write files like a shell
command)."""


class PermissionVerdict(DeferredModel):
    """A decision plus the rule that produced it (for logs, tests and the denial text)."""

    decision: Decision
    reason: str
    """Which rule decided, e.g. ``"session memory"`` or ``"agent override '*'"``."""


class PermissionPolicy(BaseModel):
    """Decides ``allow`` / ``ask`` / ``deny`` for a tool call; see the module doc for the order.

    The policy holds the defaults; the per-agent overrides and the session's memory are
    passed to :meth:`decide`, because they belong to the agent and to the session.
    """

    builtin_defaults: dict[str, Decision] = Field(default_factory=lambda: dict(BUILTIN_DEFAULTS))
    """Default per built-in tool; change an entry to relax or tighten it for every agent."""
    other_tools: Decision = "ask"
    """Default for tools that are neither built-in nor the user's own (MCP, sub-agents)."""
    write_tools: frozenset[str] = WRITE_TOOLS
    """Tools denied by :meth:`workspace_constraint` when the workspace is read-only."""

    def evaluate(self, tool_name: str, *, is_user_tool: bool = False,
                 requires_approval: bool = False,
                 session_memory: Mapping[str, Remembered] | None = None,
                 agent_overrides: Mapping[str, Decision] | None = None,
                 read_only_workspace: bool = False) -> PermissionVerdict:
        """The decision for one call of ``tool_name``, and which rule made it.

        Args:
            tool_name: The tool the model called.
            is_user_tool: The tool is the user's own ``@tool`` function.
            requires_approval: The user's tool was declared with ``requires_approval=True``.
            session_memory: Choices remembered for this session (tool name -> allow/deny).
            agent_overrides: The agent's own rules (tool name or ``"*"`` -> decision).
            read_only_workspace: The session's workspace may not be written.
        """
        memory = session_memory or {}
        overrides = agent_overrides or {}
        if tool_name in INTERNAL_TOOLS and not is_user_tool:
            return PermissionVerdict(decision="allow", reason="internal tool")
        constraint = self.workspace_constraint(tool_name, read_only=read_only_workspace)
        if constraint is not None:
            return PermissionVerdict(decision=constraint, reason="workspace is read-only")
        for key in (tool_name, "*"):
            if overrides.get(key) == "deny":
                return PermissionVerdict(decision="deny", reason=f"agent override {key!r}")
        if tool_name in memory:
            return PermissionVerdict(decision=memory[tool_name], reason="session memory")
        for key in (tool_name, "*"):
            if key in overrides:
                return PermissionVerdict(decision=overrides[key], reason=f"agent override {key!r}")
        return PermissionVerdict(
            decision=self.default_for(tool_name, is_user_tool=is_user_tool,
                                      requires_approval=requires_approval),
            reason="tool default",
        )

    def default_for(self, tool_name: str, *, is_user_tool: bool = False,
                    requires_approval: bool = False) -> Decision:
        """The decision when no override, memory or constraint applies."""
        if is_user_tool:
            return "ask" if requires_approval else "allow"
        return self.builtin_defaults.get(tool_name, self.other_tools)

    def workspace_constraint(self, tool_name: str, *, read_only: bool) -> Decision | None:
        """Hook: a decision forced by the workspace, or None. Override to add constraints."""
        if read_only and tool_name in self.write_tools:
            return "deny"
        return None


def denial_message(tool_name: str, *, by_user: bool = True, reason: str | None = None) -> str:
    """The tool result the model gets when a call was not run.

    Args:
        tool_name: The refused tool.
        by_user: The user clicked Deny (else the policy refused it).
        reason: The rule that refused it, for a policy denial.
    """
    if by_user:
        return f"Permission denied by the user: {tool_name} was not run."
    why = f" ({reason})" if reason else ""
    return f"Permission denied by policy{why}: {tool_name} was not run."
