"""The sandbox boundary as a whole, attacked by a hostile command (issue: root kernel to host
root, the home folder as workspace, the store, venvs and git hooks written from bash, no
limits, Unix sockets with the network off) and the store's own file (mode, a damaged file).

Every attack runs as this process's uid (root in CI) and, where the uid changes how the
defence works (limits, the home folder), again as ``nobody`` through ``setpriv`` in a
workspace that user owns. A test that writes to ``/proc/sys`` never writes: it only opens the
file for writing (``O_WRONLY|O_APPEND``), which fails on a read-only mount before any value
could change.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sqlite3
import stat
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from jupyter_agent.base.errors import ConfigError
from jupyter_agent.sandbox.boundary import boundary_for
from jupyter_agent.session.store import Store
from jupyter_agent.tools.builtin import (
    Workspace,
    WorkspaceError,
    make_builtin_functions,
    sandbox_status,
)
from jupyter_agent.tools.builtin.shell import run_command

REPO = Path(__file__).resolve().parents[2]
NOBODY = 65534

pytestmark = [
    pytest.mark.timeout(180),
    pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="Linux only (bubblewrap, /proc)"),
    pytest.mark.skipif(shutil.which("bwrap") is None,
                       reason="bubblewrap is not installed (apt-get install bubblewrap)"),
]

_IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
as_nobody_too = pytest.mark.parametrize("who", [
    "self",
    pytest.param("nobody", marks=pytest.mark.skipif(
        not _IS_ROOT or shutil.which("setpriv") is None,
        reason="running as another user needs root and setpriv")),
])

_JUPYTER_VARS = ("JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR", "IPYTHONDIR",
                 "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_RUNTIME_DIR", "JUPYTER_PATH",
                 "JUPYTER_CONFIG_PATH", "JPY_SESSION_NAME")


@pytest.fixture
def sandboxed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JUPYTER_AGENT_SANDBOX", raising=False)
    for name in _JUPYTER_VARS:
        monkeypatch.delenv(name, raising=False)
    status = sandbox_status()
    assert status.confined, f"bubblewrap is installed but unusable here: {status.reason}"


@pytest.fixture
def place() -> Iterator[Path]:
    """A folder both this process and ``nobody`` can reach (pytest's own tmp is 0700)."""
    folder = Path(tempfile.mkdtemp(prefix="ja-boundary-", dir="/tmp"))
    os.chmod(folder, 0o755)
    try:
        yield Path(os.path.realpath(folder))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _own(path: Path, who: str) -> None:
    if who == "nobody":
        for dirpath, dirnames, filenames in os.walk(path):
            for name in [dirpath, *(os.path.join(dirpath, n) for n in dirnames + filenames)]:
                os.lchown(name, NOBODY, NOBODY)


_AS_USER = """
import json, sys
from jupyter_agent.tools.builtin import sandbox_status
from jupyter_agent.tools.builtin.shell import run_command
status = sandbox_status()
r = run_command(sys.argv[2], cwd=sys.argv[1], sandbox=status, timeout=60)
print(json.dumps({"confined": r.confined, "userns": getattr(status, "userns", None), "reason": status.reason,
                  "out": r.output, "code": r.exit_code}))
"""


_nobody_ok: list[str] = []


def _nobody_can_import() -> str:
    """Why ``nobody`` cannot run this checkout (empty when it can): a checkout or interpreter
    under a private home folder is out of its reach."""
    if not _nobody_ok:
        done = subprocess.run(
            ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
             sys.executable, "-c", "import jupyter_agent.tools.builtin.shell"],
            env={**os.environ, "PYTHONPATH": str(REPO), "HOME": "/tmp"}, capture_output=True,
            text=True, timeout=60, check=False)
        _nobody_ok.append("" if done.returncode == 0 else
                          (done.stderr.strip().splitlines() or ["?"])[-1])
    return _nobody_ok[0]


