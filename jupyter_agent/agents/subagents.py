"""Sub-agents as tools: a named :class:`~jupyter_agent.runtime.agents.Agent` that another run can
call, and a one-call model helper (system prompt + task in, text out).

``agent_tool(analyst)`` (or ``analyst.as_tool()``) is a tool taking one ``task``. Each call runs
a nested tool loop with the agent's instructions, tools, model and workspace: nothing is
persisted (no store, no session), nothing is shown, and nobody can answer an approval card from
inside a tool call, so a tool the sub-agent would have to ask about is denied to it unless the
agent's own ``permissions`` allow it. The sub-run's answer is the tool result the model reads;
the :class:`~jupyter_agent.agents.run.Run` itself is the call's raw value
(``run.tool_values[call_id]``).

Every model call of a sub-agent or a model helper is reported through
:func:`~jupyter_agent.llm.usage_context.report_usage`, so inside a run its tokens and cost add
up into that run's totals (and its footer).
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, ToolError
from ..events import UsageRecorded
from ..llm.types import Usage
from ..llm.usage_context import report_usage
from ..runtime.agents import Agent as AgentProfile
from ..tools.registry import NO_DEADLINE, Tool, ToolResult
from .run import Run

if TYPE_CHECKING:
    from ..llm.protocol import ModelClient

__all__ = ["Agent", "SUB_AGENT_MAX_ROUNDS", "DEFAULT_MODEL_SYSTEM", "AgentTool", "agent_tool",
           "model_tool", "run_agent_task"]

SUB_AGENT_MAX_ROUNDS = 30
"""Model requests one sub-agent call may make (the same limit as ``spawn_agent``)."""
DEFAULT_MODEL_SYSTEM = "You are a careful assistant. Answer the task you are given concisely."
"""The system prompt of :func:`model_tool` when none is given."""

_TOOL_NAME = re.compile(r"[^A-Za-z0-9_-]")


def _tool_name(name: str) -> str:
    # Providers accept ^[A-Za-z0-9_-]{1,64}$ for function names.
    cleaned = _TOOL_NAME.sub("_", name.strip())[:64]
    if not cleaned:
        raise ConfigError(f"{name!r} cannot be used as a tool name.")
    return cleaned


class AgentTool(Tool[Any]):
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


def _report_run_usage(run: Run, prefix: str) -> None:
    """Hand every priced call of ``run`` to the caller's usage sink, one report per call."""
    for event in run.events:
        if not isinstance(event, UsageRecorded):
            continue
        usage = Usage(input_tokens=event.input_tokens, output_tokens=event.output_tokens,
                      estimated=event.estimated)
        report_usage(f"{prefix}:{event.module}", event.model, usage, event.cost)


def run_agent_task(agent: Agent, task: str, *, client: ModelClient | None = None,
                   max_rounds: int = SUB_AGENT_MAX_ROUNDS, exclude: tuple[str, ...] = ()) -> Run:
    """Run ``agent`` on ``task`` as a nested, unpersisted tool loop and return its Run.

    The usage of its calls is *not* reported here (see :func:`agent_tool`).

    Args:
        agent: The agent: its instructions, tools (``None``: every ``@tool`` function), model
            and workspace are used; ``spawn_agent`` is left out (sub-agents do not spawn).
        task: The self-contained task (the sub-agent sees nothing else).
        client: A model client to use instead of the agent's model.
        max_rounds: Model requests before the final-answer round.
        exclude: Tool names left out (the calling tool itself, against recursion).
    """
    from ..runtime.catalog import SPAWN_TOOL_NAME, resolve_tool_specs
    from ..runtime.policy import PermissionContext
    from ..tools.builtin import Workspace
    from . import run as run_module
    from ._base import TurnOptions, drive, prepare
    from .context import TOOL_SEPARATOR, join_system
    from .toolloop import loop_parts

    workspace = Workspace(agent.workspace or os.getcwd(), read_only=agent.read_only,
                          allow_network=agent.allow_network)
    specs = agent.tools
    if specs is not None:
        specs = [s for s in specs if not (isinstance(s, str) and s.strip() == SPAWN_TOOL_NAME)]
    tools = [t for t in resolve_tool_specs(specs, workspace=lambda: workspace)
             if t.name not in exclude and t.name != SPAWN_TOOL_NAME]
    permissions = PermissionContext(overrides=dict(agent.permissions), read_only=agent.read_only,
                                    cwd=str(workspace.root), no_prompts=True)
    opt = TurnOptions(model=agent.model, session=None, store=None, history=0, stream=False,
                      client=client)
    parent_run = run_module.last_run()
    try:
        p = prepare("toolloop", task, opt, mode="agent", agent=agent.name)
        prof = p.client.profile
        system = join_system([prof.default_system_prompt, agent.instructions], TOOL_SEPARATOR)
        messages: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
        messages.append({"role": "user", "content": task.strip()})
        cfg, hooks = loop_parts(p, tools, parallel=False, max_rounds=max_rounds, temperature=None,
                                max_tokens=None, stream=False, permissions=permissions)
        return drive(p, messages, cfg, hooks, persist_from=len(messages) - 1)
    finally:
        # The sub-run is not the user's "last run". (A shared failover client reports to the
        # parent run again by itself: ``drive`` routes its warnings only while it runs.)
        if parent_run is not None:
            run_module._LAST["run"] = parent_run


class Agent(AgentProfile):
    """A named agent profile (see :class:`~jupyter_agent.runtime.agents.Agent` for the fields)
    that can also be handed to another run as a tool.

    The profile itself is policy data in ``runtime/``; running it as a tool is this layer's
    job, so the method lives here and ``runtime/`` never imports ``agents/``.
    """

    def as_tool(self, name: str | None = None, description: str | None = None,
                **options: Any) -> AgentTool:
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
        max_rounds: Model requests per call (default 30).
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
        run = run_agent_task(resolved, task, client=client, max_rounds=max_rounds,
                             exclude=(tool_name,))
        _report_run_usage(run, tool_name)  # before any error: the calls were made and paid
        if run.status == "aborted":
            raise KeyboardInterrupt  # the user interrupted: the calling run stops too
        if run.status == "error":
            raise ToolError(f"The sub-agent {tool_name} failed: {run.error}")
        return run

    # No tool deadline: the round limit and the model client's timeout bound a sub-agent, and an
    # abandoned one would keep calling the model in the background.
    return AgentTool(run_sub_agent, name=tool_name, description=description, batchable=False,
                     requires_approval=requires_approval, timeout=NO_DEADLINE)


def model_tool(name: str = "ask_model", system: str = DEFAULT_MODEL_SYSTEM,
               model: str | None = None, *, description: str | None = None,
               client: ModelClient | None = None) -> Tool[Any]:
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
    from .helpers._call import call_model

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
        messages = [{"role": "user", "content": task.strip()}]
        if system.strip():
            messages.insert(0, {"role": "system", "content": system.strip()})
        result = call_model(tool_name, messages, model=model, client=client)
        return result.text.strip() or "(the model gave no answer)"

    # One model call, bounded by the client's own timeout (no tool deadline on top).
    return Tool(ask, name=tool_name, description=description, timeout=NO_DEADLINE)
