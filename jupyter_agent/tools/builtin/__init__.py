"""Built-in workspace tools: ``bash``, ``read_file``, ``write_file``, ``web_fetch``,
``search_files`` and ``glob_files``.

Use :func:`make_builtin_functions` to get them bound to a :class:`Workspace`; the modules
``files``, ``shell`` and ``web`` hold the unbound implementations (workspace first).
"""

from __future__ import annotations

from jupyter_agent.tools.builtin._bound import (
    BUILTIN_TIMEOUTS,
    BUILTIN_TOOL_NAMES,
    make_builtin_functions,
)
from jupyter_agent.tools.builtin._bwrap import SANDBOX_ENV, SandboxStatus, sandbox_status
from jupyter_agent.tools.builtin._cap import cap_output
from jupyter_agent.tools.builtin.workspace import Workspace, WorkspaceError

__all__ = [
    "BUILTIN_TIMEOUTS",
    "BUILTIN_TOOL_NAMES",
    "SANDBOX_ENV",
    "SandboxStatus",
    "Workspace",
    "WorkspaceError",
    "cap_output",
    "make_builtin_functions",
    "sandbox_status",
]