def sandboxed_bash(ws: Path, command: str, who: str, *, home: Path | None = None,
                   env: dict[str, str] | None = None) -> str:
    """Run ``command`` in the sandbox as ``who`` ("self": in this process; "nobody": in a
    child process under ``setpriv``), with the workspace ``ws`` and HOME ``home``."""
    if who == "self":
        saved = dict(os.environ)
        os.environ.update(env or {})
        if home is not None:
            os.environ["HOME"] = str(home)
        try:
            r = run_command(command, cwd=ws, sandbox=sandbox_status(), timeout=60)
        finally:
            os.environ.clear()
            os.environ.update(saved)
        assert r.confined
        return r.output
    why = _nobody_can_import()
    if why:
        pytest.skip(f"nobody cannot run this checkout here: {why}")
    child_env = {k: v for k, v in os.environ.items() if k not in _JUPYTER_VARS}
    child_env.update(env or {})
    child_env.update(HOME=str(home or ws), PYTHONPATH=str(REPO),
                     JUPYTER_AGENT_HOME=child_env.get("JUPYTER_AGENT_HOME_NOBODY",
                                                      str(ws.parent / "agent-home")))
    done = subprocess.run(
        ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
         sys.executable, "-c", _AS_USER, str(ws), command],
        env=child_env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["confined"], got["reason"]
    return str(got["out"])


# ------------------------------------------------------------------ 1. root kernel -> host root


@as_nobody_too
def test_proc_sys_and_sys_are_read_only_or_absent(sandboxed: None, place: Path,
                                                  who: str) -> None:
    ws = place / "ws"
    ws.mkdir()
    _own(place, who)
    before = Path("/proc/sys/kernel/core_pattern").read_text()
    # Open for writing only (append, no data): a read-only mount refuses at open time.
    out = sandboxed_bash(ws, "exec 3>>/proc/sys/kernel/core_pattern && echo OPENED; "
                             "exec 4>>/proc/sys/vm/drop_caches && echo OPENED2; "
                             "ls /sys/kernel 2>&1 | head -1; id -u", who)
    assert "OPENED" not in out, out
    assert "Read-only file system" in out or "Permission denied" in out
    assert "No such file or directory" in out  # /sys is not there at all
    assert out.splitlines()[-1] != "0"  # not root inside its namespace either
    assert Path("/proc/sys/kernel/core_pattern").read_text() == before


# ------------------------------------------------------------------ 2. the home folder as workspace


def _fake_home(home: Path) -> dict[str, Path]:
    files = {
        "ssh": home / ".ssh" / "id_ed25519",
        "kernel": home / ".local/share/jupyter/runtime/kernel-0a1b.json",
        "server": home / ".local/share/jupyter/runtime/jpserver-42.json",
        "gnupg": home / ".gnupg" / "private-keys-v1.d" / "k.key",
        "dotfile": home / ".netrc",
    }
    secrets = {
        "ssh": "-----BEGIN OPENSSH PRIVATE KEY----- SSHSECRET",
        "kernel": json.dumps({"key": "HMACSECRET", "shell_port": 1}),
        "server": json.dumps({"token": "TOKENSECRET", "port": 8888}),
        "gnupg": "GPGSECRET",
        "dotfile": "machine x login y password NETRCSECRET",
    }
    for name, path in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(secrets[name] + "\n")
    (home / "notebook.ipynb").write_text("{}")
    (home / "project").mkdir()
    return files


_SECRET_WORDS = ("SSHSECRET", "HMACSECRET", "TOKENSECRET", "GPGSECRET", "NETRCSECRET")


@as_nobody_too
def test_home_as_workspace_hides_keys_tokens_and_connection_files(
        sandboxed: None, place: Path, who: str, monkeypatch: pytest.MonkeyPatch) -> None:
    home = place / "home"
    home.mkdir()
    files = _fake_home(home)
    _own(place, who)
    out = sandboxed_bash(home, "cat .ssh/id_ed25519 .netrc .gnupg/private-keys-v1.d/k.key "
                               ".local/share/jupyter/runtime/*.json; grep -r SECRET . ; "
                               "echo ok > project/made.txt && echo WROTE", who, home=home)
    for word in _SECRET_WORDS:
        assert word not in out, out
    assert "WROTE" in out and (home / "project/made.txt").exists()  # the rest is usable
    if who != "self":
        return
    # The file tools obey the same list.
    monkeypatch.setenv("HOME", str(home))
    fns = make_builtin_functions(Workspace(home))
    for path in files.values():
        with pytest.raises(WorkspaceError, match="hidden"):
            fns["read_file"](os.path.relpath(path, home))
    found = fns["search_files"]("SECRET") + fns["glob_files"](".*/**") + fns["glob_files"](".*")
    for word in _SECRET_WORDS:
        assert word not in found
    assert ".ssh" not in found and ".local" not in found
    assert fns["read_file"]("notebook.ipynb") == "{}"


