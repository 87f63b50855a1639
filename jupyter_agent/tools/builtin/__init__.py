"""Built-in workspace tools: ``bash``, ``read_file``, ``write_file``, ``web_fetch``,
``search_files`` and ``glob_files``.

Use :func:`make_builtin_functions` to get them bound to a :class:`Workspace`; the modules
``files``, ``shell`` and ``web`` hold the unbound implementations (workspace first).

Importing this package loads none of its modules (PEP 562): a turn builds the tools only
when it offers them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...base.lazy import lazy_exports

if TYPE_CHECKING:
    from jupyter_agent.sandbox.bwrap import SANDBOX_ENV, SandboxStatus, sandbox_status

    from ._bound import BUILTIN_TIMEOUTS, make_builtin_functions
    from ._safeopen import SNIFF_BYTES, looks_binary, open_regular
    from .cap import cap_output
    from .names import BUILTIN_TOOL_NAMES
    from .workspace import Workspace, WorkspaceError

__all__ = [
    "BUILTIN_TIMEOUTS",
    "BUILTIN_TOOL_NAMES",
    "SANDBOX_ENV",
    "SNIFF_BYTES",
    "SandboxStatus",
    "Workspace",
    "WorkspaceError",
    "cap_output",
    "looks_binary",
    "make_builtin_functions",
    "open_regular",
    "sandbox_status",
]

_LAZY: dict[str, str | tuple[str, str | None]] = {
    "BUILTIN_TIMEOUTS": "_bound",
    "BUILTIN_TOOL_NAMES": "names",
    "make_builtin_functions": "_bound",
    "SANDBOX_ENV": ("jupyter_agent.sandbox.bwrap", "SANDBOX_ENV"),
    "SandboxStatus": ("jupyter_agent.sandbox.bwrap", "SandboxStatus"),
    "sandbox_status": ("jupyter_agent.sandbox.bwrap", "sandbox_status"),
    "cap_output": "cap",
    "SNIFF_BYTES": "_safeopen",
    "looks_binary": "_safeopen",
    "open_regular": "_safeopen",
    "Workspace": "workspace",
    "WorkspaceError": "workspace",
}

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
