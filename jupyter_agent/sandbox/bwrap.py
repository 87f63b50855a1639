"""Confining ``bash`` with bubblewrap (``bwrap``), and saying plainly when we cannot.

Inside the sandbox (docs/sandbox.md) exists only what is listed: the system folders (``/usr``,
``/etc``, ``/opt``, the ``/bin`` and ``/lib`` links) and the kernel's Python environment (unless
it lives in the home folder) read-only; the workspace read-write at its own path (so the paths a
command prints are the paths ``read_file`` takes), minus what inside it stays read-only or
hidden (``boundary``); a private tmpfs ``/tmp``; the sandbox's own ``/proc`` with ``/proc/sys``
read-only; a minimal ``/dev``. There is no home folder and no ``/sys``. The command gets a new
PID namespace (the kernel's ``/proc`` is invisible and nothing outlives the call), a user
namespace in which it is not root (where the kernel allows one), process and memory limits
(``limits``) and, unless the workspace allows it, no network and no Unix sockets
(``seccomp``). When the kernel runs as root, files of ``/etc`` that only root may read
(``shadow``, private keys) are hidden too, since root would read them through the read-only
bind.

``JUPYTER_AGENT_SANDBOX`` chooses: ``auto`` (default: bubblewrap when it works here), ``off``
(never; bash runs unconfined), ``require`` (bash refuses to run without the sandbox).
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from jupyter_agent.base.errors import ConfigError, ToolError

from ..base.state import STATE
from .boundary import Boundary, boundary_for, system_workspace_reason

__all__ = ["SANDBOX_ENV", "SandboxStatus", "bwrap_command", "python_binds", "sandbox_status"]

SANDBOX_ENV = "JUPYTER_AGENT_SANDBOX"
"""Environment variable choosing the sandbox mode: ``auto``, ``off`` or ``require``."""
_MODES = ("auto", "off", "require")
_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt")
_INSTALL_HINT = ("install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf "
                 "install bubblewrap)")
_PROBE_TIMEOUT = 10.0
SANDBOX_UID = 1000
"""The uid (and gid) a command runs as in its user namespace when the kernel runs as root."""


@dataclass(frozen=True)
class SandboxStatus:
    """Whether ``bash`` runs confined here, and why not when it does not."""

    mode: str
    """``auto``, ``off`` or ``require`` (from ``JUPYTER_AGENT_SANDBOX``)."""
    bwrap: str | None
    """The bubblewrap executable that works, or None."""
    reason: str = ""
    """Why there is no sandbox (empty when there is one)."""
    userns: bool = False
    """The command runs in its own user namespace, as a non-root uid."""

    @property
    def confined(self) -> bool:
        """True when bash runs inside bubblewrap."""
        return self.bwrap is not None

    def tool_note(self, allow_network: bool) -> str:
        """What bash's tool description adds (the model reads it); empty in the default sandbox,
        whose rules the plain description already fits."""
        if self.confined:
            return "It runs in a sandbox that has network access." if allow_network else ""
        if self.mode == "require":
            return "It cannot run here: a sandbox is required but unavailable."
        return ("It is NOT sandboxed here: the command can read and write anything the "
                "notebook's user can, and use the network.")

    def card_note(self) -> str | None:
        """The warning an approval card for ``bash`` shows, or None when bash is confined."""
        if self.confined:
            return None
        return ("Warning: bash is NOT sandboxed here; the command can read and write anything "
                "you can.")


# A slot of the process state: one probe per executable, forgotten when the state is reset.
_cache: dict[tuple[str, str], SandboxStatus] = STATE.slot("tools.sandbox_probe", dict)
_cache_lock = threading.Lock()


def _mode() -> str:
    raw = os.environ.get(SANDBOX_ENV, "auto").strip().lower() or "auto"
    if raw not in _MODES:
        raise ConfigError(f"{SANDBOX_ENV} must be one of {', '.join(_MODES)}, not {raw!r}.")
    return raw


def sandbox_status() -> SandboxStatus:
    """Whether bubblewrap is usable now (found on ``PATH`` and passing a one-time test run).

    The test run is cached per executable, so only the first call costs a few milliseconds.

    Raises:
        ConfigError: ``JUPYTER_AGENT_SANDBOX`` has an unknown value.
    """
    mode = _mode()
    if mode == "off":
        return SandboxStatus(mode, None, f"{SANDBOX_ENV}=off")
    found = shutil.which("bwrap")
    if found is None:
        return SandboxStatus(mode, None, f"bubblewrap is not installed; {_INSTALL_HINT}")
    key = (mode, os.path.realpath(found))
    with _cache_lock:
        known = _cache.get(key)
    if known is None:
        known = _probe(mode, found)
        with _cache_lock:
            _cache[key] = known
    return known


def _probe(mode: str, bwrap: str) -> SandboxStatus:
    """Run ``true`` in a throwaway sandbox: bwrap may be installed yet not permitted (a
    container without user namespaces). With a user namespace first (the command is then not
    root), without one when the kernel refuses it."""
    why = ""
    for userns in (True, False):
        with tempfile.TemporaryDirectory(prefix="jupyter-agent-bwrap-") as tmp:
            argv = bwrap_command(bwrap, Path(tmp), allow_network=False, userns=userns) + ["true"]
            try:
                done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True,
                                      timeout=_PROBE_TIMEOUT, check=False)
            except (OSError, subprocess.TimeoutExpired) as exc:
                return SandboxStatus(mode, None, f"bubblewrap did not start: {exc}")
        if done.returncode == 0:
            return SandboxStatus(mode, bwrap, userns=userns)
        err = done.stderr.decode("utf-8", "replace").strip().splitlines()
        why = why or (err[-1] if err else f"exit code {done.returncode}")
    return SandboxStatus(mode, None, f"bubblewrap is installed but failed here: {why}")


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _python_dirs(root: str) -> Iterator[str]:
    """The kernel's Python environment(s), so ``python`` in bash finds the same packages;
    only those outside the home folder (the sandbox promises none of it)."""
    home = os.path.realpath(os.path.expanduser("~"))
    seen: set[str] = set()
    for prefix in (sys.prefix, sys.base_prefix, sys.exec_prefix):
        real = os.path.realpath(prefix)
        if real in seen or not os.path.isdir(real) or real == "/":
            continue
        seen.add(real)
        if any(_inside(real, d) for d in _SYSTEM_DIRS):
            continue  # already visible read-only
        if _inside(real, home) or _inside(home, real) or _inside(root, real):
            continue  # inside the home folder, or would expose it or the workspace's parents
        yield real


def python_binds(root: str) -> list[str] | None:
    """The extra folders (read-only) that show the kernel's own interpreter inside the sandbox
    of a workspace at ``root``, or None when it cannot be shown.

    ``bash`` runs the system's ``python3``; the Python sandbox runs the kernel's interpreter,
    which may live in the home folder (pyenv, a user install): only its installation folders
    are shown then, never the rest of the home folder. None when one of them would be hidden
    (the workspace is the home folder) or would expose the home folder or the workspace.
    """
    home = os.path.realpath(os.path.expanduser("~"))
    shown = [*_SYSTEM_DIRS, *_python_dirs(root), root]
    extra: list[str] = []
    for prefix in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix):
        real = os.path.realpath(prefix)
        if any(_inside(real, d) for d in shown + extra):
            continue
        if _inside(home, real) or _inside(root, real) or not os.path.isdir(real):
            return None
        extra.append(real)
    wanted = [os.path.realpath(sys.executable), os.path.realpath(sys.prefix)]
    if not all(any(_inside(w, d) for d in shown + extra) for w in wanted):
        return None
    hidden = boundary_for(root).why_hidden
    if any(hidden(w) for w in wanted):
        return None
    return extra


def _root_only_etc() -> list[tuple[str, bool]]:
    """(path, is_dir) of ``/etc`` entries no other user may read, hidden when we are root."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return []  # an unprivileged user cannot read them anyway
    hidden: list[tuple[str, bool]] = []
    for dirpath, dirnames, filenames in os.walk("/etc"):
        for name in list(dirnames):
            full = os.path.join(dirpath, name)
            try:
                st = os.lstat(full)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode) and not st.st_mode & stat.S_IROTH:
                hidden.append((full, True))
                dirnames.remove(name)  # the whole folder is covered
        for name in filenames:
            full = os.path.join(dirpath, name)
            try:
                st = os.lstat(full)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode) and not st.st_mode & stat.S_IROTH:
                hidden.append((full, False))
    return hidden


