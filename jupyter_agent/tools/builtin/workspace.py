"""The workspace: the one folder the built-in file tools may touch.

Every path a model passes to a file tool goes through :meth:`Workspace.resolve`, which refuses
anything that would land outside the root: ``..`` escapes, absolute paths elsewhere, ``~``,
NUL bytes, and symlinks (at any component) that point out of the workspace; and what the
sandbox hides inside it (``jupyter_agent.sandbox.boundary``: the home folder's dotfiles, the store, Jupyter and
IPython configuration). :meth:`Workspace.check_write` refuses what stays read-only (Python
packages, git hooks and config, cassettes).
"""

from __future__ import annotations

import os
from pathlib import Path

from jupyter_agent.base.errors import ConfigError, ToolError
from jupyter_agent.sandbox.boundary import Boundary, boundary_for, system_workspace_reason

__all__ = ["Workspace", "WorkspaceError"]


class WorkspaceError(ToolError):
    """A tool was asked to touch a path it may not (outside the workspace, read-only, ...).

    Raised inside a tool call, so the tool layer turns it into the tool result the model sees.
    """


def _is_within(path: str, root: str) -> bool:
    """True when ``path`` is ``root`` or lies below it (both absolute and normalised)."""
    try:
        return os.path.commonpath([path, root]) == root
    except ValueError:  # different drives on Windows
        return False


class Workspace:
    """A folder that confines the built-in file tools.

    Args:
        root: The workspace folder. It must exist unless ``create`` is true.
        read_only: When true, :func:`write_file` refuses every write (``bash`` cannot be
            confined this way; the permission policy denies it instead).
        create: Create ``root`` (and its parents) if it does not exist.
        allow_network: ``bash`` keeps network access inside its sandbox (cut off by default;
            see docs/sandbox.md). Without the sandbox bash always has the network.
    """

    def __init__(self, root: str | os.PathLike[str], *, read_only: bool = False,
                 create: bool = False, allow_network: bool = False) -> None:
        raw = os.path.expanduser(os.fspath(root))  # the *user* may write "~/proj"; models may not
        if create:
            os.makedirs(raw, exist_ok=True)
        if not os.path.isdir(raw):
            raise ConfigError(f"Workspace folder does not exist: {raw}")
        # realpath once: every later check compares canonical paths with canonical paths.
        self.root = Path(os.path.realpath(raw))
        self.read_only = read_only
        self.allow_network = allow_network

    def __repr__(self) -> str:
        flag = ", read_only=True" if self.read_only else ""
        if self.allow_network:
            flag += ", allow_network=True"
        return f"Workspace({str(self.root)!r}{flag})"

    def resolve(self, path: str | os.PathLike[str]) -> Path:
        """The canonical absolute path of ``path`` (relative to the root), if it is inside.

        Symlinks are resolved, so the returned path is where a read or write really lands.

        Raises:
            WorkspaceError: ``path`` is empty of meaning (NUL bytes), starts with ``~``, or
                resolves (lexically or through symlinks) to somewhere outside the workspace.
        """
        text = os.fspath(path)
        if not isinstance(text, str):
            raise WorkspaceError(f"Path must be text, not {type(text).__name__}.")
        if "\x00" in text:
            raise WorkspaceError("Path contains a NUL byte; it was refused.")
        if text.startswith("~"):
            raise WorkspaceError(
                f"Path {text!r} starts with '~': home directories are not expanded. "
                "Use a path relative to the workspace."
            )
        self.check_root()
        root = str(self.root)
        # Lexical check first: "a/../../x" is refused even if the filesystem would disagree.
        lexical = os.path.normpath(os.path.join(root, text))
        if not _is_within(lexical, root):
            raise WorkspaceError(self._outside_message(text))
        # Then the real location, through every symlink, including a dangling last component.
        try:
            real = os.path.realpath(lexical)
        except OSError:  # a component changed (or vanished) while it was being followed
            raise WorkspaceError(
                f"Path {text!r} changed while it was being resolved; it was refused."
            ) from None
        if not _is_within(real, root):
            raise WorkspaceError(
                f"Path {text!r} leads through a symlink to outside the workspace; it was refused."
            )
        b = self.boundary()
        why = b.why_hidden(lexical) or b.why_hidden(real)
        if why:
            raise WorkspaceError(f"Path {text!r} is hidden from tools: {why}.")
        return Path(real)

    def check_root(self) -> None:
        """Raise :class:`WorkspaceError` when the root is ``/`` or a system folder: no tool
        works there (``bash`` would get ``/sys``, ``/var`` and ``/boot`` read-write)."""
        why = system_workspace_reason(str(self.root))
        if why:
            raise WorkspaceError(f"Refused: {why}.")

    def boundary(self) -> Boundary:
        """What inside the workspace is hidden or read-only now (the list ``bash`` obeys)."""
        return boundary_for(self.root)

    def check_write(self, real: Path) -> None:
        """Raise :class:`WorkspaceError` when ``real`` (from :meth:`resolve`) may not be
        written: the workspace is read-only, or the path is one that stays read-only."""
        self.check_writable()
        why = self.boundary().why_read_only(str(real))
        if why:
            raise WorkspaceError(f"{self.relative(real)!r} is read-only: {why}; nothing was "
                                 "written.")

    def relative(self, path: str | os.PathLike[str]) -> str:
        """``path`` (absolute, inside the workspace) as a POSIX path relative to the root."""
        rel = os.path.relpath(os.fspath(path), str(self.root))
        return Path(rel).as_posix()

    def check_writable(self) -> None:
        """Raise :class:`WorkspaceError` when the workspace is read-only."""
        if self.read_only:
            raise WorkspaceError("The workspace is read-only; nothing was written.")

    def _outside_message(self, text: str) -> str:
        if os.path.isabs(text):
            return (
                f"Absolute path {text!r} is outside the workspace; "
                "use a path relative to the workspace."
            )
        return f"Path {text!r} escapes the workspace with '..'; it was refused."
