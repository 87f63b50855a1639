"""The runtime part of a turn in ``agent`` mode: session, agent role, intent, workspace,
tools and permissions, resolved before the model is called.

Order (docs/behaviour.md §10.4): the agent the user chose (``--agent``) wins and becomes
the session's main agent (the workspace follows); else the agent bound to the session; else,
when the intent is confident enough (>= 0.5) and an agent declares that intent, that agent for
this turn only; else no agent (the default role, working in the current directory).

The turn driver (:mod:`jupyter_agent.agents.turn.start`) calls :func:`setup_turn` before it opens
the turn and :meth:`TurnSetup.bind` after; a resume rebuilds the same setup with
:func:`restore_turn` from the :class:`~jupyter_agent.agents.pending.TurnState` saved with the
suspended run.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Literal

from ...base.errors import ConfigError, ParameterError, ToolError
from ...base.events import ToolsOffered, UsageRecorded, Warning_
from ...llm.usage_context import usage_sink
from ...loop.hooks import UsageItem
from ...runtime.agents import Agent, agent_for_intent, resolve_agent
from ...runtime.catalog import (
    NOTEBOOK_SET_NAME,
    SPAWN_TOOL_NAME,
    resolve_tool_specs,
    workspace_agent_specs,
)
from ...runtime.grants import (
    GRANTS,
    AmbiguousNameError,
    CellApprovals,
    parse_approve,
    resolve_approvals,
)
from ...runtime.intent import INTENT_RULES, IntentResult, intent_system_text
from ...runtime.policy import PermissionContext
from ...tools import skills as skill_folders  # its modules load when a turn has skills
from ...tools.builtin.workspace import Workspace
from ...tools.registry import AnyTool
from ...tools.skills import READ_SKILL_TOOL
from .recognize import recognize_intent

if TYPE_CHECKING:
    from ...session.permissions import Decision
    from ...session.store import Store
    from ...tools.skills import Skill
    from ..delegation import SubAgentRunner
    from ..pending import TurnState
    from ..spawn import SpawnParent
    from ..tooling import ToolSpec
    from .open import TurnContext
    from .options import Shell, TurnOptions

__all__ = ["TurnSetup", "setup_turn", "restore_turn", "notebook_factory", "default_specs"]

AgentSource = Literal["user", "session", "intent"]


@dataclass
class TurnSetup:
    """What the runtime decided for one turn."""

    mode: str
    agent: Agent | None
    agent_source: AgentSource | None
    intent: IntentResult | None
    workspace: Workspace
    permissions: PermissionContext
    tools: list[AnyTool]
    spawn: SpawnParent | None = None
    notices: list[str] = field(default_factory=list)
    """Warnings to show once the run exists (e.g. a bound agent not defined in this kernel)."""
    usages: list[UsageItem] = field(default_factory=list)
    """Model calls made before the run existed (model-based intent), added to it by ``bind``."""
    skills: list[Skill] = field(default_factory=list)
    """The turn's skills (their names and descriptions are in the system prompt)."""
    _approvals_shown: bool = False
    """A resumed run's card already says what the cell approved."""

    @property
    def agent_name(self) -> str | None:
        """The agent's name, or ``None`` for the default role."""
        return self.agent.name if self.agent is not None else None

    @property
    def system_text(self) -> str:
        """What the runtime adds to the system prompt: the agent's instructions, the intent."""
        parts = []
        if self.agent is not None and self.agent.instructions.strip():
            parts.append(self.agent.instructions.strip())
        hint = intent_system_text(self.intent, self.mode)
        if hint:
            parts.append(hint)
        if self.skills:
            parts.append(skill_folders.skills_prompt(self.skills))
        return "\n\n".join(parts)

    def bind(self, p: TurnContext) -> None:
        """Attach the prepared run: its store and session (permission memory), its client
        (``spawn_agent``), and show the notices."""
        self.permissions.store = p.store
        self.permissions.session = p.run.session
        approvals = self.permissions.cell_approvals()
        if approvals:
            # Kept in this kernel's memory for the run's later parts, never in the store.
            GRANTS.keep_cell(p.run.run_id, approvals)
            if not self._approvals_shown:
                self.notices.append(approval_notice(approvals))
        if self.spawn is not None:
            self.spawn.client = p.client
        p.recorder.emit(ToolsOffered(tools=self.offered_names(p.run.agent),  # the card's line
                                     agent=self.agent_name, agent_source=self.agent_source))
        for message in self.notices:
            p.recorder.emit(Warning_(message=message))
        self.notices.clear()
        for u in self.usages:  # UsageItem(module, model, usage, cost)
            p.run.input_tokens += u.usage.input_tokens
            p.run.output_tokens += u.usage.output_tokens
            p.run.cost += u.cost
            p.recorder.emit(UsageRecorded(module=u.module, model=u.model,
                                          input_tokens=u.usage.input_tokens,
                                          output_tokens=u.usage.output_tokens, cost=u.cost,
                                          estimated=u.usage.estimated))
        self.usages.clear()

    def offered_names(self, kind: str) -> list[str]:
        """The runtime tools the model is offered, for the card's ``Tools:`` line: a plan drops
        a tool named like its internal ``ask_agent``/``update_plan`` (docs/behaviour.md §6.1),
        so the line never names a tool the model did not get."""
        if kind != "plan":
            return [t.name for t in self.tools]
        from ..plan.constants import INTERNAL_TOOL_NAMES  # lazy: the plan package imports this one
        return [t.name for t in self.tools if t.name not in INTERNAL_TOOL_NAMES]

    def state(self) -> TurnState:
        """What is saved with a suspended run, for :func:`restore_turn`."""
        from ..pending import TurnState  # the schema loads only when a run suspends

        return TurnState(agent=self.agent_name, agent_source=self.agent_source,
                         workspace=str(self.workspace.root), read_only=self.workspace.read_only,
                         allow_network=self.workspace.allow_network,
                         overrides=dict(self.permissions.overrides),
                         tools=[t.name for t in self.tools], intent=self.intent, mode=self.mode,
                         skills=[str(s.folder) for s in self.skills])