@as_nobody_too
@pytest.mark.parametrize("exists", [True, False], ids=["ipython-dir-exists", "no-ipython-dir"])
def test_ipython_startup_files_and_new_dotfiles_cannot_be_planted(
        sandboxed: None, place: Path, who: str, exists: bool,
        monkeypatch: pytest.MonkeyPatch) -> None:
    home = place / "home"
    startup = home / ".ipython/profile_default/startup"
    if exists:
        startup.mkdir(parents=True)
    else:
        home.mkdir()
    _own(place, who)
    out = sandboxed_bash(home, "mkdir -p .ipython/profile_default/startup; "
                               "echo 'import os' > .ipython/profile_default/startup/x.py; "
                               "echo evil >> .bashrc; echo evil > .bash_profile; "
                               "mkdir -p .local/lib/python3.11/site-packages && "
                               "echo 'import os' > .local/lib/python3.11/site-packages/x.pth; "
                               "mkdir -p .config/autostart; echo DONE", who, home=home)
    assert "DONE" in out
    assert not (startup / "x.py").exists()
    for name in (".bashrc", ".bash_profile", ".local", ".config"):
        assert not (home / name).exists(), name
    if who == "self":
        monkeypatch.setenv("HOME", str(home))
        fns = make_builtin_functions(Workspace(home))
        with pytest.raises(WorkspaceError, match="hidden"):
            fns["write_file"](".ipython/profile_default/startup/x.py", "import os\n")
        assert not (startup / "x.py").exists()


# ------------------------------------------------------------------ 3. the store from bash

_INSERT = ("python3 -c \"import sqlite3; c = sqlite3.connect('{db}'); "
           "c.execute('create table pwned(x)'); c.execute('insert into pwned values (1)'); "
           "c.commit(); print('INSERTED')\"; ls -a {folder}; echo x >> {db}; echo END")


