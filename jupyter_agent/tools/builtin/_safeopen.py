"""Opening a workspace file for reading without following a swapped symlink or blocking.

``Workspace.resolve`` checks a path, but the file system can change between that check and the
``open``: a component replaced by a symlink to ``/etc``, the file replaced by a FIFO (an
``open`` that waits forever for a writer) or a device (``/dev/zero`` never ends). So the path
is opened one component at a time from the workspace root, never following a symlink, the last
component without blocking, and the opened file itself is checked: only a regular file is
read.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from jupyter_agent.tools.builtin.workspace import Workspace, WorkspaceError

__all__ = ["SNIFF_BYTES", "looks_binary", "open_folder", "open_regular"]

SNIFF_BYTES = 8192
"""How much of a file's start decides whether it is text."""


def looks_binary(head: bytes) -> bool:
    """A NUL byte in the first few KB is the same test git and grep use."""
    return b"\x00" in head

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_NOCTTY = getattr(os, "O_NOCTTY", 0)
_BY_COMPONENT = os.open in os.supports_dir_fd and bool(_NOFOLLOW and _DIRECTORY)


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symlink")):
        if test(mode):
            return name
    return "not a regular file"


def _not_regular(shown: str, mode: int) -> WorkspaceError:
    return WorkspaceError(f"{shown!r} is {_kind(mode)}, not a regular file; it was not read.")


def _open_error(shown: str, exc: OSError) -> WorkspaceError:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
        return WorkspaceError(f"{shown!r} changed while it was being opened (a symlink "
                              "appeared on the way); it was not read.")
    if exc.errno == errno.ENOENT:
        return WorkspaceError(f"File not found: {shown!r}.")
    if exc.errno == errno.ENXIO:
        return WorkspaceError(f"{shown!r} is a socket, not a regular file; it was not read.")
    if exc.errno in (errno.EACCES, errno.EPERM):
        return WorkspaceError(f"Permission denied: {shown!r}.")
    return WorkspaceError(f"{shown!r} could not be opened: {exc.strerror or exc}.")


def open_regular(workspace: Workspace, real: Path, shown: str) -> int:
    """A read-only, blocking file descriptor for the regular file at ``real``.

    Args:
        workspace: The workspace ``real`` lies in.
        real: The canonical path :meth:`Workspace.resolve` returned.
        shown: The path as the model should read it in messages.

    Raises:
        WorkspaceError: ``real`` is not a regular file (a FIFO, device, socket, directory), no
            longer exists, or a symlink appeared on the way since it was resolved.
    """
    rel = Path(os.path.relpath(real, workspace.root))
    if rel.parts[:1] == ("..",) or rel.is_absolute():
        raise WorkspaceError(f"{shown!r} is outside the workspace; it was not read.")
    try:
        if _BY_COMPONENT and rel.parts and rel.parts != (".",):
            fd = _open_by_component(str(workspace.root), rel.parts, shown)
        else:  # no dir_fd support: the path as is, still without blocking
            _check_before(os.lstat(real).st_mode, shown)
            fd = os.open(real, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _NOCTTY | _CLOEXEC)
    except OSError as exc:
        raise _open_error(shown, exc) from None
    try:
        mode = os.fstat(fd).st_mode  # what was really opened, whatever happened meanwhile
        if not stat.S_ISREG(mode):
            raise _not_regular(shown, mode)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _check_before(mode: int, shown: str) -> None:
    # Refuse before opening: opening some devices has effects (a tape rewinds).
    if stat.S_ISLNK(mode):  # resolve() returned a symlink-free path: it was swapped since
        raise _open_error(shown, OSError(errno.ELOOP, "symlink"))
    if not stat.S_ISREG(mode):
        raise _not_regular(shown, mode)


def _open_by_component(root: str, parts: tuple[str, ...], shown: str) -> int:
    dir_fd = os.open(root, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    try:
        for part in parts[:-1]:
            nxt = os.open(part, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=dir_fd)
            os.close(dir_fd)
            dir_fd = nxt
        _check_before(os.stat(parts[-1], dir_fd=dir_fd, follow_symlinks=False).st_mode, shown)
        return os.open(parts[-1], os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _NOCTTY | _CLOEXEC,
                       dir_fd=dir_fd)
    finally:
        os.close(dir_fd)


def open_folder(workspace: Workspace, real: Path, shown: str) -> int:
    """A file descriptor of the folder ``real`` (inside the workspace), reached one component
    at a time from the root without following a symlink, missing folders created on the way.

    A writer works relative to it (``dir_fd``): a folder swapped for a symlink to outside
    between the check and the write (by a command running beside it) is refused, never
    followed.

    Raises:
        WorkspaceError: a component is (or became) a symlink or not a folder.
    """
    rel = Path(os.path.relpath(real, workspace.root))
    if rel.parts[:1] == ("..",) or rel.is_absolute():
        raise WorkspaceError(f"{shown!r} is outside the workspace; nothing was written.")
    flags = os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC
    try:
        fd = os.open(str(workspace.root), os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    except OSError as exc:
        raise _open_error(shown, exc) from None
    try:
        for part in rel.parts if rel.parts != (".",) else ():
            try:
                nxt = os.open(part, flags, dir_fd=fd)
            except FileNotFoundError:
                try:
                    os.mkdir(part, 0o777, dir_fd=fd)
                except FileExistsError:
                    pass
                nxt = os.open(part, flags, dir_fd=fd)
            os.close(fd)
            fd = nxt
    except OSError as exc:
        os.close(fd)
        raise _open_error(shown, exc) from None
    return fd
