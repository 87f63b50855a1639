"""The built-in ``search_files``: a regular expression over the workspace's text files, bounded.

Bounded in every way a hostile workspace or pattern could stretch it: at most
:data:`MAX_SEARCH_MATCHES` results, files over :data:`MAX_SEARCH_FILE_BYTES` skipped, only
regular files opened (``_safeopen``: a FIFO would block), :data:`SEARCH_TIMEOUT` seconds in
all and :data:`LINE_MATCH_TIMEOUT` seconds of regex time per line (docs/sandbox.md).
"""

from __future__ import annotations

import fnmatch
import os
import time
from collections.abc import Iterator
from pathlib import Path

import regex

from jupyter_agent.base.errors import ToolError
from jupyter_agent.tools.builtin._safeopen import SNIFF_BYTES, looks_binary, open_regular
from jupyter_agent.tools.builtin.cap import DEFAULT_LIMIT, cap_output
from jupyter_agent.tools.builtin.workspace import Workspace, WorkspaceError

__all__ = [
    "LINE_MATCH_TIMEOUT",
    "MAX_LINE_CHARS",
    "MAX_SEARCH_FILE_BYTES",
    "MAX_SEARCH_MATCHES",
    "SEARCH_TIMEOUT",
    "SKIPPED_DIRS",
    "search_files",
]

MAX_SEARCH_MATCHES = 200
"""At most this many ``path:line: text`` lines come back from one search."""
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
SKIPPED_DIRS = frozenset({
    ".git", ".hg", ".svn", "__pycache__", "node_modules", ".venv", "venv",
    ".ipynb_checkpoints", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox",
})
"""Folders ``search_files`` never walks into (tooling noise, never what the model wants)."""


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
    hidden = workspace.boundary().why_hidden
    for dirpath, dirnames, filenames in os.walk(start):  # does not follow symlinked folders
        dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS
                             and not hidden(os.path.join(dirpath, d)))
        for name in sorted(filenames):
            full = os.path.join(dirpath, name)
            try:
                real = os.path.realpath(full)
            except OSError:  # changed while we looked: skip it
                continue
            # A symlinked file may point anywhere; only follow it if it stays inside.
            if os.path.commonpath([real, root]) != root or not os.path.isfile(real):
                continue
            if hidden(full) or hidden(real):
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
                    looks_binary(raw.read(SNIFF_BYTES)):
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
