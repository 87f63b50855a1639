"""Modules planted in the kernel's import path: a ``pandas.py`` the kernel would import.

The kernel imports from its working folder first (IPython puts ``''`` at the front of
``sys.path``), and that folder is usually the workspace. A command in the sandbox may write
there, so a new ``jupyter_agent.py``, ``pandas.py`` or ``json/__init__.py`` would run in the
kernel, unsandboxed and with the key, at the next ``import`` (the next cell, or
``%load_ext jupyter_agent`` at the next kernel start). A mount cannot cover a name that does not
exist yet, so the folders are compared before and after each ``bash`` call: a new module there
whose name is also importable from elsewhere (the standard library, an installed package) is
renamed to ``NAME.blocked`` and the tool result says so; ``write_file`` refuses such a name.
A module of the workspace's own that shadows nothing (``import helpers``) is left alone.
"""

from __future__ import annotations

import importlib.machinery
import os
import sys
from collections.abc import Iterable

__all__ = ["ImportFolders", "shadowed_by_write", "shadowing_name"]

_SUFFIXES = tuple(importlib.machinery.all_suffixes())  # .py, .pyc, .cpython-311-x86_64.so ...
BLOCKED_SUFFIX = ".blocked"
# Names a model often gives a script, whose installed namesakes (CPython's own regression
# tests) no library imports: shadowing them runs nothing unasked.
_NEVER_IMPORTED = frozenset({"test", "tests"})


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _import_folders(root: str) -> list[str]:
    """The kernel's import folders that lie in the workspace ``root`` (canonical)."""
    found: list[str] = []
    for entry in sys.path:
        try:
            real = os.path.realpath(entry or os.getcwd())
        except OSError:
            continue
        if _inside(real, root) and os.path.isdir(real) and real not in found:
            found.append(real)
    return found


def _module_name(folder: str, entry: str) -> str | None:
    """The top-level module ``entry`` (a name in ``folder``) would be imported as, or None."""
    full = os.path.join(folder, entry)
    if os.path.isdir(full):
        is_package = any(os.path.exists(os.path.join(full, "__init__" + s)) for s in _SUFFIXES)
        return entry if is_package and entry.isidentifier() else None
    return _module_name_of_file(entry)


def shadowed_by_write(root: str, target: str) -> str | None:
    """The module a new file at ``target`` (canonical, in the workspace ``root``) would make
    shadow an importable one: ``pandas.py`` in an import folder, or the ``__init__.py`` of
    ``pandas/`` there. None when the write shadows nothing."""
    for folder in _import_folders(root):
        parent, name = os.path.split(target)
        if parent == folder:
            module = _module_name_of_file(name)
            if module is not None:
                return _shadows(folder, module)
        elif os.path.dirname(parent) == folder and _module_name_of_file(name) == "__init__":
            package = os.path.basename(parent)
            if package.isidentifier():
                return _shadows(folder, package)
    return None


def _module_name_of_file(entry: str) -> str | None:
    for suffix in sorted(_SUFFIXES, key=len, reverse=True):
        if entry.endswith(suffix):
            name = entry[: -len(suffix)]
            return name if name.isidentifier() else None
    return None


def shadowing_name(folder: str, entry: str) -> str | None:
    """The module ``entry`` in the import folder ``folder`` would shadow, or None."""
    name = _module_name(folder, entry)
    return None if name is None else _shadows(folder, name)


def _shadows(folder: str, name: str) -> str | None:
    """``name`` when a module of that name is importable from outside ``folder``."""
    if name in _NEVER_IMPORTED:
        return None
    if name in sys.builtin_module_names or name in getattr(sys, "stdlib_module_names", ()):
        return name
    others = [p for p in sys.path if os.path.realpath(p or os.getcwd()) != folder]
    try:
        spec = importlib.machinery.PathFinder.find_spec(name, others)
    except (ImportError, ValueError, OSError):
        return None
    return name if spec is not None and spec.origin not in (None, "namespace") else None


class ImportFolders:
    """A snapshot of the kernel's import folders in a workspace, taken before a command."""

    def __init__(self, root: str) -> None:
        self.folders = _import_folders(root)
        # The modules already there (a folder that gains an ``__init__.py`` becomes one).
        self.before = {f: {e for e in self._entries(f) if _module_name(f, e)}
                       for f in self.folders}

    @staticmethod
    def _entries(folder: str) -> Iterable[str]:
        try:
            return os.listdir(folder)
        except OSError:
            return ()

    def block_new_shadows(self) -> list[str]:
        """Rename every new module that shadows an importable one; a line for each."""
        notes: list[str] = []
        for folder in self.folders:
            for entry in sorted(set(self._entries(folder)) - self.before[folder]):
                name = shadowing_name(folder, entry)
                if name is None:
                    continue
                path = os.path.join(folder, entry)
                try:
                    os.rename(path, path + BLOCKED_SUFFIX)
                    done = f"renamed to {entry + BLOCKED_SUFFIX}"
                except OSError as exc:
                    done = f"could not be renamed ({exc.strerror}); delete it"
                notes.append(f"{path} would shadow the module {name!r} the kernel imports; "
                             f"{done}.")
        return notes
