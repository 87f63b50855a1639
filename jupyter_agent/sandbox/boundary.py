"""What inside a workspace no tool may see or change: one list for ``bash`` and the file tools.

A workspace is read-write, but some of what lies inside it is trusted or run later *outside*
the sandbox, or is a secret (docs/sandbox.md, "Inside the workspace"):

* **hidden** (absent in ``bash``, refused by every file tool): when the workspace is, or
  contains, the home folder, every entry of the home folder whose name starts with "."
  (``~/.ssh``, ``~/.gnupg``, ``~/.config``, ``~/.local`` with the Jupyter runtime files and the
  user site-packages, ``~/.jupyter``, ``~/.ipython``, ``~/.bashrc`` ...); and, wherever they
  are, the agent's store folder, Jupyter's config, data and runtime folders and IPython's.
* **read-only** (bound read-only in ``bash``, refused by ``write_file``): the Python prefixes
  and site-packages folders, Python environments in the workspace (``.venv/``,
  ``src/app/.venv``, a conda folder), ``.git/hooks``, ``.git/config`` and a ``.git`` pointer
  file up to three folders down (with the git folders of submodules and worktrees kept inside
  ``.git``), folders on ``PATH`` and ``~/bin``, and cassettes (``*.cassette.json``).

Whole folders are covered, not only the files that exist: a file created later (a new ``.pth``
in site-packages, a new IPython startup file, a new hook) would be run outside the sandbox.
``bash`` gets the home folder's own level read-only for the same reason, so no new dotfile
can appear there either.
"""

from __future__ import annotations

import os
import site
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache

__all__ = ["Boundary", "CASSETTE_SUFFIX", "boundary_for", "system_workspace_reason"]

CASSETTE_SUFFIX = ".cassette.json"
"""Files with this suffix are cassettes (replayed model answers): never written by a tool."""
_GIT_PROTECTED = ("hooks", "config")
_SQLITE_SUFFIXES = ("", "-wal", "-shm", "-journal")


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


# Folders of the system itself. A workspace that is one of them (or ``/``, which holds them all)
# would be bound read-write into the sandbox over the allow-list: ``/sys`` and cgroups, ``/boot``,
# ``/var`` (package scripts, cron), every user's home; a root kernel's command could then run
# code as host root. ``/tmp`` is every program's (other kernels' connection files, with their
# keys, can be there). Inside the kernel's own file systems nothing is a project.
_SYSTEM_ROOTS = ("/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64",
                 "/libx32", "/opt", "/proc", "/run", "/sbin", "/sys", "/tmp", "/usr", "/var")
_NEVER_INSIDE = ("/boot", "/dev", "/proc", "/run", "/sys")


def system_workspace_reason(root: str) -> str | None:
    """Why no tool may work in ``root`` (canonical), or None: it is ``/``, a system folder
    (``/var``, ``/usr``, ``/home`` ...), or inside ``/proc``, ``/sys``, ``/dev``, ``/run`` or
    ``/boot`` (docs/sandbox.md)."""
    if root == "/" or root in _SYSTEM_ROOTS or any(_inside(root, d) for d in _NEVER_INSIDE):
        return (f"the workspace {root!r} is a folder of the system itself, which no sandbox "
                "can be drawn around; start the notebook in a project folder, or give the "
                "agent one (Agent(..., workspace='~/project'))")
    return None


def _real(path: str | os.PathLike[str]) -> str:
    full = os.path.abspath(os.path.expanduser(os.fspath(path)))
    try:
        return os.path.realpath(full)
    except OSError:  # a component changed while it was followed: the path as written
        return full


def _homes() -> set[str]:
    found = {_real("~")}
    try:
        import pwd

        found.add(_real(pwd.getpwuid(os.geteuid()).pw_dir))
    except (ImportError, KeyError, OSError):
        pass
    return {h for h in found if h != "/"}


