"""Glob matching that walks the workspace itself instead of calling ``glob.glob``.

``glob.glob`` follows symlinked folders during ``**``: one link to ``/`` would make it walk the
whole disk (or loop forever on a cycle) before we could filter the results. This walker only
enters a symlinked folder whose real location is inside the workspace, and enters each real
folder at most once.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Callable, Iterator

__all__ = ["walk_glob"]


def _inside(path: str, root: str) -> bool:
    return os.path.commonpath([path, root]) == root


def walk_glob(root: str, pattern: str, *, limit: int,
              hidden: Callable[[str], object] = lambda _p: None) -> tuple[list[str], bool]:
    """Relative POSIX paths under ``root`` matching ``pattern``, and whether ``limit`` was hit.

    ``pattern`` is split on "/"; a ``**`` segment matches zero or more folders. Names starting
    with "." match only a segment that starts with "." (as in the shell). Folders get a
    trailing "/".

    Args:
        root: Canonical absolute workspace root.
        pattern: Relative glob, already checked to contain no ".." and no leading "/".
        limit: Stop after this many matches.
        hidden: Truthy for a path no tool may see (``Boundary.why_hidden``): neither listed
            nor entered.
    """
    segments = [s for s in pattern.replace(os.sep, "/").split("/") if s not in ("", ".")]
    found: dict[str, None] = {}  # ordered set: ** patterns can reach a path twice
    visited = {root}
    for rel, is_dir in _match(root, root, (), segments, visited, hidden):
        found.setdefault("/".join(rel) + ("/" if is_dir else ""), None)
        if len(found) >= limit:
            return list(found), True
    return list(found), False


def _entries(root: str, folder: str, want_hidden: bool,
             hidden: Callable[[str], object]) -> Iterator[tuple[str, str, bool]]:
    """(name, path, is_dir) for the entries of ``folder`` that stay in the workspace."""
    try:
        with os.scandir(folder) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        if entry.name.startswith(".") and not want_hidden:
            continue
        path = entry.path
        try:
            is_dir = entry.is_dir()
            real = os.path.realpath(path) if entry.is_symlink() else path
            if entry.is_symlink() and not _inside(real, root):
                continue  # a link out of the workspace is neither listed nor followed
        except OSError:
            continue
        if hidden(path) or hidden(real):
            continue
        yield entry.name, path, is_dir


def _match(root: str, folder: str, rel: tuple[str, ...], segments: list[str],
           visited: set[str],
           hidden: Callable[[str], object]) -> Iterator[tuple[tuple[str, ...], bool]]:
    if not segments:
        return
    seg, rest = segments[0], segments[1:]
    if seg == "**":
        if rest:
            yield from _match(root, folder, rel, rest, visited, hidden)  # ** as zero folders
        for name, path, is_dir in _entries(root, folder, False, hidden):
            if not rest:
                yield rel + (name,), is_dir  # trailing ** lists everything below
            if is_dir:
                try:
                    real = os.path.realpath(path)
                except OSError:  # changed while we looked
                    continue
                if real in visited:
                    continue  # a symlink cycle, or a folder already reached another way
                visited.add(real)
                yield from _match(root, path, rel + (name,), segments, visited, hidden)
        return
    for name, path, is_dir in _entries(root, folder, seg.startswith("."), hidden):
        if not fnmatch.fnmatch(name, seg):
            continue
        if not rest:
            yield rel + (name,), is_dir
        elif is_dir:
            yield from _match(root, path, rel + (name,), rest, visited, hidden)
