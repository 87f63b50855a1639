"""Built-in file tools: ``read_file``, ``write_file``, ``search_files``, ``glob_files``.

Each takes the :class:`Workspace` first; :func:`make_builtin_functions` binds it so the model
sees only the remaining parameters. Every path goes through ``Workspace.resolve``.
"""

from __future__ import annotations

import fnmatch
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import regex

from jupyter_agent.errors import ToolError
from jupyter_agent.tools.builtin._cap import DEFAULT_LIMIT, cap_output
from jupyter_agent.tools.builtin._globwalk import walk_glob
from jupyter_agent.tools.builtin._safeopen import open_regular
from jupyter_agent.tools.builtin.workspace import Workspace, WorkspaceError

__all__ = [
    "MAX_GLOB_RESULTS",
    "MAX_SEARCH_MATCHES",
    "LINE_MATCH_TIMEOUT",
    "SEARCH_TIMEOUT",
    "SKIPPED_DIRS",
    "glob_files",
    "read_file",
    "search_files",
    "write_file",
]

MAX_SEARCH_MATCHES = 200
"""At most this many ``path:line: text`` lines come back from one search."""
MAX_GLOB_RESULTS = 500
"""At most this many paths come back from one glob."""
MAX_LINE_CHARS = 300
"""A matching line longer than this is shortened in search results."""
MAX_SEARCH_FILE_BYTES = 10_000_000
"""Files larger than this are skipped by ``search_files``."""
SEARCH_TIMEOUT = 15.0
"""Seconds one ``search_files`` call may spend walking and matching."""
LINE_MATCH_TIMEOUT = 1.0
"""Seconds the regex engine may spend on one line, so a catastrophic pattern (``(a|aa)+$`` on
a long run of ``a``) stops with a clear message instead of hanging. The engine counts CPU
time, which on a busy machine is less than the time that passes."""
MAX_LINE_BYTES = 1_000_000
"""``read_file`` keeps at most this much of one line (the rest is skipped, not loaded)."""
COUNT_BUDGET_BYTES = 64_000_000
"""Past the lines it shows, ``read_file`` reads at most this much more to count lines."""
_GLOB_SCAN_LIMIT = 10_000
SKIPPED_DIRS = frozenset({
    ".git", ".hg", ".svn", "__pycache__", "node_modules", ".venv", "venv",
    ".ipynb_checkpoints", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox",
})
"""Folders ``search_files`` never walks into (tooling noise, never what the model wants)."""

_SNIFF_BYTES = 8192


def _looks_binary(head: bytes) -> bool:
    """A NUL byte in the first few KB is the same test git and grep use."""
    return b"\x00" in head


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
        if _looks_binary(raw.read(_SNIFF_BYTES)):
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
    shown = workspace.relative(target)
    if target == workspace.root or target.is_dir():
        raise WorkspaceError(f"{shown!r} is a directory; give a file path.")
    existed = target.exists()
    # The parent was already checked by resolve(): it is the real, in-workspace location.
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with open(fd, "w", encoding="utf-8", newline="") as out:
            out.write(content)
            out.flush()
            os.fsync(out.fileno())
        mode = (target.stat().st_mode & 0o7777) if existed else 0o644
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        # Whatever went wrong (disk full, bad text, interrupt), the target is untouched.
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    n_lines = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
    verb = "Overwrote" if existed else "Created"
    return f"{verb} {shown} ({len(content):,} characters, {n_lines:,} lines)."


def search_files(workspace: Workspace, pattern: str, path: str = ".",
                 glob: str | None = None) -> str:
    """Search file contents in the workspace with a regular expression.

    Args:
        workspace: The workspace the path is relative to.
        pattern: Python regular expression searched for in every line.
        path: File or folder to search, relative to the workspace.
        glob: Only search files whose name or relative path matches this glob (e.g. "*.py").

    Returns:
        One ``path:line: text`` line per match (at most MAX_SEARCH_MATCHES), or a note that
        nothing matched.
    """
    try:
        compiled = regex.compile(pattern)
    except (regex.error, OverflowError, RecursionError) as exc:
        raise ToolError(f"Invalid regular expression {pattern!r}: {exc}") from None
    start = workspace.resolve(path)
    if not start.exists():
        raise WorkspaceError(f"Path not found: {workspace.relative(start)!r}.")
    results: list[str] = []
    more = False
    deadline = time.monotonic() + SEARCH_TIMEOUT
    try:
        for file in _walk_files(workspace, start):
            rel = workspace.relative(file)
            if glob and not (fnmatch.fnmatch(file.name, glob) or fnmatch.fnmatch(rel, glob)):
                continue
            for number, text in _search_one(workspace, file, compiled, deadline):
                if len(results) >= MAX_SEARCH_MATCHES:
                    more = True
                    break
                if len(text) > MAX_LINE_CHARS:
                    text = text[:MAX_LINE_CHARS] + " [...]"
                results.append(f"{rel}:{number}: {text}")
            if more:
                break
            if time.monotonic() > deadline:
                raise _SearchTimeout(rel, None)
    except _SearchTimeout as stop:
        if stop.line is not None:
            why = (f"the pattern is too slow on line {stop.line} of {stop.rel} (nested repeats "
                   "such as (a+)+ can backtrack without end); simplify the pattern")
        else:
            why = f"time ran out at {stop.rel}; narrow the path, the glob or the pattern"
        note = f"[search stopped: {why}]"
        if not results:
            raise ToolError(f"No match found before the search stopped. {note}") from None
        return cap_output("\n".join(results), DEFAULT_LIMIT - 400, head_ratio=1.0) + "\n" + note
    if not results:
        where = workspace.relative(start)
        return f"No matches for {pattern!r} in {where}" + (f" (files matching {glob!r})" if glob
                                                             else "") + "."
    out = "\n".join(results)
    if more:
        out += (f"\n[... more than {MAX_SEARCH_MATCHES} matches; "
                "narrow the pattern, the path or the glob]")
    return cap_output(out, DEFAULT_LIMIT, head_ratio=1.0)