def _store() -> tuple[str, list[str]]:
    """The store folder, and the store's files (the database and its SQLite companions)."""
    from jupyter_agent.session.paths import STORE_FILENAME, default_data_dir

    folder = _real(default_data_dir())
    base = os.path.join(folder, STORE_FILENAME)
    return folder, [base + s for s in _SQLITE_SUFFIXES]


def _state_dirs() -> list[str]:
    """The agent's store folder and the Jupyter and IPython folders, wherever they are."""
    dirs = [_store()[0]]
    try:
        from jupyter_core import paths as jpaths

        dirs += [jpaths.jupyter_config_dir(), jpaths.jupyter_data_dir(),
                 jpaths.jupyter_runtime_dir()]
    except ImportError:  # pragma: no cover - jupyter_core comes with every kernel
        pass
    ipython = os.environ.get("IPYTHONDIR") or os.path.join("~", ".ipython")
    dirs.append(ipython)
    return [_real(d) for d in dirs]


def _python_dirs() -> list[str]:
    dirs = [sys.prefix, sys.base_prefix, sys.exec_prefix]
    try:
        dirs += site.getsitepackages()
    except AttributeError:  # pragma: no cover - some embedded interpreters lack it
        pass
    user_site = getattr(site, "USER_SITE", None) or ""
    if user_site:
        dirs.append(user_site)
    return [_real(d) for d in dirs if d]


def _children(folder: str) -> list[str]:
    try:
        with os.scandir(folder) as it:
            return sorted(e.path for e in it if e.is_dir(follow_symlinks=False))
    except OSError:
        return []


_SCAN_DEPTH = 3
_SCAN_BUDGET = 3000
_NOT_PROJECTS = frozenset({"node_modules", "__pycache__", "site-packages", "dist-packages"})


def _is_env(folder: str) -> bool:
    """A Python environment: a virtual environment (``pyvenv.cfg``) or a conda one."""
    return (os.path.isfile(os.path.join(folder, "pyvenv.cfg"))
            or os.path.isdir(os.path.join(folder, "conda-meta")))


def _scan(root: str) -> tuple[list[str], list[str]]:
    """Where a project's ``.git`` is looked for (the root and folders up to three below it),
    and the Python environments found there (a workspace that is the home folder holds
    ``~/src/app/.venv``, ``~/miniconda3``). Dot-folders and environments are not walked into;
    at most a few thousand folders are looked at."""
    projects, envs, level = [root], [], [root]
    for depth in range(_SCAN_DEPTH + 1):
        nxt: list[str] = []
        for folder in level:
            for child in _children(folder):
                if len(projects) + len(nxt) >= _SCAN_BUDGET:
                    break
                if _is_env(child):
                    envs.append(child)
                    continue
                name = os.path.basename(child)
                if depth < _SCAN_DEPTH and not name.startswith(".") \
                        and name not in _NOT_PROJECTS:
                    nxt.append(child)
        if depth < _SCAN_DEPTH:
            projects += nxt
        level = nxt
    return projects, envs


