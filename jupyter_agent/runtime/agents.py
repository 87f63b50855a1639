"""Named agents: a role with its own instructions, tools, model, workspace and permissions.

``Agent("analyst", instructions=..., tools=["read_file", "bash"], workspace="data/")`` defines
and registers a profile; ``%%toolloop --agent analyst`` (or a variable holding it) uses it, and
the session the cell runs in is bound to it, so later cells of that session keep the role and
its workspace until another ``--agent`` switches it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from typing import TypedDict

from pydantic import BaseModel, ConfigDict, Field, field_validator
from typing_extensions import Unpack

from ..base.errors import ConfigError
from ..base.state import STATE
from ..session.permissions import Decision

__all__ = ["Agent", "AgentOptions", "SkillPaths", "AGENTS", "resolve_agent", "list_agents", "forget_agent",
           "agent_for_intent"]

AGENTS: dict[str, Agent] = STATE.slot("runtime.agents", dict)
"""Agents defined in this process, by name (re-creating a name replaces the old one)."""
_lock = threading.Lock()


class AgentOptions(TypedDict, total=False):
    """The keyword options of :class:`Agent` past its named parameters (see its Args)."""

    read_only: bool
    allow_network: bool
    intents: list[str]
    description: str
    notebook: bool
    notebook_variables: list[str] | None


SkillPaths = str | os.PathLike[str] | Iterable[str | os.PathLike[str]]
"""One skill folder or several."""


class Agent(BaseModel):
    """A named agent profile; creating one registers it under its name.

    Args:
        name: What ``--agent NAME`` and session bindings refer to.
        instructions: Role instructions, put into the system prompt of every turn.
        tools: Tool names (``@tool`` functions, built-ins such as ``"bash"``, MCP tools,
            ``"spawn_agent"``), :class:`~jupyter_agent.tools.registry.Tool` objects or plain
            functions; ``None`` means the default: with a ``workspace``, the built-ins, the
            connected MCP servers' tools and every ``@tool`` function; without one, every
            ``@tool`` function (docs/behaviour.md §5.1).
        model: Model or profile name, used unless the cell says ``--model``.
        workspace: The folder the file tools are confined to and ``bash`` runs in (sandboxed
            when bubblewrap is available, docs/sandbox.md; relative paths are taken
            from the current directory when the agent is created); default: the current
            directory at the time of the turn.
        permissions: Overrides of the permission policy, tool name (or ``"*"``) to ``allow``,
            ``ask`` or ``deny``.
        read_only: The workspace may not be written (``write_file`` and ``bash`` are denied).
        allow_network: ``bash`` keeps network access inside its sandbox (off by default; see
            docs/sandbox.md).
        intents: Intent categories this agent is the role for; when neither the user nor the
            session chose an agent, a recognised intent (confidence >= 0.5) may pick it.
        description: One line shown by ``%agent agents``.
        notebook: Offer the notebook tools (``list_variables``, ``inspect_variable``,
            ``run_python``, ``read_notebook``, ``read_cells``, ``insert_cell``) on every turn
            (docs/notebook-tools.md).
        notebook_variables: The only notebook variables this agent may list, inspect or get
            with ``--with`` (``None``: all but secret-looking ones). With a list, ``run_python``
            is left out, since code could read any variable.
        skills: Skill folders in the Agent Skills layout (a folder with a ``SKILL.md``, or a
            folder of them; relative paths are taken from the current directory when the agent
            is created): their names and descriptions go into the system prompt and the agent
            reads one with the read-only ``read_skill`` tool (docs/behaviour.md §5.5).
    """

    # Deferred as `_deferred.DeferredModel` is (a run with no named agent never builds it), but
    # set here: the type checker would take that class's `__init__` for `super().__init__`.
    model_config = ConfigDict(arbitrary_types_allowed=True, validate_assignment=True,
                              defer_build=True)

    name: str
    instructions: str = ""
    tools: list[object] | None = None
    """As given (names, tools, functions): ``runtime.catalog.resolve_tool_specs`` checks
    each one when a turn starts."""
    model: str | None = None
    workspace: str | None = None
    permissions: dict[str, Decision] = Field(default_factory=dict)
    read_only: bool = False
    allow_network: bool = False
    intents: list[str] = Field(default_factory=list)
    description: str = ""
    notebook: bool = False
    notebook_variables: list[str] | None = None
    skills: list[str] = Field(default_factory=list)

    def __init__(self, name: str, instructions: str = "", tools: list[object] | None = None,
                 model: str | None = None, workspace: str | os.PathLike[str] | None = None,
                 permissions: dict[str, Decision] | None = None, *,
                 skills: SkillPaths | None = None, **extra: Unpack[AgentOptions]) -> None:
        super().__init__(name=name, instructions=instructions, tools=tools, model=model,
                         workspace=None if workspace is None else os.fspath(workspace),
                         permissions=permissions or {}, skills=_skill_paths(skills), **extra)
        with _lock:
            AGENTS[self.name] = self

    @field_validator("name")
    @classmethod
    def _name_ok(cls, value: str) -> str:
        value = value.strip()
        if not value or any(c.isspace() for c in value):
            raise ValueError("an agent name must be one word (no spaces)")
        return value

    @field_validator("workspace")
    @classmethod
    def _absolute(cls, value: str | None) -> str | None:
        # Fixed when the agent is defined: a later os.chdir must not move the workspace.
        if value is None:
            return None
        return os.path.abspath(os.path.expanduser(value))

    @field_validator("skills", mode="before")
    @classmethod
    def _skill_paths(cls, value: object) -> list[str]:
        return _skill_paths(value)

    def tool_names(self) -> list[str]:
        """The names of the agent's tools (for display and for saving with a suspended run)."""
        out: list[str] = []
        for t in self.tools or []:
            out.append(t if isinstance(t, str) else getattr(t, "name", getattr(t, "__name__", "?")))
        return out

    def __repr__(self) -> str:
        return f"<Agent {self.name}: model={self.model}, tools={self.tool_names()}>"


