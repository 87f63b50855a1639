"""Running a sandboxed command over an overlay of its workspace.

Bubblewrap before 0.9 has no overlay options, so the overlay is mounted around it: ``unshare``
makes a private mount namespace (and, for a normal user, a user namespace, with the
``userxattr`` option), mounts the overlay there, and execs bubblewrap, which binds the merged
folder at the workspace's path. The command's writes land in the upper folder only; when it
has ended, :meth:`OverlayRun.finish` reads the upper folder and settles it (``settle``).

Layers, top first: the command's upper folder, then the layers held from earlier commands
(newest first), then the workspace. ``redirect_dir=nofollow`` makes a folder rename a copy (every
file shows in the upper folder under its final path) and ``metacopy=off`` keeps whole files in
the upper folder (never a metadata-only copy whose data stays below).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

from ..base.state import STATE
from .classes import Classifier, import_folders, path_folders
from .ledger import Record, held_layers, new_id, save, state_dir
from .settle import Settler

__all__ = ["OverlayRun", "OverlaySupport", "overlay_support"]

_PROBE_TIMEOUT = 10.0
_MOUNT = 'mount -t overlay overlay -o "$1" "$2" || exit 125; shift 2; exec "$@"'
# A folder rename must be a copy (no redirect is made or followed) and a copied-up file whole
# (no metadata-only copy): without both the upper folder does not show the final state, so no
# overlay is used at all. ``redirect_dir=off`` is refused with ``userxattr`` on some kernels.
_OPTION_SETS = (("redirect_dir=nofollow", "metacopy=off", "index=off"),
                ("redirect_dir=nofollow", "metacopy=off"),
                ("redirect_dir=off", "metacopy=off"))


@dataclass(frozen=True)
class OverlaySupport:
    """Whether commands can run over an overlay here, and how."""

    ok: bool
    reason: str = ""
    rootless: bool = False
    """A user namespace is made first (the kernel does not run as root)."""
    extra: tuple[str, ...] = ()
    """Mount options this kernel accepted."""


_cache: dict[tuple[int, str], OverlaySupport] = STATE.slot("sandbox.overlay_probe", dict)
_lock = threading.Lock()


def _prefix(rootless: bool) -> list[str]:
    unshare = shutil.which("unshare") or "unshare"
    return [unshare, "-Urm"] if rootless else [unshare, "-m", "--propagation", "private"]


def _options(lowers: Sequence[str], upper: str, work: str, support: OverlaySupport) -> str:
    opts = [f"lowerdir={':'.join(lowers)}", f"upperdir={upper}", f"workdir={work}",
            *support.extra]
    if support.rootless:
        opts.append("userxattr")
    return ",".join(opts)


def _bad_path(path: str) -> bool:
    return any(c in path for c in ",:\\\n")


def overlay_support(state: str) -> OverlaySupport:
    """Probe once (per user and private folder) whether an overlay mounts here."""
    key = (os.geteuid(), state)
    with _lock:
        known = _cache.get(key)
    if known is None:
        known = _probe(state)
        with _lock:
            _cache[key] = known
    return known


def _probe(state: str) -> OverlaySupport:
    if shutil.which("unshare") is None:
        return OverlaySupport(False, "unshare (util-linux) is not installed")
    if _bad_path(state):
        return OverlaySupport(False, "the agent's folder has a ',' or ':' in its path")
    rootless = os.geteuid() != 0
    why = ""
    for extra in _OPTION_SETS:
        probe = os.path.join(state, f".probe-{new_id()}")
        try:
            dirs = [os.path.join(probe, d) for d in ("low", "up", "work", "m")]
            for d in dirs:
                os.makedirs(d, mode=0o700)
            trial = OverlaySupport(True, rootless=rootless, extra=extra)
            argv = [*_prefix(rootless), "sh", "-c", _MOUNT, "sh",
                    _options([dirs[0]], dirs[1], dirs[2], trial), dirs[3], "true"]
            done = subprocess.run(argv, capture_output=True, timeout=_PROBE_TIMEOUT,
                                  check=False, stdin=subprocess.DEVNULL)
            if done.returncode == 0:
                return trial
            err = done.stderr.decode("utf-8", "replace").strip().splitlines()
            why = why or (err[-1] if err else f"exit code {done.returncode}")
        except (OSError, subprocess.TimeoutExpired) as exc:
            why = why or str(exc)
        finally:
            _rmtree(probe)
    return OverlaySupport(False, f"an overlay cannot be mounted here: {why}")


def _rmtree(path: str) -> None:
    """Remove a private tree, also the overlay's ``work/work`` folder (mode 000)."""
    for dirpath, dirs, _files in os.walk(path):
        for d in dirs:
            try:
                os.chmod(os.path.join(dirpath, d), 0o700, follow_symlinks=False)
            except (OSError, NotImplementedError):
                pass
    shutil.rmtree(path, ignore_errors=True)