@dataclass(frozen=True)
class Boundary:
    """The hidden and read-only parts of one workspace (all canonical absolute paths)."""

    root: str
    homes: tuple[str, ...] = ()
    """Home folders that are the workspace or lie inside it: their dot-entries are hidden."""
    hidden: tuple[str, ...] = ()
    """Folders (existing or not) hidden wherever they are: store, Jupyter, IPython; one that
    holds the workspace itself is left out (the user chose to work there)."""
    hidden_files: tuple[str, ...] = ()
    """The store's files, hidden even when the store folder is the workspace itself."""
    store_dir: str = ""
    """The store's folder."""
    read_only: tuple[str, ...] = ()
    """Folders and files (existing or not) nothing may write: Python, git hooks and config."""
    cassettes: tuple[str, ...] = field(default=())
    """Existing cassette files the sandbox binds read-only (the name rule covers the rest)."""

    def why_hidden(self, real: str) -> str | None:
        """Why ``real`` (canonical) is hidden from every tool, or None when it is not."""
        for home in self.homes:
            if _inside(real, home) and real != home:
                first = os.path.relpath(real, home).split(os.sep, 1)[0]
                if first.startswith("."):
                    return ("it is in a hidden entry of the home folder (dotfiles, keys and "
                            "configuration stay out of the workspace)")
        for folder in self.hidden:
            if _inside(real, folder):
                return "it is the agent's store or Jupyter/IPython configuration"
        if real in self.hidden_files:
            return "it is the agent's store"
        return None

    def why_read_only(self, real: str) -> str | None:
        """Why nothing may write ``real`` (canonical), or None when a write is allowed."""
        if real.endswith(CASSETTE_SUFFIX):
            return "it is a cassette (recorded model answers)"
        for path in self.read_only:
            if _inside(real, path):
                return ("it is run or trusted outside the sandbox (Python packages, "
                        "git hooks or git config)")
        return None

    def hidden_mounts(self) -> list[tuple[str, bool]]:
        """(path, is_dir) of what ``bash`` must cover inside the workspace to hide it."""
        out: list[tuple[str, bool]] = []
        for home in self.homes:
            try:
                with os.scandir(home) as it:
                    entries = sorted(it, key=lambda e: e.name)
            except OSError:
                continue
            for e in entries:
                try:
                    if e.name.startswith(".") and not e.is_symlink():
                        out.append((e.path, e.is_dir(follow_symlinks=False)))
                except OSError:
                    continue
        for path in (*self.hidden, *self.hidden_files):
            if not _inside(path, self.root) or os.path.islink(path):
                continue
            if os.path.isdir(path):
                out.append((path, True))
            elif os.path.isfile(path):
                out.append((path, False))
        # What lies inside a folder already covered needs no cover of its own (and could get
        # none: the cover is read-only).
        out.sort()
        kept: list[tuple[str, bool]] = []
        for path, is_dir in out:
            if not any(d and _inside(path, p) for p, d in kept):
                kept.append((path, is_dir))
        return kept

    def read_only_mounts(self) -> list[str]:
        """Existing paths inside the workspace ``bash`` binds read-only again."""
        found = [p for p in (*self.read_only, *self.cassettes)
                 if _inside(p, self.root) and os.path.lexists(p) and not os.path.islink(p)]
        return sorted(set(found))


def _git_paths(projects: list[str]) -> Iterable[str]:
    for folder in projects:
        git = os.path.join(folder, ".git")
        if os.path.isfile(git) and not os.path.islink(git):
            yield git  # a worktree's pointer: rewritten, it would lead git to planted hooks
        if os.path.isdir(git) and not os.path.islink(git):
            yield from _gitdir_paths(git, 0)
        else:
            for name in _GIT_PROTECTED:
                yield os.path.join(git, name)


def _gitdir_paths(gitdir: str, depth: int) -> Iterable[str]:
    """The hooks and configuration of a git folder, and of the submodules' git folders kept
    inside it (``modules/NAME``, nested): git runs a submodule's hooks and reads its
    ``core.fsmonitor`` when the parent repository is used."""
    for name in _GIT_PROTECTED:
        yield os.path.join(gitdir, name)
    for name in ("config.worktree", "commondir"):
        if os.path.lexists(os.path.join(gitdir, name)):
            yield os.path.join(gitdir, name)
    if depth >= 4:
        return
    for sub in ("modules", "worktrees"):
        for child in _children(os.path.join(gitdir, sub)):
            if os.path.isfile(os.path.join(child, "HEAD")):
                yield from _gitdir_paths(child, depth + 1)
            elif sub == "modules":  # a submodule named "a/b" lives in modules/a/b
                for grandchild in _children(child):
                    if os.path.isfile(os.path.join(grandchild, "HEAD")):
                        yield from _gitdir_paths(grandchild, depth + 1)


def _path_dirs(homes: Iterable[str]) -> list[str]:
    """Folders whose programs run by name: those on the kernel's ``PATH``, and ``~/bin``
    (a login shell puts it on ``PATH`` once it exists)."""
    dirs = [d for d in os.environ.get("PATH", "").split(os.pathsep) if os.path.isabs(d)]
    return [*dirs, *(os.path.join(h, "bin") for h in homes)]