def _skill_paths(value: object) -> list[str]:
    """One folder or several, as absolute paths: fixed when the agent is defined, like the
    workspace.

    Raises:
        ValueError: ``value`` is neither a path nor a list of paths.
    """
    if value is None:
        return []
    if isinstance(value, (str, os.PathLike)):
        value = [value]
    if not isinstance(value, Iterable):
        raise ValueError(f"skills: a folder or a list of folders, not {type(value).__name__}")
    out: list[str] = []
    for v in value:
        if not isinstance(v, (str, os.PathLike)):
            raise ValueError(f"skills: a folder path, not {type(v).__name__}")
        out.append(os.path.abspath(os.path.expanduser(os.fspath(v))))
    return out


def resolve_agent(agent: str | Agent | None) -> Agent | None:
    """The agent for ``agent`` (an :class:`Agent` or a registered name); ``None`` stays ``None``.

    Raises:
        ConfigError: no agent has that name.
    """
    if agent is None or isinstance(agent, Agent):
        return agent
    if not isinstance(agent, str):
        raise ConfigError(f"agent must be an Agent or an agent name, not {type(agent).__name__}.")
    found = AGENTS.get(agent.strip())
    if found is None:
        known = ", ".join(sorted(AGENTS)) or "none defined"
        raise ConfigError(f"Unknown agent {agent!r}. Defined agents: {known}.")
    return found


def list_agents() -> list[Agent]:
    """The defined agents, by name."""
    return [AGENTS[k] for k in sorted(AGENTS)]


def forget_agent(name: str) -> bool:
    """Remove the agent called ``name``; False when there was none."""
    with _lock:
        return AGENTS.pop(name, None) is not None


def agent_for_intent(category: str) -> Agent | None:
    """The first agent (in definition order) declaring ``category`` among its intents."""
    for a in list(AGENTS.values()):
        if category in a.intents:
            return a
    return None
