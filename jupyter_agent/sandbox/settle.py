"""Applying an upper layer to the workspace, holding what takes effect outside.

The upper layer is walked top down (its size is what changed, never the workspace). Each
entry is judged on the final state (``classes``): held ones move, unchanged, into a held layer;
the rest move into the workspace, by rename when on the same file system. Whatever they
replace moves aside first into the command's undo folder.

Workspace paths are reached one component at a time from the root with ``O_NOFOLLOW``: a
folder of the workspace replaced by a symlink (by a person, or a process outside) is never
followed, and the change under it is held instead of written elsewhere.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Literal

from .classes import Classifier
from .layers import is_incomplete, is_opaque, is_whiteout
from .ledger import Entry, Record

__all__ = ["UNDO_LIMIT", "Settler", "ws_dir", "ws_lstat", "ws_remove"]

UNDO_LIMIT = 256 * 1024 * 1024
"""Bytes of previous versions copied (not renamed) for Undo per command: the bound that
applies when the private folder is on another file system than the workspace."""
_LOWER_BUDGET = 20000
"""Entries of a replaced or removed workspace folder looked through for a class; beyond it
the change is held (it is a change of that size: the cost still follows what changed)."""
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@contextmanager
def ws_dir(root: str, rel_dir: str, *, create: bool = False) -> Iterator[int]:
    """A descriptor of the workspace folder ``rel_dir``, opened component by component
    without following a symlink (``OSError`` ELOOP/ENOTDIR when one is on the way)."""
    fd = os.open(root, _DIR_FLAGS)
    try:
        for comp in [p for p in rel_dir.split("/") if p and p != "."]:
            try:
                nxt = os.open(comp, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                os.mkdir(comp, 0o755, dir_fd=fd)
                nxt = os.open(comp, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = nxt
        yield fd
    finally:
        os.close(fd)


def ws_lstat(root: str, rel: str) -> os.stat_result | None:
    """The ``lstat`` of a workspace path, reached without following symlinks; None if absent
    or not reachable."""
    parent, name = _split(rel)
    try:
        with ws_dir(root, parent) as fd:
            return os.lstat(name, dir_fd=fd)
    except OSError:
        return None


def ws_remove(fd: int, name: str) -> None:
    """Remove ``name`` in the folder ``fd`` (a whole tree for a folder, no symlink followed)."""
    st = os.lstat(name, dir_fd=fd)
    if stat.S_ISDIR(st.st_mode):
        # rmtree never follows a symlink; ``dir_fd`` needs 3.11, so the descriptor's path
        shutil.rmtree(f"/proc/self/fd/{fd}/{name}")
    else:
        os.unlink(name, dir_fd=fd)


def _split(rel: str) -> tuple[str, str]:
    parent, _, name = rel.rpartition("/")
    return parent or ".", name


def _size(path: str) -> int:
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode):
        return st.st_size
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for n in files:
            try:
                total += os.lstat(os.path.join(dirpath, n)).st_size
            except OSError:
                pass
    return total


def _move_out(src_fd: int, name: str, dst: str) -> None:
    """Move workspace entry ``name`` to the private path ``dst`` (a copy across devices)."""
    try:
        os.rename(name, dst, src_dir_fd=src_fd)
        return
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
    src = f"/proc/self/fd/{src_fd}/{name}"
    if os.path.isdir(src) and not os.path.islink(src):
        shutil.copytree(src, dst, symlinks=True)
    else:
        shutil.copy2(src, dst, follow_symlinks=False)
    ws_remove(src_fd, name)


def _move_in(src: str, dst_fd: int, name: str) -> None:
    """Move the private entry ``src`` into the workspace folder ``dst_fd`` as ``name``."""
    try:
        os.rename(src, name, dst_dir_fd=dst_fd)
        return
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
    st = os.lstat(src)
    if stat.S_ISLNK(st.st_mode):
        os.symlink(os.readlink(src), name, dir_fd=dst_fd)
    elif stat.S_ISDIR(st.st_mode):
        os.mkdir(name, stat.S_IMODE(st.st_mode), dir_fd=dst_fd)
        for child in sorted(os.listdir(src)):
            with ws_child(dst_fd, name) as sub:
                _move_in(os.path.join(src, child), sub, child)
    else:
        out = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                      stat.S_IMODE(st.st_mode), dir_fd=dst_fd)
        with open(src, "rb") as f, os.fdopen(out, "wb") as g:
            shutil.copyfileobj(f, g)
    shutil.rmtree(src) if stat.S_ISDIR(st.st_mode) else os.unlink(src)


@contextmanager
def ws_child(fd: int, name: str) -> Iterator[int]:
    """The folder ``name`` inside ``fd``, not following a symlink."""
    sub = os.open(name, _DIR_FLAGS, dir_fd=fd)
    try:
        yield sub
    finally:
        os.close(sub)


def _after(fd: int, name: str) -> tuple[int, int, int]:
    st = os.lstat(name, dir_fd=fd)
    if stat.S_ISREG(st.st_mode) and st.st_mode & 0o6000:
        # a setuid file made in the sandbox would be the host's (root's, for a root kernel)
        os.chmod(f"/proc/self/fd/{fd}/{name}", stat.S_IMODE(st.st_mode) & ~0o6000)
        st = os.lstat(name, dir_fd=fd)
    size = 0 if stat.S_ISDIR(st.st_mode) else st.st_size
    mtime = 0 if stat.S_ISDIR(st.st_mode) else st.st_mtime_ns
    return (st.st_ino, mtime, size)


@dataclass
class Settler:
    """Settles one upper layer: ``upper`` (private), the workspace ``root``, the command's
    ``held_dir`` and ``undo_dir`` (private, created on first use)."""

    upper: str
    root: str
    classifier: Classifier | None
    """None applies everything (a person's Keep)."""
    held_dir: str
    undo_dir: str
    record: Record
    _undo_budget: int = UNDO_LIMIT
    _visited: int = field(default=0)

    def run(self) -> Record:
        """Walk the upper layer; return the record (entries in apply order)."""
        if self.classifier is not None:
            why = self.classifier.folder_reason(".")
            if why:  # the workspace itself is an environment or a git folder
                for name in sorted(os.listdir(self.upper)):
                    self._hold(name, why)
                return self.record
        self._walk(".")
        return self.record

    def _why(self, rel: str, st: os.stat_result) -> str | None:
        c = self.classifier
        if c is None:
            return None
        if is_incomplete(os.path.join(self.upper, rel)):
            return "an overlay entry whose content is not in the upper folder"
        gone = is_whiteout(st)
        why = c.name_reason(rel, is_link=stat.S_ISLNK(st.st_mode), removed=gone,
                            is_dir=gone and self._was_dir(rel))
        if why is None and stat.S_ISDIR(st.st_mode):
            why = c.folder_reason(rel)
        if why is None and gone and self._was_dir(rel):
            why = Classifier(c.layers[1:], c.imports, c.agent, c.programs).folder_reason(rel)
        return why

    def _replaces(self, rel: str, up: str, st: os.stat_result) -> bool:
        """Whether this entry replaces or removes a folder of the workspace as a whole, or
        is a new folder right in an import folder (a package, even a namespace one)."""
        old = ws_lstat(self.root, rel)
        if stat.S_ISDIR(st.st_mode):
            if old is None:
                return self._top_of_import(rel)
            return not stat.S_ISDIR(old.st_mode) or is_opaque(up)
        return old is not None and stat.S_ISDIR(old.st_mode)

    def _top_of_import(self, rel: str) -> bool:
        c = self.classifier
        assert c is not None
        parent, name = _split(rel)
        return name.isidentifier() and parent in c.imports

    def _inner_reason(self, rel: str, st: os.stat_result) -> str | None:
        """The first class found inside the folder ``rel``: in what the command left (the
        upper layer) and in what it replaces (the workspace's folder)."""
        c = self.classifier
        assert c is not None
        if stat.S_ISDIR(st.st_mode):
            for dirpath, dirs, files in os.walk(os.path.join(self.upper, rel)):
                sub = os.path.relpath(dirpath, self.upper)
                if sub != rel and (why := c.folder_reason(sub)):
                    return why
                for n in [*dirs, *files]:
                    path = os.path.join(dirpath, n)
                    est = os.lstat(path)
                    why = c.name_reason(f"{sub}/{n}", is_link=stat.S_ISLNK(est.st_mode),
                                        removed=is_whiteout(est))
                    if why:
                        return why
            if self._top_of_import(rel) and ws_lstat(self.root, rel) is None:
                return None  # a new folder without modules: data, not a package
        below = Classifier(c.layers[-1:], c.imports, c.agent, c.programs)
        seen = 0
        for dirpath, dirs, files in os.walk(os.path.join(self.root, rel)):
            sub = os.path.relpath(dirpath, self.root)
            if sub != rel and (why := below.folder_reason(sub)):
                return why
            for n in [*dirs, *files]:
                seen += 1
                if seen > _LOWER_BUDGET:
                    return f"too large to check (over {_LOWER_BUDGET} entries)"
                if why := below.name_reason(f"{sub}/{n}"):
                    return why
        return None

    def _plain_tree(self, up: str, rel: str) -> int | None:
        """The number of entries in the new upper folder ``up`` when none is held, special or
        incomplete (setuid bits cleared on the way), else None."""
        c = self.classifier
        assert c is not None
        if c.name_reason(rel) or c.folder_reason(rel) or is_incomplete(up):
            return None
        count = 0
        for dirpath, dirs, files in os.walk(up):
            sub = os.path.relpath(dirpath, self.upper)
            if sub != rel and c.folder_reason(sub):
                return None
            for n in [*dirs, *files]:
                path = os.path.join(dirpath, n)
                est = os.lstat(path)
                mode = est.st_mode
                if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)) \
                        or is_incomplete(path) or (stat.S_ISDIR(mode) and is_opaque(path)) \
                        or c.name_reason(f"{sub}/{n}", is_link=stat.S_ISLNK(mode)):
                    return None
                if stat.S_ISREG(mode) and mode & 0o6000:
                    os.chmod(path, stat.S_IMODE(mode) & ~0o6000)
                count += 1
        return count

    def _was_dir(self, rel: str) -> bool:
        st = ws_lstat(self.root, rel)
        return st is not None and stat.S_ISDIR(st.st_mode)

    def _walk(self, rel_dir: str) -> None:
        base = os.path.join(self.upper, rel_dir)
        for name in sorted(os.listdir(base)):
            rel = name if rel_dir == "." else f"{rel_dir}/{name}"
            up = os.path.join(self.upper, rel)
            st = os.lstat(up)
            why = self._why(rel, st)
            if why is None and self.classifier is not None and self._replaces(rel, up, st):
                # a folder replaced or removed as a whole: held as a whole when anything in
                # it, before or after, is in a class (its old content must stay in place)
                why = self._inner_reason(rel, st)
            if why is not None:
                self._hold(rel, why)
                continue
            try:
                self._apply(rel, up, st)
            except OSError as exc:
                # a workspace folder became a symlink or vanished: never write through it
                self._hold(rel, f"not applied: {exc.strerror or exc}")

    def _keep_prev(self, fd: int, name: str, rel: str) -> bool:
        """Move the workspace's ``name`` aside for Undo; False when it was too large."""
        dst = os.path.join(self.undo_dir, rel)
        os.makedirs(os.path.dirname(dst), mode=0o700, exist_ok=True)
        try:
            os.rename(name, dst, src_dir_fd=fd)
            return True
        except OSError as exc:
            if exc.errno != errno.EXDEV:
                raise
        size = _size(f"/proc/self/fd/{fd}/{name}")
        if size > self._undo_budget:
            self.record.undo_note = (f"previous versions larger than {UNDO_LIMIT // 2**20} MB "
                                     "were not kept: Undo cannot restore them")
            ws_remove(fd, name)
            return False
        self._undo_budget -= size
        _move_out(fd, name, dst)
        return True

    def _apply(self, rel: str, up: str, st: os.stat_result) -> None:
        parent, name = _split(rel)
        with ws_dir(self.root, parent) as fd:
            try:
                old: os.stat_result | None = os.lstat(name, dir_fd=fd)
            except FileNotFoundError:
                old = None
            if is_whiteout(st):
                if old is not None:
                    prev = self._keep_prev(fd, name, rel)
                    self.record.applied.append(Entry(path=rel, kind="removed", prev=prev,
                                                     is_dir=stat.S_ISDIR(old.st_mode)))
                return
            if stat.S_ISDIR(st.st_mode) and old is None and self.classifier is not None:
                count = self._plain_tree(up, rel)
                if count is not None:  # a new folder with nothing held inside: one rename
                    _move_in(up, fd, name)
                    self.record.applied.append(Entry(
                        path=rel, kind="added", is_dir=True, tree=True, files=count,
                        after=_after(fd, name), applied_ns=time.time_ns()))
                    return
            if stat.S_ISDIR(st.st_mode):
                same = old is not None and stat.S_ISDIR(old.st_mode) and not is_opaque(up)
                if not same:
                    prev = old is not None and self._keep_prev(fd, name, rel)
                    os.mkdir(name, stat.S_IMODE(st.st_mode) & 0o1777, dir_fd=fd)
                    self.record.applied.append(Entry(
                        path=rel, kind="changed" if old is not None else "added", prev=prev,
                        is_dir=True, after=_after(fd, name)))
                self._walk(rel)
                return
            if not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
                self.record.skipped.append(rel)
                return
            prev = old is not None and self._keep_prev(fd, name, rel)
            _move_in(up, fd, name)
            self.record.applied.append(Entry(
                path=rel, kind="changed" if old is not None else "added", prev=prev,
                after=_after(fd, name)))

    def _hold(self, rel: str, why: str) -> None:
        src = os.path.join(self.upper, rel)
        dst = os.path.join(self.held_dir, rel)
        os.makedirs(os.path.dirname(dst), mode=0o700, exist_ok=True)
        os.rename(src, dst)
        st = os.lstat(dst)
        old = ws_lstat(self.root, rel)
        kind: Literal["added", "changed", "removed"] = (
            "removed" if is_whiteout(st) else ("changed" if old is not None else "added"))
        self.record.held.append(Entry(path=rel, kind=kind, reason=why,
                                      is_dir=stat.S_ISDIR(st.st_mode)))