def _cassettes(root: str) -> Iterable[str]:
    """Existing cassettes at the top of the workspace and beside the running notebook."""
    folders = {root}
    notebook = os.environ.get("JPY_SESSION_NAME")
    if notebook:
        folders.add(_real(os.path.dirname(os.path.abspath(notebook))))
    for folder in folders:
        try:
            with os.scandir(folder) as it:
                for e in it:
                    if e.name.endswith(CASSETTE_SUFFIX) and e.is_file(follow_symlinks=False):
                        yield _real(e.path)
        except OSError:
            continue


def _dot_link_targets(homes: Iterable[str], ws: str) -> Iterable[str]:
    for home in homes:
        try:
            with os.scandir(home) as it:
                links = [e.path for e in it if e.name.startswith(".") and e.is_symlink()]
        except OSError:
            continue
        for link in links:
            target = _real(link)
            if _inside(target, ws):
                yield target


_ENV_KEYS = ("HOME", "JUPYTER_AGENT_HOME", "JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR",
             "JUPYTER_RUNTIME_DIR", "JUPYTER_PLATFORM_DIRS", "JUPYTER_NO_CONFIG", "IPYTHONDIR",
             "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_RUNTIME_DIR")


@lru_cache(maxsize=8)
def _process_wide(_env: tuple[str | None, ...]) -> tuple[tuple[str, ...], tuple[str, ...],
                                                         tuple[str, ...], str, tuple[str, ...]]:
    """(homes, state folders, Python folders, store folder, store files) for one set of the
    environment variables they depend on (``_env``, the cache key): about a millisecond of
    path lookups that every file-tool call would otherwise repeat."""
    store_dir, store_files = _store()
    return (tuple(sorted(_homes())), tuple(_state_dirs()), tuple(_python_dirs()), store_dir,
            tuple(store_files))


def boundary_for(root: str | os.PathLike[str], *, scan: bool = True) -> Boundary:
    """The hidden and read-only parts of the workspace at ``root`` (canonical).

    ``scan=False`` leaves out the search for git folders and Python environments below the
    root (a walk of up to a few thousand folders) and for cassettes: a command over an overlay needs no
    read-only parts, its changes are checked on their final state (docs/sandbox.md)."""
    ws = _real(root)
    all_homes, state_dirs, python_dirs, store_dir, store_files = _process_wide(
        tuple(os.environ.get(k) for k in _ENV_KEYS))
    homes = tuple(h for h in all_homes if _inside(h, ws))
    # A dotfile that is a symlink (``~/.bashrc -> dotfiles/bashrc``) hides its target too.
    hidden = {d for d in [*state_dirs, *_dot_link_targets(homes, ws)]
              if not _inside(ws, d) and not any(_inside(h, d) for h in homes)}
    # The answer cache beside the store (clients/cache.py): hidden even when the store folder
    # is the workspace, as the store's files are (a planted entry would be a model's answer).
    hidden.add(os.path.join(store_dir, "cache"))
    projects, envs = _scan(ws) if scan else ([ws], [])
    read_only = sorted({*python_dirs, *(_real(p) for p in _git_paths(projects)),
                        *(_real(v) for v in envs), *(_real(p) for p in _path_dirs(homes))})
    # A folder that holds the workspace cannot be read-only inside it: that would make the
    # whole workspace read-only (a kernel started from its own prefix). Keep only what is
    # inside the workspace or elsewhere.
    read_only = [p for p in read_only if not (_inside(ws, p) and p != ws) and p != ws]
    return Boundary(root=ws, homes=homes, hidden=tuple(sorted(hidden)),
                    hidden_files=tuple(store_files), store_dir=store_dir,
                    read_only=tuple(read_only),
                    cassettes=tuple(sorted(set(_cassettes(ws)))) if scan else ())