_etc_cache: list[tuple[str, bool]] | None = None


def _etc_hidden() -> list[tuple[str, bool]]:
    global _etc_cache
    if _etc_cache is None:
        _etc_cache = _root_only_etc()
    return _etc_cache


def _system_binds(only_under: str | None = None) -> list[str]:
    args: list[str] = []
    for d in _SYSTEM_DIRS:
        if only_under is not None and not _inside(d, only_under):
            continue
        if os.path.islink(d):
            if only_under is None:
                args += ["--symlink", os.readlink(d), d]  # /bin -> usr/bin on merged-/usr systems
        elif os.path.isdir(d):
            args += ["--ro-bind", d, d]
    return args


def _proc_covers() -> list[str]:
    """``/proc/sys`` (and the sysrq trigger) read-only whatever our uid: bwrap covers them
    itself only when its own write test passes, which root fails after dropping capabilities,
    while sysctl files still accept root's writes (docs/sandbox.md)."""
    args = ["--ro-bind", "/proc/sys", "/proc/sys"]
    if os.path.exists("/proc/sysrq-trigger"):
        args += ["--ro-bind", "/proc/sysrq-trigger", "/proc/sysrq-trigger"]
    return args


def _user_args(userns: bool) -> list[str]:
    """A user namespace in which the command is not root (when the kernel allows one)."""
    if not userns:
        return []
    uid = os.getuid() if hasattr(os, "getuid") else SANDBOX_UID
    gid = os.getgid() if hasattr(os, "getgid") else SANDBOX_UID
    return ["--unshare-user", "--uid", str(uid or SANDBOX_UID), "--gid", str(gid or SANDBOX_UID)]


