"""Which files take effect outside the sandbox: the classes a change is held for.

A file a sandboxed command leaves behind is harmless while nothing outside the sandbox runs or
trusts it. These are the files something outside does run or trust (docs/security.md, "By
effect"), judged on the final state a command left, whatever path led there (a rename of an
ancestor, a copy-back, a hard link, a symlink swap):

* Python modules and packages of any name under a folder of the kernel's ``sys.path`` inside
  the workspace (a package folder, a namespace package, a ``__pycache__`` file);
* ``.pth``, ``sitecustomize`` and ``usercustomize`` anywhere;
* anything inside a folder that holds ``pyvenv.cfg`` or ``conda-meta`` (an environment);
* git metadata at any depth: ``.git`` folders and files, anything inside a folder that looks
  like a git folder (``HEAD``, ``objects``, ``refs``), ``.gitmodules``, ``.gitattributes``;
* IPython and Jupyter configuration and start-up files (``.ipython``, ``.jupyter``,
  ``ipython_*config*``, ``jupyter_*config*``);
* direnv's ``.envrc``;
* the agent's store and cache folder, cassettes, skills (a folder with ``SKILL.md``);
* programs in a folder on the kernel's ``PATH`` inside the workspace (run by name).
"""

from __future__ import annotations

import importlib.machinery
import os
import stat
import sys
from dataclasses import dataclass

from .layers import final_lstat

__all__ = ["CASSETTE_SUFFIX", "Classifier", "import_folders", "path_folders"]

CASSETTE_SUFFIX = ".cassette.json"
"""Recorded model answers: trusted by a replay."""
_SUFFIXES = tuple(sorted(importlib.machinery.all_suffixes(), key=len, reverse=True))
_STARTUP = ("sitecustomize", "usercustomize")
_GIT_NAMES = (".gitmodules", ".gitattributes")
_CONFIG_FOLDERS = (".ipython", ".jupyter")

MODULE = "a module the kernel could import"
START = "a Python start-up file (.pth, sitecustomize, usercustomize)"
ENV = "inside a Python environment"
GIT = "git metadata"
CONFIG = "IPython/Jupyter configuration"
ENVRC = "direnv's .envrc"
AGENT = "the agent's store, cache, cassettes or skills"
PROGRAM = "a program on PATH"


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def import_folders(root: str) -> list[str]:
    """The kernel's import folders (``sys.path``, ``''`` is the working folder) inside the
    workspace ``root`` (canonical), relative to it (``"."`` for the root itself)."""
    found: list[str] = []
    for entry in sys.path:
        try:
            real = os.path.realpath(entry or os.getcwd())
        except OSError:
            continue
        if _inside(real, root):
            rel = os.path.relpath(real, root)
            if rel not in found:
                found.append(rel)
    return found


def path_folders(root: str) -> list[str]:
    """The folders of the kernel's ``PATH`` inside the workspace ``root``, relative."""
    found: list[str] = []
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        if not os.path.isabs(entry):
            continue
        real = os.path.realpath(entry)
        if _inside(real, root) and real != root:
            found.append(os.path.relpath(real, root))
    return found


def _module_stem(name: str) -> str | None:
    for suffix in _SUFFIXES:
        if name.endswith(suffix):
            stem = name[: -len(suffix)]
            return stem if stem.isidentifier() else None
    return None


@dataclass(frozen=True)
class Classifier:
    """Says why a changed path takes effect outside, looking at the final state.

    ``layers`` are the overlay's layers, top first, the workspace last; ``imports`` the
    import folders inside the workspace (relative); ``agent`` the agent's folders and files
    inside the workspace (relative: the store folder)."""

    layers: tuple[str, ...]
    imports: tuple[str, ...]
    agent: tuple[str, ...] = ()
    programs: tuple[str, ...] = ()
    """Folders on ``PATH`` inside the workspace (relative)."""

    def _has(self, rel: str, name: str) -> bool:
        return final_lstat(self.layers, f"{rel}/{name}" if rel != "." else name) is not None

    def _is_dir(self, rel: str, name: str) -> bool:
        st = final_lstat(self.layers, f"{rel}/{name}" if rel != "." else name)
        return st is not None and stat.S_ISDIR(st.st_mode)

    def _was_package(self, rel: str) -> bool:
        below = self.layers[1:]
        if final_lstat(below, f"{rel}/__init__.py") is not None:
            return True
        try:
            return any(_module_stem(n) for n in os.listdir(os.path.join(self.layers[-1], rel)))
        except OSError:
            return False

    def folder_reason(self, rel: str) -> str | None:
        """Why everything inside the folder ``rel`` (in its final state) is held, or None."""
        if self._has(rel, "pyvenv.cfg") or self._is_dir(rel, "conda-meta"):
            return ENV
        if self._has(rel, "HEAD") and self._is_dir(rel, "objects") \
                and self._is_dir(rel, "refs"):
            return GIT
        if self._has(rel, "SKILL.md"):
            return AGENT
        return None

    def name_reason(self, rel: str, *, is_link: bool = False, is_dir: bool = False,
                    removed: bool = False) -> str | None:
        """Why the path ``rel`` itself is held, by its name and place, or None."""
        parts = rel.split("/")
        name = parts[-1]
        if ".git" in parts or name in _GIT_NAMES:
            return GIT
        if any(p in _CONFIG_FOLDERS for p in parts) or (
                name.startswith(("ipython_", "jupyter_")) and "config" in name):
            return CONFIG
        if name == ".envrc":
            return ENVRC
        if name.endswith(".pth") or _module_stem(name) in _STARTUP \
                or name in ("pyvenv.cfg", "conda-meta"):
            return START if name.endswith(".pth") or _module_stem(name) else ENV
        if name.endswith(CASSETTE_SUFFIX) or name == "SKILL.md" \
                or any(_inside(rel, a) for a in self.agent):
            return AGENT
        if any(_inside(rel, p) for p in self.programs):
            return PROGRAM
        for folder in self.imports:
            if folder != "." and not _inside(rel, folder):
                continue
            sub = parts if folder == "." else rel[len(folder) + 1:].split("/")
            if not sub or sub == [""]:
                continue
            if "__pycache__" in sub:
                return MODULE  # a cached module runs in place of its source
            dirs_ok = all(p.isidentifier() for p in sub[:-1])
            if dirs_ok and _module_stem(sub[-1]) is not None:
                return MODULE
            if dirs_ok and sub[-1].isidentifier() and (
                    is_link or (removed and is_dir and self._was_package(rel))):
                return MODULE  # a link to a package, or a package removed
        return None