@pytest.mark.parametrize("where", ["subfolder", "workspace-itself"])
def test_bash_cannot_write_the_store_in_the_workspace(sandboxed: None, tmp_path: Path,
                                                      where: str,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    folder = ws / "state" if where == "subfolder" else ws
    monkeypatch.setenv("JUPYTER_AGENT_HOME", str(folder))
    store = Store()
    store.close()
    db = store.path
    before = db.read_bytes()
    out = sandboxed_bash(ws, _INSERT.format(db=db, folder=folder), "self")
    assert "INSERTED" not in out and "END" in out, out
    assert db.read_bytes() == before
    # A planted write-ahead log would be replayed into the store at its next open.
    for suffix in ("-wal", "-shm"):
        companion = db.with_name(db.name + suffix)
        if companion.exists():
            companion.unlink()  # as after the last connection closed
    sandboxed_bash(ws, f"echo planted > {db}-wal; echo planted > {db}-shm", "self")
    for suffix in ("-wal", "-shm"):
        companion = db.with_name(db.name + suffix)
        assert not companion.exists() or b"planted" not in companion.read_bytes()
    reopened = Store()  # the empty -wal and -shm made to cover them are harmless
    assert reopened.path == db
    reopened.close()
    with sqlite3.connect(db) as conn:
        tables = {r[0] for r in conn.execute("select name from sqlite_master")}
    assert "pwned" not in tables
    with pytest.raises(WorkspaceError, match="hidden"):
        make_builtin_functions(Workspace(ws))["read_file"](os.path.relpath(db, ws))


def test_the_store_folder_is_hidden_before_the_store_exists(sandboxed: None, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    """A store planted by bash before the first open would be opened and trusted."""
    ws = tmp_path / "ws"
    ws.mkdir()
    monkeypatch.setenv("JUPYTER_AGENT_HOME", str(ws / "state"))  # neither folder nor file yet
    out = sandboxed_bash(ws, "mkdir -p state; echo planted > state/store.sqlite3 && "
                             "echo PLANTED", "self")
    assert "PLANTED" not in out
    assert not (ws / "state/store.sqlite3").exists()


def test_bash_cannot_plant_an_answer_cache_entry_in_the_workspace(
        sandboxed: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The answer cache lives beside the store (clients/cache.py); with a keyless local server
    its MAC key is public, so a planted entry would be a model answer the agent never got."""
    ws = tmp_path / "ws"
    ws.mkdir()
    monkeypatch.setenv("JUPYTER_AGENT_HOME", str(ws))  # the store folder is the workspace
    Store().close()
    out = sandboxed_bash(ws, "mkdir -p cache/ab && echo planted > cache/ab/x.json && "
                             "echo PLANTED", "self")
    assert "PLANTED" not in out
    assert not (ws / "cache/ab/x.json").exists()
    with pytest.raises(WorkspaceError, match="hidden"):
        make_builtin_functions(Workspace(ws))["write_file"]("cache/ab/y.json", "{}")


# ------------------------------------------------------------------ 4. venvs, git, cassettes


def test_a_venv_in_the_workspace_is_read_only(sandboxed: None, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    site = ws / ".venv/lib/python3.11/site-packages"
    site.mkdir(parents=True)
    (ws / ".venv/pyvenv.cfg").write_text("home = /usr/bin\n")
    out = sandboxed_bash(ws, "echo 'import os; os.system(\"id\")' > "
                             ".venv/lib/python3.11/site-packages/evil.pth; "
                             "mkdir .venv/lib/python3.12; touch src.py && echo OK", "self")
    assert "OK" in out and (ws / "src.py").exists()
    assert not (site / "evil.pth").exists() and not (ws / ".venv/lib/python3.12").exists()
    with pytest.raises(WorkspaceError, match="read-only"):
        make_builtin_functions(Workspace(ws))["write_file"](
            ".venv/lib/python3.11/site-packages/evil.pth", "import os\n")
    assert not (site / "evil.pth").exists()


@pytest.mark.parametrize("depth,hooks", [("", True), ("sub/", True), ("", False)],
                         ids=["workspace-repo", "nested-repo", "repo-without-hooks-folder"])
def test_git_hooks_and_config_are_read_only(sandboxed: None, tmp_path: Path,
                                            depth: str, hooks: bool) -> None:
    ws = tmp_path / "ws"
    git = ws / depth / ".git"
    git.mkdir(parents=True)
    if hooks:
        (git / "hooks").mkdir()
    (git / "config").write_text("[core]\n\tbare = false\n")
    out = sandboxed_bash(ws, f"mkdir -p {depth}.git/hooks; "
                             f"printf '#!/bin/sh\\nid\\n' > {depth}.git/hooks/pre-commit; "
                             f"printf '[core]\\n\\tfsmonitor = id\\n' >> {depth}.git/config; "
                             f"echo ref > {depth}.git/ORIG_HEAD && echo OK", "self")
    assert "OK" in out  # the rest of .git stays writable: git works in the sandbox
    assert not (git / "hooks/pre-commit").exists()
    assert "fsmonitor" not in (git / "config").read_text()
    fns = make_builtin_functions(Workspace(ws))
    for target in (f"{depth}.git/hooks/pre-commit", f"{depth}.git/config"):
        with pytest.raises(WorkspaceError, match="read-only"):
            fns["write_file"](target, "#!/bin/sh\nid\n")
    assert not (git / "hooks/pre-commit").exists()


def test_cassettes_are_read_only(sandboxed: None, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    cassette = ws / "analysis.cassette.json"
    cassette.write_text("{}")
    out = sandboxed_bash(ws, "echo '{\"x\": 1}' > analysis.cassette.json; echo END", "self")
    assert "END" in out and cassette.read_text() == "{}"
    with pytest.raises(WorkspaceError, match="read-only"):
        make_builtin_functions(Workspace(ws))["write_file"]("new.cassette.json", "{}")
    assert not (ws / "new.cassette.json").exists()


def test_bash_and_the_file_tools_hide_the_same_paths(sandboxed: None, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    _fake_home(home)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("JUPYTER_AGENT_HOME", str(home / "project/agent-state"))
    Store().close()
    b = boundary_for(home)
    mounts = b.hidden_mounts()
    assert {os.path.basename(p) for p, _ in mounts} >= {".ssh", ".local", ".gnupg", ".netrc",
                                                        "agent-state"}
    ws = Workspace(home)
    for path, _ in mounts:
        with pytest.raises(WorkspaceError, match="hidden"):
            ws.resolve(os.path.relpath(path, home))


# ------------------------------------------------------------------ 5. limits


@as_nobody_too
def test_a_fork_bomb_is_capped(sandboxed: None, place: Path, who: str) -> None:
    ws = place / "ws"
    ws.mkdir()
    _own(place, who)
    code = ("import os, time\nn = 0\nfor _ in range(200):\n    try:\n        pid = os.fork()\n"
            "    except OSError as e:\n        print('REFUSED', e.errno); break\n"
            "    if pid == 0:\n        time.sleep(30); os._exit(0)\n    n += 1\n"
            "print('FORKED', n)\n")
    (ws / "bomb.py").write_text(code)
    _own(place, who)
    out = sandboxed_bash(ws, "python3 bomb.py", who,
                         env={"JUPYTER_AGENT_SANDBOX_PROCESSES": "40"})
    forked = int(out.split("FORKED ")[1].split()[0])
    assert "REFUSED 11" in out and forked < 40, out  # EAGAIN


@as_nobody_too
def test_a_3_gib_allocation_is_refused(sandboxed: None, place: Path, who: str) -> None:
    ws = place / "ws"
    ws.mkdir()
    _own(place, who)
    # Address space only (mmap without touching it): harmless even where it is allowed.
    out = sandboxed_bash(ws, "python3 -c \"import mmap\ntry:\n    m = mmap.mmap(-1, 3 << 30)\n"
                             "    print('ALLOCATED')\nexcept OSError as e:\n"
                             "    print('REFUSED', e.errno)\"", who)
    assert "REFUSED 12" in out and "ALLOCATED" not in out, out  # ENOMEM


def test_the_limits_can_be_set_and_bad_values_are_refused(sandboxed: None, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    monkeypatch.setenv("JUPYTER_AGENT_SANDBOX_MEMORY_MB", "4096")
    out = sandboxed_bash(tmp_path, "ulimit -v; ulimit -u", "self")
    assert out.split()[0] == str(4096 * 1024)
    monkeypatch.setenv("JUPYTER_AGENT_SANDBOX_PROCESSES", "lots")
    with pytest.raises(ConfigError, match="JUPYTER_AGENT_SANDBOX_PROCESSES must be a whole"):
        run_command("true", cwd=tmp_path, sandbox=sandbox_status())


@pytest.fixture
def unix_listener(tmp_path: Path) -> Iterator[tuple[Path, Path, list[int]]]:
    ws = tmp_path / "ws"
    ws.mkdir()
    path = ws / "server.sock"
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(str(path))
    srv.listen(4)
    srv.settimeout(0.2)
    accepted: list[int] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except OSError:
                continue
            accepted.append(1)
            conn.close()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        yield ws, path, accepted
    finally:
        stop.set()
        t.join(2)
        srv.close()


_CONNECT = ("python3 -c \"import socket\ntry:\n    s = socket.socket(socket.AF_UNIX)\n"
            "    s.connect('server.sock'); print('CONNECTED')\nexcept OSError as e:\n"
            "    print('REFUSED', e.errno)\"")


def test_a_unix_socket_in_the_workspace_is_unreachable_without_network(
        sandboxed: None, unix_listener: tuple[Path, Path, list[int]]) -> None:
    ws, _path, accepted = unix_listener
    out = sandboxed_bash(ws, _CONNECT, "self")
    assert "REFUSED 13" in out and not accepted, out
    # socketpair (pipes between the command's own processes) still works.
    out = sandboxed_bash(ws, "python3 -c \"import socket; socket.socketpair(); print('PAIR')\"",
                         "self")
    assert "PAIR" in out
    # With the network allowed, a socket of the workspace is still unreachable: the command
    # sees the workspace through an overlay, which does not pass a connect on to the socket
    # below it (docs/sandbox.md); the network itself is reachable.
    r = run_command(_CONNECT, cwd=ws, sandbox=sandbox_status(), allow_network=True)
    assert "CONNECTED" in r.output if not r.checked else "REFUSED" in r.output, r
    assert r.checked or not accepted


# ------------------------------------------------------------------ 6. the store file itself


def test_the_store_is_private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUPYTER_AGENT_HOME", str(tmp_path / "new" / "jupyter-agent"))
    store = Store()  # open: the file, its -wal and -shm exist
    try:
        folder = store.path.parent
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
        for p in folder.iterdir():
            assert stat.S_IMODE(p.stat().st_mode) == 0o600, p  # the file, -wal and -shm
        assert {p.name for p in folder.iterdir()} >= {"store.sqlite3", "store.sqlite3-wal"}
    finally:
        store.close()


def test_an_old_world_readable_store_is_tightened(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "jupyter-agent"
    monkeypatch.setenv("JUPYTER_AGENT_HOME", str(folder))
    Store().close()
    os.chmod(folder, 0o755)
    os.chmod(folder / "store.sqlite3", 0o644)
    Store().close()
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE((folder / "store.sqlite3").stat().st_mode) == 0o600


def _one_line(exc: pytest.ExceptionInfo[ConfigError], path: Path) -> str:
    text = str(exc.value)
    assert "\n" not in text and str(path) in text
    assert "JUPYTER_AGENT_HOME" in text and "aside" in text
    return text


def test_a_garbage_store_gives_one_line_and_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite3"
    junk = b"this is not a database\n" * 100
    path.write_bytes(junk)
    with pytest.raises(ConfigError) as exc:
        Store(path)
    assert "damaged" in _one_line(exc, path)
    assert path.read_bytes() == junk
    assert sorted(p.name for p in tmp_path.iterdir()) == ["store.sqlite3"]


def test_a_folder_in_place_of_the_store_gives_one_line(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite3"
    path.mkdir()
    (path / "keep.txt").write_text("mine")
    with pytest.raises(ConfigError) as exc:
        Store(path)
    assert "folder" in _one_line(exc, path)
    assert (path / "keep.txt").read_text() == "mine"


def test_a_misplaced_store_home_gives_one_line(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    not_a_folder = tmp_path / "agent-home"
    not_a_folder.write_text("a file, not a folder")
    monkeypatch.setenv("JUPYTER_AGENT_HOME", str(not_a_folder))
    with pytest.raises(ConfigError) as exc:
        Store()
    _one_line(exc, not_a_folder / "store.sqlite3")
    assert not_a_folder.read_text() == "a file, not a folder"


def test_a_locked_store_gives_one_line(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite3"
    Store(path).close()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(ConfigError) as exc:
            Store(path, busy_timeout=0.2)
        assert "locked" in _one_line(exc, path)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    Store(path).close()  # nothing was damaged: it opens once the lock is gone


def test_a_damaged_store_is_one_line_in_a_cell(tmp_path: Path, server: object,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.testing.globalipapp import start_ipython
    from IPython.utils.capture import capture_output

    from jupyter_agent.session import reset_default_store

    folder = tmp_path / "agent-home"
    folder.mkdir()
    (folder / "store.sqlite3").write_bytes(b"garbage, not sqlite\n" * 50)
    monkeypatch.setenv("JUPYTER_AGENT_HOME", str(folder))
    reset_default_store()
    ip = start_ipython() or InteractiveShell.instance()
    assert ip.run_cell("%load_ext jupyter_agent").success
    with capture_output() as cap:
        ip.run_cell("%%chat\nHello?")
    shown = cap.stdout + cap.stderr + "".join(str(o.data) for o in cap.outputs)
    assert "Traceback" not in shown and "sqlite3." not in shown, shown
    lines = [line for line in shown.splitlines() if str(folder) in line]
    assert len(lines) == 1 and "JUPYTER_AGENT_HOME" in lines[0], shown
    assert (folder / "store.sqlite3").read_bytes() == b"garbage, not sqlite\n" * 50


_PY_ATTACK = """
import os
found = []
for path in {paths!r}:
    try:
        found.append(open(path).read().strip())
    except OSError as e:
        found.append('refused')
try:
    os.close(os.open('/proc/sys/kernel/core_pattern', os.O_WRONLY | os.O_APPEND))
    found.append('sysctl-open')
except OSError:
    found.append('sysctl-refused')
found
"""


def test_sandbox_python_runs_inside_the_same_sandbox(sandboxed: None, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from jupyter_agent.agents.sandbox import run_python_code

    ws = tmp_path / "ws"
    ws.mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_text("OUTSIDE-SECRET")
    home_key = tmp_path / "home" / ".ssh" / "id_rsa"
    home_key.parent.mkdir(parents=True)
    home_key.write_text("KEY-SECRET")
    code = _PY_ATTACK.format(paths=[str(outside), str(home_key)])
    r = run_python_code(code, workspace=ws)
    assert r.result == repr(["refused", "refused", "sysctl-refused"]), r
    monkeypatch.setenv("JUPYTER_AGENT_SANDBOX", "off")  # the sandbox is what refuses
    r = run_python_code(code, workspace=ws)
    assert r.result is not None and "OUTSIDE-SECRET" in r.result


def test_sandbox_python_has_the_process_limit(sandboxed: None, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from jupyter_agent.agents.sandbox import run_python_code

    monkeypatch.setenv("JUPYTER_AGENT_SANDBOX_PROCESSES", "30")
    code = ("import os, time\nn = 0\nfor _ in range(100):\n    try:\n        pid = os.fork()\n"
            "    except OSError:\n        break\n    if pid == 0:\n        time.sleep(30)\n"
            "        os._exit(0)\n    n += 1\nn")
    r = run_python_code(code, workspace=tmp_path, timeout=30)
    assert r.result is not None and int(r.result) < 30, r
