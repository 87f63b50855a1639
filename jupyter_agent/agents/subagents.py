"""Sub-agents as tools: a named :class:`~jupyter_agent.runtime.agents.Agent` that another run can
call, and a one-call model helper (system prompt + task in, text out).

``agent_tool(analyst)`` (or ``analyst.as_tool()``) is a tool taking one ``task``. Each call runs
the agent as a sub-agent (:mod:`.delegation`, the same runner as ``spawn_agent``: at most 30
model requests, nothing persisted or shown) with the agent's instructions, tools, model and
workspace; a tool it would have to ask about is denied to it unless the agent's own
``permissions`` allow it. The sub-run's answer is the tool result the model reads; the
:class:`~jupyter_agent.agents.run.Run` itself is the call's raw value
(``run.tool_values[call_id]``).

Every model call of a sub-agent or a model helper is reported through
:func:`~jupyter_agent.llm.usage_context.report_usage`, so inside a run its tokens and cost add
up into that run's totals (and its footer).
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, TypedDict

from typing_extensions import Unpack

from ..base.errors import ConfigError, ToolError
from ..runtime.agents import Agent as AgentProfile
from ..runtime.agents import AgentOptions, SkillPaths
from ..runtime.catalog import SPAWN_TOOL_NAME, resolve_tool_specs
from ..runtime.policy import PermissionContext
from ..tools.builtin import Workspace
from ..tools.registry import NO_DEADLINE, AnyTool, Tool, ToolResult
from .delegation import SubAgentTask
from .limits import SUB_AGENT_MAX_ROUNDS
from .run import Run
from .turn.start import run_sub_agent as run_as_sub_agent

if TYPE_CHECKING:
    from ..llm.protocol import ModelClient
    from ..llm.types import Message
    from ..session.permissions import Decision

__all__ = ["Agent", "SUB_AGENT_MAX_ROUNDS", "DEFAULT_MODEL_SYSTEM", "AgentTool", "agent_tool",
           "model_tool"]

DEFAULT_MODEL_SYSTEM = "You are a careful assistant. Answer the task you are given concisely."
"""The system prompt of :func:`model_tool` when none is given."""

_TOOL_NAME = re.compile(r"[^A-Za-z0-9_-]")


def _tool_name(name: str) -> str:
    # Providers accept ^[A-Za-z0-9_-]{1,64}$ for function names.
    cleaned = _TOOL_NAME.sub("_", name.strip())[:64]
    if not cleaned:
        raise ConfigError(f"{name!r} cannot be used as a tool name.")
    return cleaned


class AgentTool(AnyTool):
    """A tool whose calls run a sub-agent: the model reads the answer, the raw value is the Run."""

    def invoke(self, arguments: str) -> ToolResult:
        """Run the sub-agent; the tool result is its answer text, ``value`` its :class:`Run`."""
        result = super().invoke(arguments)
        if isinstance(result.value, Run):
            result.output = _answer_text(result.value)
        return result


def _answer_text(run: Run) -> str:
    answer = run.answer.strip() or "(the sub-agent gave no answer)"
    if run.status == "max_rounds":
        return f"[The sub-agent stopped at its round limit; it may not be done.]\n{answer}"
    return answer


def _agent_task(agent: AgentProfile, task: str, tool_name: str, *,
                client: ModelClient | None, max_rounds: int) -> SubAgentTask:
    """``agent`` on ``task``: its instructions, tools (not ``spawn_agent``, not the calling
    tool itself), model, workspace and permissions."""
    workspace = Workspace(agent.workspace or os.getcwd(), read_only=agent.read_only,
                          allow_network=agent.allow_network)
    specs = agent.tools
    if specs is not None:
        specs = [s for s in specs if not (isinstance(s, str) and s.strip() == SPAWN_TOOL_NAME)]
    tools = [t for t in resolve_tool_specs(specs, workspace=lambda: workspace)
             if t.name not in (tool_name, SPAWN_TOOL_NAME)]
    permissions = PermissionContext(overrides=dict(agent.permissions), read_only=agent.read_only,
                                    cwd=str(workspace.root))
    return SubAgentTask(task=task.strip(), role=agent.instructions, tools=tools,
                        permissions=permissions, workspace=workspace,
                        label=f"The sub-agent {tool_name}",
                        usage_module=lambda module: f"{tool_name}:{module}", client=client,
                        model=agent.model, agent=agent.name, max_rounds=max_rounds)


class AgentToolOptions(TypedDict, total=False):
    """The keyword options of :func:`agent_tool` (and :meth:`Agent.as_tool`)."""

    client: ModelClient | None
    max_rounds: int
    requires_approval: bool


class Agent(AgentProfile):
    """A named agent profile (see :class:`~jupyter_agent.runtime.agents.Agent` for the fields)
    that can also be handed to another run as a tool.

    The profile itself is policy data in ``runtime/``; running it as a tool is this layer's
    job, so the method lives here and ``runtime/`` never imports ``agents/``.
    """

    def __init__(self, name: str, instructions: str = "", tools: list[object] | None = None,
                 model: str | None = None, workspace: str | os.PathLike[str] | None = None,
                 permissions: dict[str, Decision] | None = None, *,
                 skills: SkillPaths | None = None, **extra: Unpack[AgentOptions]) -> None:
        # The profile's own signature, said again: without an ``__init__`` of its own, mypy's
        # pydantic plugin would give this class a keyword-only one of the fields.
        super().__init__(name, instructions, tools, model, workspace, permissions,
                         skills=skills, **extra)

    def as_tool(self, name: str | None = None, description: str | None = None,
                **options: Unpack[AgentToolOptions]) -> AgentTool:
        """This agent as a tool of another run (``options``: see :func:`agent_tool`)."""
        return agent_tool(self, name=name, description=description, **options)


def agent_tool(agent: AgentProfile | str, name: str | None = None, description: str | None = None, *,
               client: ModelClient | None = None, max_rounds: int = SUB_AGENT_MAX_ROUNDS,
               requires_approval: bool = True) -> AgentTool:
    """``agent`` as a tool of another run: the model hands it a task and gets its answer.

    Args:
        agent: The :class:`~jupyter_agent.runtime.agents.Agent` (or a registered agent name).
        name: Tool name (default: the agent's name).
        description: What the calling model reads (default: the agent's description).
        client: A model client to use instead of the agent's model (tests, record/replay).
        max_rounds: Tool rounds per call before its final answer; a call never makes more
            than 30 model requests in all (the default).
        requires_approval: Ask the user before each call (the permission policy's default for
            sub-agents); ``False`` lets the calling run use it freely.

    Returns:
        A tool with one argument, ``task``. Its usage (every call of the sub-agent, including
        helpers its tools call) is reported to the calling run, one report per call, under
        ``<tool name>:<module>``.
    """
    from ..runtime.agents import resolve_agent

    resolved = resolve_agent(agent)
    if resolved is None:
        raise ConfigError("agent_tool needs an Agent.")
    tool_name = _tool_name(name or resolved.name)
    if description is None:
        about = resolved.description.strip() or f"The {resolved.name} agent."
        description = (f"{about} Hand it a self-contained task and get its answer back. It "
                       "sees nothing of this conversation: put everything it needs into the task.")

    def run_sub_agent(task: str) -> Run:
        """Run the sub-agent on one task.

        Args:
            task: The task, with all the context the agent needs.
        """
        if not task or not task.strip():
            raise ToolError("The task is empty.")
        # Usage is reported to the calling run, an interrupt stops it, a failure is a tool
        # error: all in the one runner.
        return run_as_sub_agent(_agent_task(resolved, task, tool_name, client=client,
                                            max_rounds=max_rounds))

    # No tool deadline: the round limit and the model client's timeout bound a sub-agent, and an
    # abandoned one would keep calling the model in the background.
    return AgentTool(run_sub_agent, name=tool_name, description=description, batchable=False,
                     requires_approval=requires_approval, timeout=NO_DEADLINE)


def model_tool(name: str = "ask_model", system: str = DEFAULT_MODEL_SYSTEM,
               model: str | None = None, *, description: str | None = None,
               client: ModelClient | None = None) -> AnyTool:
    """A one-call model helper as a tool: ``system`` + the task in, the model's text out.

    Args:
        name: Tool name.
        system: The helper's system prompt (its role).
        model: Model or profile name (default: the configured default model).
        description: What the calling model reads (default: a generic one quoting ``system``).
        client: A model client to use instead of ``model``.

    Returns:
        A tool with one argument, ``task``. Each call is one streamed model call, reported to the
        calling run under the tool's name.
    """
    from .helpers import call_model

    tool_name = _tool_name(name)
    if description is None:
        role = " ".join(system.split())
        role = role if len(role) <= 200 else role[:197] + "..."
        description = ("Ask another model to do one self-contained task and get its text answer "
                       f"back. It sees only the task, and has this role: {role}")

    def ask(task: str) -> str:
        """Send one task to the model.

        Args:
            task: The task, with all the context the model needs.
        """
        if not task or not task.strip():
            raise ToolError("The task is empty.")
        messages: list[Message] = [{"role": "user", "content": task.strip()}]
        if system.strip():
            messages.insert(0, {"role": "system", "content": system.strip()})
        result = call_model(tool_name, messages, model=model, client=client)
        return result.text.strip() or "(the model gave no answer)"

    # One model call, bounded by the client's own timeout (no tool deadline on top).
    return Tool(ask, name=tool_name, description=description, timeout=NO_DEADLINE)
