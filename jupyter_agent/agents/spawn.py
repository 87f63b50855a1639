"""``spawn_agent``: a tool that hands a self-contained task to a short nested loop.

The nested loop (at most 30 rounds) uses the parent's model client and tools, minus
``spawn_agent`` itself, with its built-ins bound to a folder inside the parent's workspace. It
is not persisted and shows no cards: it "asks for no permissions". Our reading of that: a tool
the parent would have to ask about is *denied* to the sub-agent, unless the parent's session
already allows it (an "Allow for this session" choice or an agent override), because nobody
can answer a card inside a tool call. Its token usage is added to the parent run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import ToolError
from ..llm.protocol import ModelClient
from ..llm.usage_context import report_usage
from ..runtime.catalog import SPAWN_TOOL_NAME, rebind_builtins, tag
from ..runtime.policy import PermissionContext
from ..tools.builtin import Workspace, WorkspaceError
from ..tools.registry import NO_DEADLINE, Tool

__all__ = ["SPAWN_MAX_ROUNDS", "SUB_AGENT_PROMPT", "SpawnParent", "make_spawn_tool",
           "run_sub_agent"]

SPAWN_MAX_ROUNDS = 30
"""Model requests a sub-agent may make (the spec's limit)."""

SUB_AGENT_PROMPT = (
    "You are a sub-agent. A parent agent gave you one self-contained task. Work on it with "
    "your tools, inside the folder you were given; you cannot ask anyone questions, and tools "
    "that need the user's approval are refused to you. When you are done, answer with a short "
    "report: what you did, what you found, and anything left open."
)


@dataclass
class SpawnParent:
    """What a sub-agent inherits from the run that spawns it (filled in as the turn starts)."""

    workspace: Workspace
    permissions: PermissionContext
    tools: list[Tool[Any]] = field(default_factory=list)
    """The parent's tools; ``spawn_agent`` is left out of the sub-agent's set."""
    client: ModelClient | None = None
    """The parent's model client, known once the turn has resolved its model."""


def make_spawn_tool(parent: SpawnParent) -> Tool[Any]:
    """The ``spawn_agent`` tool of one run."""

    def spawn_agent(task: str, cwd: str = ".") -> str:
        """Hand a self-contained task to a sub-agent and get its final report back.

        The sub-agent has your tools (except this one), works in a folder of the workspace
        for at most 30 rounds, cannot ask the user anything, and sees nothing of this
        conversation: put everything it needs into the task.

        Args:
            task: The task, with all the context the sub-agent needs.
            cwd: Folder to work in, relative to the workspace (default: the workspace itself).
        """
        return run_sub_agent(parent, task, cwd)

    # No tool deadline: the sub-agent's round limit and the model client's timeout bound it,
    # and an abandoned sub-agent would keep calling the model in the background.
    return tag(Tool(spawn_agent, name=SPAWN_TOOL_NAME, batchable=False, timeout=NO_DEADLINE),
               "spawn")


def run_sub_agent(parent: SpawnParent, task: str, cwd: str = ".",
                  max_rounds: int = SPAWN_MAX_ROUNDS) -> str:
    """Run the nested loop for ``task`` and return the text the parent model receives."""
    from ..llm.tokens import count_tools_tokens
    from ..loop.hooks import LoopHooks
    from ..loop.kernel import LoopConfig, run_loop
    from ._base import tool_output_processor, window_fitter
    from .toolloop import tool_runner

    if not task or not task.strip():
        raise ToolError("spawn_agent needs a task.")
    if parent.client is None:
        raise ToolError("spawn_agent is not available outside a run.")
    root = parent.workspace.resolve(cwd or ".")
    if not root.is_dir():
        raise WorkspaceError(f"{cwd!r} is not a folder of the workspace.")
    sub_ws = Workspace(root, read_only=parent.workspace.read_only,
                       allow_network=parent.workspace.allow_network)
    tools = rebind_builtins([t for t in parent.tools if t.name != SPAWN_TOOL_NAME], sub_ws)
    permissions = parent.permissions.child()
    permissions.cwd = str(root)
    client = parent.client
    prof = client.profile
    schemas = [t.schema() for t in tools]
    messages = [{"role": "system", "content": f"{SUB_AGENT_PROMPT}\n\nYour folder: {root}"},
                {"role": "user", "content": task.strip()}]
    cfg = LoopConfig(model=prof.model, tools=schemas or None,
                     max_rounds=min(max_rounds, SPAWN_MAX_ROUNDS), stream=False)
    hooks = LoopHooks(
        run_tool=tool_runner(tools, permissions),
        can_batch=lambda c: False,
        fit_context=window_fitter(prof.max_context, None, count_tools_tokens(schemas)),
        process_tool_output=tool_output_processor(client),
    )
    result = run_loop(client, messages, cfg, hooks)
    # The nested loop priced its own calls; they belong to the parent run's totals.
    for u in result.usages:
        report_usage("spawn_agent", u.model, u.usage, u.cost)
    if result.status == "aborted":
        # The nested loop caught the user's interrupt; the parent must stop too.
        raise KeyboardInterrupt
    if result.status == "error":
        raise ToolError(f"The sub-agent failed: {result.error}")
    answer = result.answer.strip() or "(the sub-agent gave no answer)"
    if result.status == "max_rounds":
        return f"[The sub-agent reached its limit of {cfg.max_rounds} rounds.]\n{answer}"
    return answer