def _default_workspace(agent: Agent | None, session_workspace: str | None) -> Workspace:
    root = None
    if agent is not None and agent.workspace:
        root = agent.workspace
    elif session_workspace:
        root = session_workspace
    read_only = bool(agent.read_only) if agent is not None else False
    network = bool(agent.allow_network) if agent is not None else False
    return _recent_workspace(root or os.getcwd(), read_only, network)


_REUSE_SECONDS = 1.0
_recent: dict[tuple[str, bool, bool], tuple[float, tuple[int, int, int], Workspace]] = {}


def _recent_workspace(root: str, read_only: bool, network: bool) -> Workspace:
    """``Workspace(root, ...)``, the one built for the same folder less than a second ago when
    ``root`` is still that folder (same device, inode and change time: a folder made in place
    of a removed one may get its inode, never its change time).

    Building one costs a ``stat`` and an ``lstat`` per path component (``realpath``), each a
    system call that hands the interpreter lock back: a batch starts a turn per item from 64
    threads, and every such hand-back is a thread switch. One ``stat`` checks the folder is
    still there and still the same; the short reuse bounds what else could change (a parent
    folder renamed and replaced by a symlink: the workspace then refuses paths, never widens).
    A ``Workspace`` is not changed after it is built, so turns may share one."""
    key = (root, read_only, network)
    now = time.monotonic()
    seen = _recent.get(key)
    if seen is not None and now - seen[0] < _REUSE_SECONDS:
        try:
            st = os.stat(root)
        except OSError:
            st = None
        if st is not None and (st.st_dev, st.st_ino, st.st_ctime_ns) == seen[1]:
            return seen[2]
    workspace = Workspace(root, read_only=read_only, allow_network=network)
    try:
        st = os.stat(workspace.root)
    except OSError:  # gone meanwhile: not kept
        return workspace
    if len(_recent) > 32:  # many folders in turn: start over (the dict stays small)
        _recent.clear()
    _recent[key] = (now, (st.st_dev, st.st_ino, st.st_ctime_ns), workspace)
    return workspace