def _make_coverable(b: Boundary) -> None:
    """Create what is protected but could be created first by the command (a mount needs an
    existing path):

    - the store folder and the answer cache's (0700, as the store and the cache make them): a
      store or a cache entry planted before the first open would be opened and trusted;
    - a store's empty ``-wal``, ``-shm`` and ``-journal`` beside an existing store file, when
      the store folder is the workspace itself: a planted log or journal would be replayed into
      the store at its next open (SQLite treats an empty one as none);
    - a repository's missing ``.git/hooks`` (git makes it at ``init``): a hook planted there
      would run at the next commit.
    """
    folders = [p for p in b.read_only if os.path.basename(p) == "hooks"
               and os.path.isdir(os.path.dirname(p)) and _inside(p, b.root)]
    private = [b.store_dir, os.path.join(b.store_dir, "cache")]  # the answer cache too
    folders += [p for p in private if p in b.hidden and _inside(p, b.root)]
    for path in folders:
        if not os.path.lexists(path):
            try:
                os.makedirs(path, mode=0o700 if path in private else 0o755)
            except OSError:
                pass
    store, *companions = b.hidden_files
    if _inside(store, b.root) and os.path.isfile(store):
        for path in companions:  # -wal, -shm, -journal
            try:
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                                 0o600))
            except OSError:  # exists already (the kernel has the store open), or cannot
                pass


def _workspace_binds(ws: str, merged: str | None = None) -> list[str]:
    """The workspace read-write, then what inside it stays read-only or hidden (``boundary``).

    The home folder's own level (when it is the workspace or inside it) is read-only with its
    visible entries read-write again, so no new dotfile can be created there; read-only parts
    come before hidden ones, so a hidden folder inside a read-only one stays hidden.

    With ``merged`` (the command runs over an overlay, docs/sandbox.md) the overlay's merged
    folder is bound at the workspace's path and nothing inside it is bound read-only: every
    write lands in the overlay and is checked on its final state afterwards. What is hidden
    stays hidden (reads are not checked afterwards).
    """
    b = boundary_for(ws, scan=merged is None)
    _make_coverable(b)  # the store's files stay hidden, so unwritable, over the overlay too

    def src(path: str) -> str:  # the same path seen through the overlay
        return path if merged is None else merged + path[len(ws):]

    args = ["--bind", ws if merged is None else merged, ws]
    for home in b.homes:
        args += ["--ro-bind", src(home), home]
        try:
            with os.scandir(home) as it:
                visible = sorted(e.path for e in it
                                 if not e.name.startswith(".") and not e.is_symlink())
        except OSError:
            visible = []
        for path in visible:
            args += ["--bind", src(path), path]
    for path in b.read_only_mounts() if merged is None else ():
        args += ["--ro-bind", path, path]
    for path, is_dir in b.hidden_mounts():
        args += (["--tmpfs", path, "--remount-ro", path] if is_dir
                 else ["--ro-bind", "/dev/null", path])
    return args


