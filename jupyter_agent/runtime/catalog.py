"""The tool catalog of a turn: names resolved to ``Tool`` objects.

A name is looked up, in order, among the user's ``@tool`` functions, the built-in workspace
tools (``bash``, ``read_file``, ``write_file``, ``web_fetch``, ``search_files``,
``glob_files``), ``spawn_agent``, the notebook tools (``list_variables``, ``inspect_variable``,
``run_python``, ``read_notebook``, ``read_cells``, ``insert_cell``, or ``notebook`` for all of
them: docs/notebook-tools.md), and the tools of connected MCP servers (``mcp_<server>_<tool>``,
or ``mcp_<server>`` for all of one server's tools). The default set depends on the turn
(docs/behaviour.md §5.1): a plain turn offers every ``@tool`` function; an agent with a
workspace and no tools of its own offers :func:`workspace_agent_specs` (its built-ins, the
connected MCP servers' tools, then every ``@tool`` function); named tools always win.

Every tool here carries an ``origin`` attribute (``user``, ``builtin``, ``mcp``, ``spawn``),
which the permission policy reads: a user's tool is allowed by default, the others are not.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ..base.errors import ToolError
from ..tools.builtin.names import BUILTIN_TOOL_NAMES
from ..tools.notebook.names import NOTEBOOK_TOOL_NAMES
from ..tools.registry import REGISTRY, AnyTool, Tool

if TYPE_CHECKING:
    from ..tools.builtin.workspace import Workspace

__all__ = ["BUILTIN_TOOL_NAMES", "READ_ONLY_BUILTINS", "builtin_tools", "resolve_tool_specs",
           "tag", "rebind_builtins", "SPAWN_TOOL_NAME", "NOTEBOOK_SET_NAME", "NOTEBOOK_TOOL_NAMES",
           "workspace_agent_specs"]

READ_ONLY_BUILTINS = frozenset({"read_file", "search_files", "glob_files", "web_fetch"})
"""Built-ins without side effects in the workspace: they may run in parallel batches."""
SPAWN_TOOL_NAME = "spawn_agent"
NOTEBOOK_SET_NAME = "notebook"
"""The name that stands for every notebook tool (``--tools notebook``)."""


def tag(tool: AnyTool, origin: str) -> AnyTool:
    """Mark where ``tool`` comes from (read by the permission policy)."""
    tool.origin = origin
    return tool


def builtin_tools(workspace: Workspace) -> dict[str, AnyTool]:
    """The six built-in tools bound to ``workspace``, as ``Tool`` objects by name."""
    # Imported when a turn offers a built-in: a run without them never loads the tools.
    from ..tools.builtin import BUILTIN_TIMEOUTS, make_builtin_functions

    out: dict[str, AnyTool] = {}
    for name, fn in make_builtin_functions(workspace).items():
        out[name] = tag(Tool(fn, name=name, batchable=name in READ_ONLY_BUILTINS,
                             timeout=BUILTIN_TIMEOUTS.get(name)), "builtin")
    return out


def rebind_builtins(tools: Sequence[AnyTool], workspace: Workspace) -> list[AnyTool]:
    """``tools`` with every built-in replaced by the same built-in bound to ``workspace``."""
    fresh: dict[str, AnyTool] | None = None
    out: list[AnyTool] = []
    for t in tools:
        if getattr(t, "origin", "user") == "builtin":
            fresh = fresh or builtin_tools(workspace)
            out.append(fresh[t.name])
        else:
            out.append(t)
    return out


def _mcp_lookup(name: str) -> list[AnyTool] | None:
    try:
        from ..tools.mcp import find_mcp_tools
    except ImportError:  # the mcp package is an optional extra
        return None
    return find_mcp_tools(name)


def workspace_agent_specs() -> list[str]:
    """The tool names an agent with a workspace gets when it names none: the six built-ins,
    every tool of every connected MCP server, then the notebook's ``@tool`` functions (a
    ``@tool`` function that shares a built-in's name replaces it, as a named one does). The
    permission policy still asks before the risky ones run (docs/behaviour.md §10.5)."""
    try:
        from ..tools.mcp import mcp_tool_names
    except ImportError:  # the mcp package is an optional extra
        mcp: list[str] = []
    else:
        mcp = mcp_tool_names()
    return [*BUILTIN_TOOL_NAMES, *mcp, *REGISTRY.names()]


def _unknown(name: str) -> ToolError:
    from ..tools.mcp import mcp_tool_names

    user = ", ".join(REGISTRY.names()) or "none"
    mcp = ", ".join(mcp_tool_names()) or "none connected"
    return ToolError(f"Unknown tool {name!r}. Your @tool functions: {user}. Built-in: "
                     f"{', '.join(BUILTIN_TOOL_NAMES)}, {SPAWN_TOOL_NAME}. Notebook: "
                     f"{NOTEBOOK_SET_NAME} or {', '.join(NOTEBOOK_TOOL_NAMES)}. MCP: {mcp}.")


def resolve_tool_specs(specs: Sequence[object] | None, *, workspace: Callable[[], Workspace],
                       spawn: Callable[[], AnyTool] | None = None,
                       notebook: Callable[[], Sequence[AnyTool]] | None = None
                       ) -> list[AnyTool]:
    """The tools for ``specs`` (names, ``Tool`` objects or functions); ``None``: every ``@tool``.

    Args:
        specs: What the cell or the agent asked for.
        workspace: Called (once) when a built-in is named: the workspace to bind it to.
        spawn: Called when ``spawn_agent`` is named: builds that tool for this turn.
        notebook: Called (once) when a notebook tool or ``notebook`` is named: the notebook
            tools bound to this turn's shell. Without it those names are unknown.

    Raises:
        ToolError: a name matches nothing (the message lists what exists).
    """
    if specs is None:
        return REGISTRY.all()
    out: list[AnyTool] = []
    builtins: dict[str, AnyTool] | None = None
    notebook_set: dict[str, AnyTool] | None = None
    for spec in specs:
        if isinstance(spec, Tool):
            out.append(spec)
        elif isinstance(spec, str):
            name = spec.strip()
            user = REGISTRY.get(name)
            if user is not None:
                out.append(user)
            elif name in BUILTIN_TOOL_NAMES:
                builtins = builtins or builtin_tools(workspace())
                out.append(builtins[name])
            elif name == SPAWN_TOOL_NAME and spawn is not None:
                out.append(spawn())
            elif notebook is not None and (name == NOTEBOOK_SET_NAME
                                           or name in NOTEBOOK_TOOL_NAMES):
                if notebook_set is None:
                    notebook_set = {t.name: t for t in notebook()}
                if name == NOTEBOOK_SET_NAME:
                    out.extend(notebook_set.values())
                elif name in notebook_set:
                    out.append(notebook_set[name])
                else:  # run_python is left out when the variables are limited
                    raise ToolError(f"The notebook tool {name!r} is not offered here: the "
                                    "agent's notebook_variables limit what it may see, and "
                                    "code could read any variable.")
            else:
                found = _mcp_lookup(name)
                if not found:
                    raise _unknown(name)
                out.extend(found)
        elif callable(spec):
            out.append(Tool(spec))
        else:
            raise ToolError(f"Not a tool: {spec!r}")
    # The same name twice would confuse the model and the runner: the first one wins.
    seen: set[str] = set()
    unique = []
    for t in out:
        if t.name not in seen:
            seen.add(t.name)
            unique.append(t)
    return unique