def notebook_factory(agent: Agent | None, shell: Shell) -> Callable[[], list[AnyTool]]:
    """What builds the notebook tools of a turn: bound to ``shell`` (the edge's; ``None``: the
    running one), limited to the agent's ``notebook_variables`` (then without ``run_python``:
    code could read any variable)."""
    allow = agent.notebook_variables if agent is not None else None

    def make() -> list[AnyTool]:
        from ...tools.notebook import notebook_tools  # only a turn offered notebook tools

        return notebook_tools(shell, variables=allow, run_python=allow is None)

    return make


def _make_tools(specs: Sequence[object] | None, workspace: Workspace, permissions: PermissionContext,
                run_sub_agent: SubAgentRunner, *, lenient: bool = False,
                notebook: Callable[[], list[AnyTool]] | None = None,
                with_notebook: bool = False) -> tuple[list[AnyTool], SpawnParent | None]:
    parent: SpawnParent | None = None

    def spawn() -> AnyTool:
        from ..spawn import SpawnParent, make_spawn_tool  # only a turn offered spawn_agent

        nonlocal parent
        parent = SpawnParent(workspace=workspace, permissions=permissions,
                             run_sub_agent=run_sub_agent)
        return make_spawn_tool(parent)

    def resolve(names: Sequence[object] | None) -> list[AnyTool]:
        return resolve_tool_specs(names, workspace=lambda: workspace, spawn=spawn,
                                  notebook=notebook)

    if not lenient or specs is None:
        tools = resolve(specs)
    else:
        # A resume in another kernel: a tool that is not defined here is left out (a call to
        # it gets the "Unknown tool" answer) rather than making the run impossible to resume.
        tools = []
        for spec in specs:
            try:
                tools.extend(resolve([spec]))
            except ToolError:
                continue
    if with_notebook:  # --notebook / Agent(notebook=True): added to whatever else was chosen
        have = {t.name for t in tools}
        tools.extend(t for t in resolve([NOTEBOOK_SET_NAME]) if t.name not in have)
    if parent is not None:
        parent.tools = [t for t in tools if t.name != SPAWN_TOOL_NAME]
    return tools, parent


def default_specs(agent: Agent | None) -> Sequence[object] | None:
    """The tools of a turn that named none (docs/behaviour.md §5.1): the agent's own ``tools``;
    for an agent with a workspace and no ``tools``, its built-ins, the connected MCP servers'
    tools and the notebook's ``@tool`` functions; otherwise (no agent, or an agent without a
    workspace) ``None``: every ``@tool`` function, so a plain cell stays predictable."""
    if agent is None:
        return None
    if agent.tools is not None:
        return agent.tools
    return workspace_agent_specs() if agent.workspace else None


def _turn_skills(agent: Agent | None, opt: TurnOptions, notices: list[str]) -> list[Skill]:
    """The skills of a turn (the agent's, then the cell's); a notice when the listing's cap
    left some out."""
    paths = [*(agent.skills if agent is not None else []), *_skill_paths(opt.skills)]
    skills = skill_folders.load_skills(paths) if paths else []
    left_out = skill_folders.skills_left_out_notice(skills) if skills else None
    if left_out:
        notices.append(left_out)
    return skills