class _SearchTimeout(Exception):
    """The search's time budget ran out: in the regex engine on ``line``, or between files."""

    def __init__(self, rel: str, line: int | None) -> None:
        super().__init__(rel)
        self.rel = rel
        self.line = line


def _walk_files(workspace: Workspace, start: Path) -> Iterator[Path]:
    """Text-candidate files under ``start`` in sorted order, never leaving the workspace."""
    if start.is_file():
        yield start
        return
    root = str(workspace.root)
    for dirpath, dirnames, filenames in os.walk(start):  # does not follow symlinked folders
        dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS)
        for name in sorted(filenames):
            full = os.path.join(dirpath, name)
            try:
                real = os.path.realpath(full)
            except OSError:  # changed while we looked: skip it
                continue
            # A symlinked file may point anywhere; only follow it if it stays inside.
            if os.path.commonpath([real, root]) != root or not os.path.isfile(real):
                continue
            yield Path(full)


def _search_one(workspace: Workspace, file: Path, compiled: regex.Pattern[str],
                deadline: float) -> Iterator[tuple[int, str]]:
    """(line number, line) for each matching line of a text file; binary files, and files that
    are not regular or changed into a link since the walk, yield nothing.

    Raises:
        _SearchTimeout: the deadline passed, in the regex engine or between lines.
    """
    rel = workspace.relative(file)
    try:
        fd = open_regular(workspace, Path(os.path.realpath(file)), rel)
    except (WorkspaceError, OSError):  # not a regular file (any more), or gone
        return
    with open(fd, "rb") as raw:
        try:
            if os.fstat(fd).st_size > MAX_SEARCH_FILE_BYTES or \
                    _looks_binary(raw.read(_SNIFF_BYTES)):
                return
            raw.seek(0)
            lines = enumerate(raw, start=1)
            for number, line in lines:
                text = line.decode("utf-8", "replace").rstrip("\r\n")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise _SearchTimeout(rel, None)
                try:
                    found = compiled.search(text, timeout=min(left, LINE_MATCH_TIMEOUT))
                except TimeoutError:
                    raise _SearchTimeout(rel, number) from None
                if found:
                    yield number, text
        except OSError:
            return  # unreadable file: skip it rather than fail the whole search


def glob_files(workspace: Workspace, pattern: str) -> str:
    """List workspace paths matching a glob pattern (``**`` matches any number of folders).

    Args:
        workspace: The workspace the pattern is relative to.
        pattern: Glob relative to the workspace, e.g. "**/*.py" or "data/*.csv".

    Returns:
        Matching paths relative to the workspace, sorted, one per line; folders end with "/".
    """
    if "\x00" in pattern:
        raise WorkspaceError("Pattern contains a NUL byte; it was refused.")
    if os.path.isabs(pattern) or pattern.startswith("~") or ".." in Path(pattern).parts:
        raise WorkspaceError(
            f"Glob pattern {pattern!r} must stay inside the workspace: use a relative pattern "
            "without '..', '~' or a leading '/'."
        )
    matches, hit_limit = walk_glob(str(workspace.root), pattern, limit=_GLOB_SCAN_LIMIT)
    if not matches:
        return f"No paths match {pattern!r}."
    matches.sort()
    out = "\n".join(matches[:MAX_GLOB_RESULTS])
    if hit_limit or len(matches) > MAX_GLOB_RESULTS:
        more = f"{len(matches) - MAX_GLOB_RESULTS:,}" if not hit_limit else "many"
        out += f"\n[... {more} more paths not shown; use a narrower pattern]"
    return cap_output(out, DEFAULT_LIMIT, head_ratio=1.0)