_help_cache: dict[str, str] = {}


def _has_option(bwrap: str, option: str) -> bool:
    """Whether this bubblewrap knows ``option`` (``--size`` came in 0.6, ``--disable-userns``
    in 0.8): read once from its ``--help``."""
    if bwrap not in _help_cache:
        try:
            done = subprocess.run([bwrap, "--help"], capture_output=True, text=True,
                                  timeout=_PROBE_TIMEOUT, check=False)
            _help_cache[bwrap] = done.stdout + done.stderr
        except (OSError, subprocess.TimeoutExpired):
            _help_cache[bwrap] = ""
    return option in _help_cache[bwrap]


def _tmpfs(bwrap: str, path: str, tmp_mb: int | None) -> list[str]:
    """A private tmpfs at ``path``, at most ``tmp_mb`` MB: its files are memory, which the
    per-process limit does not count (a command could fill the host's RAM through it)."""
    if tmp_mb is not None and _has_option(bwrap, "--size"):
        return ["--size", str(tmp_mb * 1024 * 1024), "--tmpfs", path]
    return ["--tmpfs", path]


def bwrap_command(bwrap: str, root: str | Path, *, allow_network: bool,
                  userns: bool = True, seccomp_fd: int | None = None,
                  tmp_mb: int | None = None, extra_ro: Sequence[str] = (),
                  merged: str | None = None) -> list[str]:
    """The ``bwrap`` argument list (without the command) confining a command to ``root``.

    ``merged``: the overlay folder to bind at the workspace's path (``OverlayRun``).
    ``tmp_mb`` caps each of the two memory-backed folders (``/tmp``, ``/dev/shm``; ``/dev``
    itself is read-only), when bubblewrap can.

    Mount order matters: a later mount covers an earlier one. ``/tmp`` comes first so a
    workspace under ``/tmp`` is bound on top of it; after the workspace come the parts of it
    that stay read-only or hidden (``boundary``), then system folders inside the workspace (a
    workspace of ``/``) read-only again.
    """
    ws = str(root)
    why = system_workspace_reason(os.path.realpath(ws))
    if why:  # bound read-write, it would undo the allow-list (``/sys``, ``/var``, ``/boot``)
        raise ToolError(f"bash was not run: {why}.")
    args = [bwrap, "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc",
            "--unshare-uts", *_user_args(userns), "--cap-drop", "ALL"]
    if userns and _has_option(bwrap, "--disable-userns"):
        # No nested user namespace: in one, a process holds every capability over new network
        # and mount namespaces (nf_tables, mounts: the kernel's widest attack surface).
        args.append("--disable-userns")
    if not allow_network:
        args.append("--unshare-net")
        if seccomp_fd is not None:  # no Unix sockets either (``seccomp``)
            args += ["--seccomp", str(seccomp_fd)]
    args += _tmpfs(bwrap, "/tmp", tmp_mb)
    args += _system_binds()
    for path, is_dir in _etc_hidden():
        args += ["--tmpfs", path] if is_dir else ["--ro-bind", "/dev/null", path]
    if allow_network and os.path.islink("/etc/resolv.conf"):
        target = os.path.realpath("/etc/resolv.conf")  # often under /run, which is not bound
        if os.path.isfile(target):
            args += ["--ro-bind", target, target]
    for d in [*_python_dirs(ws), *extra_ro]:
        args += ["--ro-bind", d, d]
    args += _workspace_binds(ws, merged)
    args += _system_binds(only_under=ws)
    # /proc read-only as a whole (an allow-list, not only /proc/sys): to the host a root
    # kernel's command is uid 0, and proc files that check only the file mode would take its
    # writes (PCI config space in /proc/bus/pci, IRQ affinity, ACPI wakeup, CIFS settings).
    args += ["--proc", "/proc", *_proc_covers(), "--remount-ro", "/proc", "--dev", "/dev",
             *_tmpfs(bwrap, "/dev/shm", tmp_mb), "--remount-ro", "/dev", "--chdir", ws]
    return args