def setup_turn(kind: str, prompt: str, opt: TurnOptions,
               tools: Sequence[ToolSpec] | None = None, *,
               mode: str = "agent",
               store: Store | None = None, run_sub_agent: SubAgentRunner) -> TurnSetup:
    """Resolve the agent, intent, workspace, tools and permissions of a new turn.

    Side effects: a user-chosen agent is bound to the session (``store.bind_agent``), and
    ``opt.agent_model`` takes the agent's model (a cell's ``--model`` still wins: see
    :mod:`jupyter_agent.clients.factory`).

    Args:
        kind: ``toolloop`` or ``plan``.
        prompt: The user's raw text (the intent looks at nothing else).
        opt: The turn's :class:`~jupyter_agent.agents.turn.options.TurnOptions`.
        tools: The cell's tool specs (``--tools``); ``None``: :func:`default_specs`.
        store: The session store (``None``: no session lookups or bindings).
        run_sub_agent: What ``spawn_agent`` runs its sub-agent with.
    """
    notices: list[str] = []
    chosen = resolve_agent(opt.agent)
    record = store.get_session(opt.session) if store is not None and opt.session else None
    agent = chosen
    source: AgentSource | None = "user" if chosen is not None else None
    if agent is None and record is not None and record.agent:
        try:
            agent, source = resolve_agent(record.agent), "session"
        except ConfigError:
            notices.append(f"Session {opt.session!r} is bound to agent {record.agent!r}, which "
                           "is not defined in this kernel: running without its role (its "
                           "workspace still applies).")
    usages: list[UsageItem] = []
    # A model-based intent call happens before the run exists: its usage is kept for ``bind``.
    with usage_sink(lambda module, model, usage, cost: usages.append(
            UsageItem(f"intent_{module}", model, usage, cost))):
        intent = recognize_intent(prompt, model=opt.model, client=opt.client)
    if agent is None and (record is None or not record.agent) and intent.category != "unknown" \
            and intent.confidence >= INTENT_RULES.role_threshold:
        picked = agent_for_intent(intent.category)
        if picked is not None:
            agent, source = picked, "intent"
    workspace = _default_workspace(agent, record.workspace if record is not None else None)
    if chosen is not None and store is not None and opt.session:
        store.bind_agent(opt.session, chosen.name, chosen.workspace)
    if agent is not None and agent.model:
        opt.agent_model = agent.model
    permissions = PermissionContext(
        overrides=dict(agent.permissions) if agent is not None else {},
        read_only=workspace.read_only, cwd=str(workspace.root),
        auto_approve=opt.auto_approve,
        approve=parse_approve(opt.approve))
    # The tool offer follows this cell: the agent it names (or the intent picked), else the
    # default set. A session's bound agent keeps its role and workspace, not its tools: after
    # a `--agent sh` cell, a plain cell offering only `bash` surprised (issue 37).
    specs = tools if tools is not None else default_specs(agent if source != "session" else None)
    with_notebook = opt.notebook or (agent is not None and agent.notebook)
    skills = _turn_skills(agent, opt, notices)
    selected, parent = _make_tools(specs, workspace, permissions, run_sub_agent,
                                   notebook=notebook_factory(agent, opt.shell),
                                   with_notebook=with_notebook)
    try:
        permissions.approved, unknown = resolve_approvals(permissions.approve, selected,
                                                          known=_connected_mcp_tools())
    except AmbiguousNameError as exc:
        raise ParameterError(f"approve: {exc}", parameters=("approve",)) from None
    if unknown:  # a typo would leave every card in place: say so before anything runs
        raise ParameterError(f"approve: no tool {unknown[0]!r} in this turn (its tools: "
                             f"{', '.join(t.name for t in selected) or 'none'}); offer it "
                             "first with tools (run_python: with notebook), then approve it.",
                             parameters=("approve",))
    _with_skill_tool(selected, skills)
    return TurnSetup(mode=mode, agent=agent, agent_source=source, intent=intent,
                     workspace=workspace, permissions=permissions, tools=selected, spawn=parent,
                     notices=notices, usages=usages, skills=skills)


def _skill_paths(value: str | Iterable[str | os.PathLike[str]] | None) -> list[str]:
    if not value:
        return []
    return [p.strip() for p in value.split(",") if p.strip()] if isinstance(value, str) \
        else [os.fspath(p) for p in value]


