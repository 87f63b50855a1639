"""A task handed to a sub-agent: what it runs with, and the one limit and rule all share.

Two tools start sub-agents: ``spawn_agent`` (:mod:`.spawn`: the parent's client and tools, in a
folder of its workspace) and an agent used as a tool (:mod:`.subagents`: a named agent's
instructions, tools and model). Both describe the task as a :class:`SubAgentTask` and hand it
to the one runner, :func:`jupyter_agent.agents.turn.start.run_sub_agent`: a nested tool loop of at
most :data:`~.constants.SUB_AGENT_MAX_ROUNDS` model requests (its final-answer request
included), not persisted, shown nowhere, whose usage is added to the calling run. Nobody can
answer an approval card inside a tool call, so a tool the sub-agent would have to ask about is
denied to it (the rule lives in the runner: ``no_prompts``); what its permissions already allow
still runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .limits import SUB_AGENT_MAX_ROUNDS

if TYPE_CHECKING:
    from ..llm.protocol import ModelClient
    from ..runtime.policy import PermissionContext
    from ..tools.builtin import Workspace
    from ..tools.registry import AnyTool
    from .run import Run

__all__ = ["SubAgentTask", "SubAgentRunner"]


@dataclass
class SubAgentTask:
    """One task for a sub-agent."""

    task: str
    """The self-contained task (the sub-agent sees nothing else of the calling run)."""
    role: str
    """Its system prompt, after the profile's default one."""
    tools: list[AnyTool]
    """Its tools (``spawn_agent`` is always left out: sub-agents do not spawn)."""
    permissions: PermissionContext
    """Its permission rules; the runner makes every ``ask`` a denial."""
    workspace: Workspace
    label: str
    """How errors name it: ``"<label> failed: <error>"``."""
    usage_module: Callable[[str], str]
    """The module name each of its priced calls is reported under to the calling run."""
    client: ModelClient | None = None
    """The client to run on (``None``: resolve ``model``)."""
    model: str | None = None
    agent: str | None = None
    """The named agent it runs as (for the run record), if any."""
    max_rounds: int = SUB_AGENT_MAX_ROUNDS
    """Tool rounds it may make; it never makes more than ``SUB_AGENT_MAX_ROUNDS`` requests."""


SubAgentRunner = Callable[[SubAgentTask], "Run"]
"""Runs a :class:`SubAgentTask` and returns its (finished) run."""