class OverlayRun:
    """One command over an overlay of the workspace ``root`` (canonical).

    Use: ``run = OverlayRun.start(root)`` (None when no overlay can be had: ``why_not``),
    bind ``run.merged`` at the workspace's path, run ``run.wrap(argv)``, then
    ``run.finish(tool, label)``."""

    def __init__(self, root: str, state: str, support: OverlaySupport) -> None:
        self.root = root
        self.state = state
        self.support = support
        self.id = new_id()
        self.run_dir = os.path.join(state, "runs", self.id)
        self.upper = os.path.join(self.run_dir, "upper")
        self.work = os.path.join(self.run_dir, "work")
        self.merged = os.path.join(self.run_dir, "merged")
        for d in (self.upper, self.work, self.merged):
            os.makedirs(d, mode=0o700)
        self.lowers = [*held_layers(state), root]
        self.imports = tuple(import_folders(root))

    @staticmethod
    def why_not(root: str) -> str | None:
        """Why no overlay can be had for ``root``, or None."""
        if _bad_path(root):
            return "the workspace path has a ',' or ':'"
        try:
            state = state_dir(root)
        except OSError as exc:
            return str(exc)
        if state == root or state.startswith(root.rstrip("/") + "/"):
            return "the agent's folder lies inside the workspace"
        support = overlay_support(state)
        return None if support.ok else support.reason

    @classmethod
    def start(cls, root: str) -> OverlayRun | None:
        """A new run, or None when :meth:`why_not` has a reason."""
        if cls.why_not(root) is not None:
            return None
        state = state_dir(root)
        os.makedirs(os.path.join(state, "runs"), mode=0o700, exist_ok=True)
        return cls(root, state, overlay_support(state))

    def wrap(self, argv: Sequence[str]) -> list[str]:
        """``argv`` (a bubblewrap command binding :attr:`merged`) run with the overlay
        mounted; exit code 125 when the mount failed."""
        opts = _options(self.lowers, self.upper, self.work, self.support)
        return [*_prefix(self.support.rootless), "sh", "-c", _MOUNT, "sh", opts, self.merged,
                *argv]

    def finish(self, tool: str, label: str) -> Record:
        """Settle the upper layer (apply, hold, keep previous versions) and save the record."""
        rec = Record(id=self.id, root=self.root, tool=tool, label=label[:200], time=time.time())
        classifier = Classifier(layers=(self.upper, *self.lowers), imports=self.imports,
                                agent=_agent_folders(self.root),
                                programs=tuple(path_folders(self.root)))
        held = os.path.join(self.state, "held", self.id)
        undo = os.path.join(self.state, "undo", self.id)
        try:
            Settler(self.upper, self.root, classifier, held, undo, rec).run()
        finally:
            _rmtree(self.run_dir)
        if rec.held:
            rec.held_state = "held"
        if rec.applied or rec.held or rec.skipped:
            save(self.state, rec)
        return rec

    def abandon(self) -> None:
        """Drop the run without applying anything (the command never started)."""
        _rmtree(self.run_dir)


def _agent_folders(root: str) -> tuple[str, ...]:
    """The agent's own paths inside the workspace (relative): its store folder; when that
    folder is the workspace itself, the store's files and the answer cache."""
    from ..session.paths import STORE_FILENAME, default_data_dir

    store = os.path.realpath(default_data_dir())
    if store == root:
        return (*(STORE_FILENAME + s for s in ("", "-wal", "-shm", "-journal")), "cache")
    if not store.startswith(root.rstrip("/") + "/"):
        return ()
    return (os.path.relpath(store, root),)
