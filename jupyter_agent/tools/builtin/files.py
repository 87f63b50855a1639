"""Built-in file tools: ``read_file``, ``write_file``, ``search_files``, ``glob_files``.

Each takes the :class:`Workspace` first; :func:`make_builtin_functions` binds it so the model
sees only the remaining parameters. Every path goes through ``Workspace.resolve``, and files are
read only through ``_safeopen`` (regular files, no symlink followed on the way). The search
lives in ``_search``.
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from jupyter_agent.base.errors import ToolError
from jupyter_agent.tools.builtin._globwalk import walk_glob
from jupyter_agent.tools.builtin._safeopen import (
    SNIFF_BYTES,
    looks_binary,
    open_folder,
    open_regular,
)
from jupyter_agent.tools.builtin._search import (  # re-exported: files.py is the public module
    LINE_MATCH_TIMEOUT,
    MAX_SEARCH_MATCHES,
    SEARCH_TIMEOUT,
    SKIPPED_DIRS,
    search_files,
)
from jupyter_agent.tools.builtin.cap import DEFAULT_LIMIT, cap_output
from jupyter_agent.tools.builtin.shadow import shadowed_by_write
from jupyter_agent.tools.builtin.workspace import Workspace, WorkspaceError

__all__ = [
    "LINE_MATCH_TIMEOUT",
    "MAX_GLOB_RESULTS",
    "MAX_SEARCH_MATCHES",
    "SEARCH_TIMEOUT",
    "SKIPPED_DIRS",
    "glob_files",
    "read_file",
    "search_files",
    "write_file",
]

MAX_GLOB_RESULTS = 500
"""At most this many paths come back from one glob."""
MAX_LINE_BYTES = 1_000_000
"""``read_file`` keeps at most this much of one line (the rest is skipped, not loaded)."""
COUNT_BUDGET_BYTES = 64_000_000
"""Past the lines it shows, ``read_file`` reads at most this much more to count lines."""
_GLOB_SCAN_LIMIT = 10_000
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_BY_FD = os.open in os.supports_dir_fd and os.rename in os.supports_dir_fd


def read_file(workspace: Workspace, path: str, offset: int = 0, limit: int | None = None) -> str:
    """Read a text file from the workspace.

    Args:
        workspace: The workspace the path is relative to.
        path: File path relative to the workspace.
        offset: Number of lines to skip from the start of the file.
        limit: Maximum number of lines to return (all remaining lines when omitted).

    Returns:
        The text; when not everything fits, a closing note says which lines were shown and
        which ``offset`` continues.
    """
    if offset < 0:
        raise ToolError("offset must be 0 or more.")
    if limit is not None and limit < 1:
        raise ToolError("limit must be 1 or more.")
    target = workspace.resolve(path)
    shown = workspace.relative(target)
    if target.is_dir():
        raise WorkspaceError(f"{shown!r} is a directory; use glob_files to list it.")
    if not os.path.lexists(target):
        raise WorkspaceError(f"File not found: {shown!r}.")
    # Opened without following a swapped symlink and refused unless it is a regular file: a
    # FIFO would block forever, /dev/zero would never end.
    with open(open_regular(workspace, target, shown), "rb") as raw:
        if looks_binary(raw.read(SNIFF_BYTES)):
            size = os.fstat(raw.fileno()).st_size
            raise WorkspaceError(
                f"{shown!r} looks like a binary file ({size:,} bytes); read_file only reads text."
            )
        raw.seek(0)
        lines, total, counted = _take_lines(raw, offset, limit)
    text = "".join(lines)
    if not lines:
        if total == 0:
            return f"({shown} is empty)"
        return f"(no lines: offset {offset} is past the end of {shown}, which has {total} lines)"
    last = offset + len(lines)
    # Only a single huge line can still exceed the cap here; cut it, but keep the note intact.
    text = cap_output(text, DEFAULT_LIMIT, head_ratio=1.0)
    if last < total or not counted:
        of = f"{total}" if counted else f"more than {total:,} (too long to count)"
        text += (
            f"\n[... showing lines {offset + 1}-{last} of {of}; "
            f"call read_file with offset={last} to read more]"
        )
    return text


def _take_lines(raw: BinaryIO, offset: int, limit: int | None) -> tuple[list[str], int, bool]:
    """The lines to show, the number of lines seen, and whether that is the whole file."""
    lines: list[str] = []
    used = 0
    total = 0
    stopped = False  # the character cap or ``limit`` ended what is shown
    budget_end = None  # byte position where counting gives up
    for total, line in enumerate(_decoded_lines(raw), start=1):
        index = total - 1
        if index < offset:
            continue
        if not stopped and (limit is None or len(lines) < limit) and \
                (used + len(line) <= DEFAULT_LIMIT or not lines):
            lines.append(line)
            used += len(line)
            continue
        if not stopped:
            stopped = True
            budget_end = raw.tell() + COUNT_BUDGET_BYTES
        elif budget_end is not None and raw.tell() > budget_end:
            return lines, total, False
    return lines, total, True


def _decoded_lines(raw: BinaryIO) -> Iterator[str]:
    """Lines of a binary file object, decoded as UTF-8 with bad bytes replaced.

    A line longer than :data:`MAX_LINE_BYTES` keeps its start; the rest is skipped unread into
    memory (a one-line file of gigabytes must not fill it).
    """
    while True:
        chunk = raw.readline(MAX_LINE_BYTES)
        if not chunk:
            return
        if not chunk.endswith(b"\n"):
            skipped = 0
            while (more := raw.readline(MAX_LINE_BYTES)) and not more.endswith(b"\n"):
                skipped += len(more)
            ended = more.endswith(b"\n")
            skipped += len(more) - ended
            if skipped:
                chunk += f" [... {skipped:,} more bytes of this line skipped]".encode()
            if ended:
                chunk += b"\n"
        yield chunk.decode("utf-8", "replace")


def write_file(workspace: Workspace, path: str, content: str) -> str:
    """Write a text file in the workspace atomically, creating parent folders as needed.

    The content goes to a temporary file in the same folder which then replaces the target,
    so a failure midway leaves the old file intact and no partial file behind.

    Args:
        workspace: The workspace the path is relative to.
        path: File path relative to the workspace.
        content: The complete new content of the file (UTF-8 text).
    """
    if not isinstance(content, str):
        raise ToolError(f"content must be text, not {type(content).__name__}.")
    workspace.check_writable()
    target = workspace.resolve(path)
    workspace.check_write(target)
    shown = workspace.relative(target)
    shadowed = shadowed_by_write(str(workspace.root), str(target))
    if shadowed:
        raise WorkspaceError(
            f"{shown!r} is refused: the kernel imports from this folder first, so it would "
            f"shadow the module {shadowed!r} and run in the kernel at its next import; use "
            "another name.")
    if target == workspace.root or target.is_dir():
        raise WorkspaceError(f"{shown!r} is a directory; give a file path.")
    # Everything happens relative to the parent folder opened without following a symlink: a
    # command running beside this call could swap a folder for a link to outside between the
    # check above and the write (docs/sandbox.md).
    if not _BY_FD:  # pragma: no cover - Windows: no dir_fd, paths as resolved
        return _write_by_path(target, shown, content)
    parent = open_folder(workspace, target.parent, shown)
    name = target.name
    tmp = f".{name}.{secrets.token_hex(4)}.tmp"
    try:
        try:
            old = os.stat(name, dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            old = None
        if old is not None and stat.S_ISDIR(old.st_mode):
            raise WorkspaceError(f"{shown!r} is a directory; give a file path.")
        existed = old is not None
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o600,
                     dir_fd=parent)
        try:
            with open(fd, "w", encoding="utf-8", newline="") as out:
                out.write(content)
                out.flush()
                mode = (old.st_mode & 0o7777) if old is not None and stat.S_ISREG(old.st_mode) \
                    else 0o644
                os.fchmod(out.fileno(), mode)
                os.fsync(out.fileno())
            os.rename(tmp, name, src_dir_fd=parent, dst_dir_fd=parent)  # replaces (POSIX)
        except BaseException:
            # Whatever went wrong (disk full, bad text, interrupt), the target is untouched.
            try:
                os.unlink(tmp, dir_fd=parent)
            except OSError:
                pass
            raise
    finally:
        os.close(parent)
    return _written(shown, content, existed)


def _written(shown: str, content: str, existed: bool) -> str:
    n_lines = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
    verb = "Overwrote" if existed else "Created"
    return f"{verb} {shown} ({len(content):,} characters, {n_lines:,} lines)."


def _write_by_path(target: Path, shown: str, content: str) -> str:  # pragma: no cover
    """``write_file`` where the system has no ``dir_fd`` (Windows): by path, as resolved."""
    import tempfile

    existed = target.exists()
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with open(fd, "w", encoding="utf-8", newline="") as out:
            out.write(content)
        os.chmod(tmp, (target.stat().st_mode & 0o7777) if existed else 0o644)
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return _written(shown, content, existed)


def glob_files(workspace: Workspace, pattern: str) -> str:
    """List workspace paths matching a glob pattern (``**`` matches any number of folders).

    Args:
        workspace: The workspace the pattern is relative to.
        pattern: Glob relative to the workspace, e.g. "**/*.py" or "data/*.csv".

    Returns:
        Matching paths relative to the workspace, sorted, one per line; folders end with "/".
    """
    workspace.check_root()
    if "\x00" in pattern:
        raise WorkspaceError("Pattern contains a NUL byte; it was refused.")
    if os.path.isabs(pattern) or pattern.startswith("~") or ".." in Path(pattern).parts:
        raise WorkspaceError(
            f"Glob pattern {pattern!r} must stay inside the workspace: use a relative pattern "
            "without '..', '~' or a leading '/'."
        )
    matches, hit_limit = walk_glob(str(workspace.root), pattern, limit=_GLOB_SCAN_LIMIT,
                                   hidden=workspace.boundary().why_hidden)
    if not matches:
        return f"No paths match {pattern!r}."
    matches.sort()
    out = "\n".join(matches[:MAX_GLOB_RESULTS])
    if hit_limit or len(matches) > MAX_GLOB_RESULTS:
        more = f"{len(matches) - MAX_GLOB_RESULTS:,}" if not hit_limit else "many"
        out += f"\n[... {more} more paths not shown; use a narrower pattern]"
    return cap_output(out, DEFAULT_LIMIT, head_ratio=1.0)
