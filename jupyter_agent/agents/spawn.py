"""``spawn_agent``: a tool that hands a self-contained task to a sub-agent.

The sub-agent (:mod:`.delegation`: at most 30 model requests, not persisted, no cards) uses the
parent's model client and tools, minus ``spawn_agent`` itself, with its built-ins bound to a
folder inside the parent's workspace. It "asks for no permissions": a tool the parent would
have to ask about is *denied* to it, unless the parent's session already allows it (an "Allow
for this session" choice or an agent override), because nobody can answer a card inside a tool
call. Its token usage is added to the parent run (module ``spawn_agent``).

The tool is made while the turn's tools are resolved (:mod:`.turn`); the runner it calls is
given to it then (:attr:`SpawnParent.run_sub_agent`), and the parent's client once the turn has
resolved its model.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..base.errors import ToolError
from ..llm.protocol import ModelClient
from ..runtime.catalog import SPAWN_TOOL_NAME, rebind_builtins, tag
from ..runtime.policy import PermissionContext
from ..tools.builtin import Workspace, WorkspaceError
from ..tools.registry import NO_DEADLINE, AnyTool, Tool
from .delegation import SubAgentRunner, SubAgentTask
from .limits import SUB_AGENT_MAX_ROUNDS

__all__ = ["SPAWN_MAX_ROUNDS", "SUB_AGENT_PROMPT", "SpawnParent", "make_spawn_tool"]

SPAWN_MAX_ROUNDS = SUB_AGENT_MAX_ROUNDS
"""Model requests a spawned sub-agent may make (docs/behaviour.md §10.8; every sub-agent's)."""

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
    run_sub_agent: SubAgentRunner
    """The one sub-agent runner (given by the turn driver)."""
    tools: list[AnyTool] = field(default_factory=list)
    """The parent's tools; ``spawn_agent`` is left out of the sub-agent's set."""
    client: ModelClient | None = None
    """The parent's model client, known once the turn has resolved its model."""

    def spawn(self, task: str, cwd: str = ".") -> str:
        """Run the sub-agent on ``task`` in ``cwd``; the text the parent model receives."""
        if not task or not task.strip():
            raise ToolError("spawn_agent needs a task.")
        if self.client is None:
            raise ToolError("spawn_agent is not available outside a run.")
        root = self.workspace.resolve(cwd or ".")
        if not root.is_dir():
            raise WorkspaceError(f"{cwd!r} is not a folder of the workspace.")
        sub_ws = Workspace(root, read_only=self.workspace.read_only,
                           allow_network=self.workspace.allow_network)
        permissions = self.permissions.child()
        permissions.cwd = str(root)
        run = self.run_sub_agent(SubAgentTask(
            task=task.strip(), role=f"{SUB_AGENT_PROMPT}\n\nYour folder: {root}",
            tools=rebind_builtins([t for t in self.tools if t.name != SPAWN_TOOL_NAME], sub_ws),
            permissions=permissions, workspace=sub_ws, label="The sub-agent",
            usage_module=lambda module: SPAWN_TOOL_NAME, client=self.client))
        answer = run.answer.strip() or "(the sub-agent gave no answer)"
        if run.status == "max_rounds":
            return f"[The sub-agent reached its limit of {SPAWN_MAX_ROUNDS} rounds.]\n{answer}"
        return answer


def make_spawn_tool(parent: SpawnParent) -> AnyTool:
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
        return parent.spawn(task, cwd)

    # No tool deadline: the sub-agent's round limit and the model client's timeout bound it,
    # and an abandoned sub-agent would keep calling the model in the background.
    return tag(Tool(spawn_agent, name=SPAWN_TOOL_NAME, batchable=False, timeout=NO_DEADLINE),
               "spawn")