def _with_skill_tool(tools: list[AnyTool], skills: list[Skill]) -> None:
    """Offer ``read_skill`` over ``skills`` (in place), replacing a stale one of that name."""
    tools[:] = [t for t in tools if t.name != READ_SKILL_TOOL]
    if skills:
        tools.append(skill_folders.read_skill_tool(skills))


def restore_turn(state: TurnState, *, tools: list[AnyTool] | None,
                 run_sub_agent: SubAgentRunner, run_id: str | None = None) -> TurnSetup:
    """The setup of a suspended run, rebuilt from its saved ``state`` (any kernel).

    Args:
        state: What :meth:`TurnSetup.state` saved.
        tools: The run's tool objects when this process kept them (``held``); otherwise they
            are looked up by name, and one that is not defined here is left out (a call to it
            gets the "Unknown tool" answer) rather than making the run impossible to resume.
        run_sub_agent: What ``spawn_agent`` runs its sub-agent with.
        run_id: The run: what its cell approved is taken from this kernel's memory
            (:data:`~jupyter_agent.runtime.grants.GRANTS`), never from ``state``.
    """
    agent = None
    if state.agent:
        try:
            agent = resolve_agent(state.agent)
        except ConfigError:
            agent = None  # its instructions are in the messages
    workspace = Workspace(state.workspace or os.getcwd(), read_only=state.read_only,
                          allow_network=state.allow_network)
    cell = GRANTS.cell(run_id)
    permissions = PermissionContext(overrides=restored_overrides(state, agent),
                                    read_only=workspace.read_only, cwd=str(workspace.root),
                                    auto_approve=cell.every, approve=cell.names,
                                    approved=cell.identities)
    parent: SpawnParent | None = None
    if tools is not None:
        selected = list(tools)
        spawn = next((t for t in selected if t.name == SPAWN_TOOL_NAME), None)
        if spawn is not None:
            # A fresh spawn tool: the old one points at the previous turn's client and context.
            selected, parent = _make_tools(
                [t if t is not spawn else SPAWN_TOOL_NAME for t in selected], workspace,
                permissions, run_sub_agent)
    else:
        selected, parent = _make_tools(list(state.tools), workspace, permissions,
                                       run_sub_agent, lenient=True,
                                       notebook=notebook_factory(agent, None))
    try:
        skills = skill_folders.load_skills(state.skills) if state.skills else []
    except ParameterError:
        skills = []  # a folder gone since: read_skill is left out (a call gets "Unknown tool")
    if READ_SKILL_TOOL in state.tools:
        _with_skill_tool(selected, skills)
    return TurnSetup(mode=state.mode, agent=agent, agent_source=state.agent_source,
                     intent=state.intent, workspace=workspace, permissions=permissions,
                     tools=selected, spawn=parent, skills=skills, _approvals_shown=True)


def _connected_mcp_tools() -> list[AnyTool]:
    """Every connected MCP tool (the other tools an approval's name could mean); none when
    the MCP module was never loaded, so a turn without MCP does not load it."""
    mcp = sys.modules.get("jupyter_agent.tools.mcp")
    if mcp is None:
        return []
    return [t for server in mcp.mcp_servers() for t in server.tools]


def restored_overrides(state: TurnState, agent: Agent | None) -> dict[str, Decision]:
    """A resumed run's agent overrides: the agent's own when this kernel defines it; of the
    saved ones only the denies (a saved ``allow`` could have been written into the store by
    the sandbox: it never lifts a card, docs/security.md)."""
    out: dict[str, Decision] = {k: v for k, v in state.overrides.items() if v == "deny"}
    if agent is not None:
        out.update({k: v for k, v in agent.permissions.items() if out.get(k) != "deny"})
    return out


def approval_notice(approvals: CellApprovals) -> str:
    """The card's line saying what the person approved in the cell."""
    if approvals.every:
        return "Approved in the cell: every tool (auto_approve): calls run without a card."
    return (f"Approved in the cell: {', '.join(sorted(approvals.names))}: their calls run "
            "without a card.")
