"""The boundary attacked again as a whole (review of issue 19): holes found after the sandbox
and the file tools were drawn as an allow-list.

Each test failed on the code before its fix. Attacks run as this process's uid (root in CI)
and, where the uid changes the defence, as ``nobody`` through ``setpriv`` (the helpers of
``test_boundary_sandbox``). Nothing here writes outside a temporary folder: a system file is
only opened for appending (no data), or the command is refused before it runs.
"""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from jupyter_agent.base.errors import ToolError
from jupyter_agent.tools.builtin import Workspace, WorkspaceError, sandbox_status
from jupyter_agent.tools.builtin.files import glob_files, read_file, write_file
from jupyter_agent.tools.builtin.shell import bash, run_command

from . import test_boundary_sandbox as _b

# The fixtures and helpers of the first boundary review: same places, same ``nobody`` runs.
pytestmark = _b.pytestmark
sandboxed = _b.sandboxed
place = _b.place
as_nobody_too = _b.as_nobody_too
_own = _b._own
sandboxed_bash = _b.sandboxed_bash


# ------------------------------------------------------------------ a system folder as workspace


@pytest.mark.parametrize("root", ["/", "/var", "/home", "/tmp", "/sys/kernel"])
def test_a_system_folder_is_never_a_workspace(sandboxed: None, root: str) -> None:
    """A notebook at ``/`` (a root container started from the top) made ``/`` the workspace:
    bound read-write into the sandbox, it brought back ``/sys`` (cgroup ``release_agent``),
    ``/var`` (package scripts, cron), ``/boot`` and every user's home, and ``read_file`` read
    ``/etc/shadow``. Every tool now refuses such a workspace in one line, before anything runs."""
    if not os.path.isdir(root):
        pytest.skip(f"{root} does not exist here")
    ws = Workspace(root)
    probe = "test -w /var && echo VAR-WRITABLE; ls -d /sys/fs 2>/dev/null && echo SYS-THERE"
    with pytest.raises(ToolError) as got:
        bash(ws, probe)
    message = str(got.value)
    assert "system" in message and "project folder" in message and "\n" not in message
    with pytest.raises(ToolError):  # the sandbox itself refuses, whoever calls it
        run_command(probe, cwd=root, sandbox=sandbox_status(), timeout=30)
    for call in (lambda: read_file(ws, "etc/passwd"), lambda: glob_files(ws, "*"),
                 lambda: write_file(ws, "jupyter-agent-probe.txt", "x")):
        with pytest.raises(WorkspaceError, match="system"):
            call()
    assert not os.path.exists(os.path.join(root, "jupyter-agent-probe.txt"))


def test_project_folders_near_the_system_still_work(sandboxed: None, place: Path) -> None:
    """The refusal is narrow: a project folder (here under ``/tmp``) is no system folder."""
    ws = place / "proj"
    ws.mkdir()
    assert "hello" in bash(Workspace(ws), "echo hello > f.txt; cat f.txt")
    assert read_file(Workspace(ws), "f.txt").startswith("hello")


# ------------------------------------------------------------------ /proc as a whole


@as_nobody_too
def test_proc_is_read_only_as_a_whole(sandboxed: None, place: Path, who: str) -> None:
    """bubblewrap covers ``/proc/sys``, ``/proc/irq`` and ``/proc/bus`` (when it can), and the
    sandbox ``/proc/sys``; the rest of ``/proc`` stayed writable, and to the host a root
    kernel's command is uid 0: proc files that check only the file mode (``/proc/fs/cifs``
    settings, ``/proc/acpi/wakeup``, the command's own ``/proc/self/*``) took its writes. Every
    ``/proc`` mount inside the sandbox is now read-only."""
    ws = place / "ws"
    ws.mkdir()
    _own(place, who)
    out = sandboxed_bash(ws, "grep -E '^[0-9]+ [0-9]+ [^ ]+ [^ ]+ /proc(/| )' "
                             "/proc/self/mountinfo; exec 3>>/proc/self/oom_score_adj "
                             "&& echo OPENED", who)
    # mountinfo: id parent dev root MOUNT-POINT OPTIONS ...
    mounts = [line.split() for line in out.splitlines() if line[:1].isdigit()]
    assert any(m[4] == "/proc" for m in mounts), out
    for m in mounts:
        assert "ro" in m[5].split(","), f"{m[4]} is mounted read-write: {out}"
    assert "OPENED" not in out, out


# ------------------------------------------------------------------ write_file against a swap


_SWAPPER = """
import os, sys
ws, out = sys.argv[1], sys.argv[2]
while True:
    try:
        os.rename(ws + '/d', ws + '/d.real')
        os.symlink(out, ws + '/d')
        for _ in range(20000):
            pass
        os.rename(ws + '/d', ws + '/d.link')
        os.rename(ws + '/d.real', ws + '/d')
        os.unlink(ws + '/d.link')
        for _ in range(20000):
            pass
    except OSError:
        pass
"""


def test_write_file_never_follows_a_folder_swapped_for_a_link(tmp_path: Path) -> None:
    """Tool calls of one round run in parallel, so a ``bash`` command can swap a folder for a
    symlink to outside while ``write_file`` runs beside it: the path was checked, then the
    temporary file and the rename followed the link (a file landed in the outside folder
    within a few dozen tries). The write now goes through the parent folder opened one
    component at a time without following a link."""
    import subprocess
    import sys

    ws, outside = tmp_path / "ws", tmp_path / "outside"
    (ws / "d").mkdir(parents=True)
    outside.mkdir()
    swapper = subprocess.Popen([sys.executable, "-c", _SWAPPER, str(ws), str(outside)])
    workspace = Workspace(ws)

    def attempts(name: str) -> int:  # one of the parallel tool calls of a round
        done = 0
        for _ in range(500):
            try:
                write_file(workspace, f"d/{name}.txt", "planted")
                done += 1
            except (WorkspaceError, OSError):
                pass  # refused while it was a link: the right answer
            if os.listdir(outside):
                break
        return done

    try:
        with ThreadPoolExecutor(4) as pool:
            written = sum(pool.map(attempts, ["a", "b", "c", "d"]))
    finally:
        swapper.kill()
        swapper.wait()
    assert not os.listdir(outside), "write_file wrote outside the workspace"
    assert written, "no write ever succeeded"


# ------------------------------------------------------------------ run later, outside the sandbox


def test_submodule_and_deeper_git_folders_envs_and_path_folders_are_read_only(
        sandboxed: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only ``.git/hooks`` and ``.git/config`` at the top and one folder down were read-only,
    and only virtual environments one folder down. A workspace that is the home folder holds
    ``~/src/app/.git`` and ``~/src/app/.venv`` two levels down; a repository keeps each
    submodule's hooks and config in ``.git/modules/NAME`` (git runs them, and a submodule's
    ``core.fsmonitor``, when the parent repository is used); a conda installation has no
    ``pyvenv.cfg``; and a folder on ``PATH`` (``~/bin``) holds programs run by name. A command
    wrote all of them; now ``write_file`` refuses them and what ``bash`` writes there is held
    (the final-state check, docs/sandbox.md): the real files are unchanged."""
    ws = tmp_path / "ws"
    planted = {
        "submodule hook": ".git/modules/lib/hooks/post-checkout",
        "submodule config": ".git/modules/lib/config",
        "nested submodule hook": ".git/modules/lib/modules/deep/hooks/post-checkout",
        "deeper hook": "src/app/.git/hooks/pre-commit",
        "deeper config": "src/app/.git/config",
        "deeper venv": "src/app/.venv/lib/site-packages/evil.pth",
        "conda": "miniconda3/lib/site-packages/evil.pth",
        "PATH folder": "tools/bin/git",
    }
    for gitdir in (".git", ".git/modules/lib", ".git/modules/lib/modules/deep", "src/app/.git"):
        (ws / gitdir / "hooks").mkdir(parents=True)
        (ws / gitdir / "HEAD").write_text("ref: refs/heads/main\n")
        (ws / gitdir / "config").write_text("[core]\n")
    (ws / "src/app/.venv/lib/site-packages").mkdir(parents=True)
    (ws / "src/app/.venv/pyvenv.cfg").write_text("home = /usr/bin\n")
    (ws / "miniconda3/lib/site-packages").mkdir(parents=True)
    (ws / "miniconda3/conda-meta").mkdir()
    (ws / "tools/bin").mkdir(parents=True)
    monkeypatch.setenv("PATH", f"{ws / 'tools/bin'}{os.pathsep}{os.environ['PATH']}")
    workspace = Workspace(ws)
    script = "; ".join(f"echo x >> {p} && echo 'WROTE {what}'" for what, p in planted.items())
    before = {p: (ws / p).read_bytes() if (ws / p).exists() else None
              for p in planted.values()}
    out = bash(workspace, script)
    assert "held until a person keeps it" in out, out
    assert {p: (ws / p).read_bytes() if (ws / p).exists() else None
            for p in planted.values()} == before, out
    for p in planted.values():
        with pytest.raises(WorkspaceError, match="read-only"):
            write_file(workspace, p, "x")
    # The rest stays a project: ordinary files next to them are written.
    assert "WROTE" in bash(workspace, "echo x > src/app/main.py && echo WROTE")
    assert write_file(workspace, "src/app/.git/info-note.txt", "x").startswith("Created")


# ------------------------------------------------------------------ the store's journal


_FORGE = """
import os, shutil, sqlite3
p = '/tmp/forge.db'
c = sqlite3.connect(p)
c.execute('pragma journal_mode=wal'); c.execute('pragma wal_autocheckpoint=0')
c.execute('create table pwned(x)'); c.execute("insert into pwned values ('planted')")
c.commit()
for suffix in ('-wal', '-journal'):
    try:
        shutil.copy(p + '-wal', 'store.sqlite3' + suffix)
        print('PLANTED' + suffix)
    except OSError as exc:
        print('refused', suffix, exc)
"""

_STORE_AS_USER = """
import json, sqlite3, sys
from jupyter_agent.session.store import Store
from jupyter_agent.tools.builtin import sandbox_status
from jupyter_agent.tools.builtin.shell import run_command
ws = sys.argv[1]
Store().close()
r = run_command("python3 forge.py", cwd=ws, sandbox=sandbox_status(), timeout=60)
store = Store()
mode = store.journal_mode
store.close()
tables = [t[0] for t in sqlite3.connect(ws + "/store.sqlite3").execute(
    "select name from sqlite_master")]
print(json.dumps({"out": r.output, "tables": tables, "mode": mode}))
"""


@as_nobody_too
def test_a_journal_planted_beside_a_closed_store_cannot_replace_it(
        sandboxed: None, place: Path, who: str) -> None:
    """When the store's folder is the workspace, only the store's files that existed were
    covered; a closed store has no ``-wal``, so a command planted one (the WAL of a database
    it made itself) and SQLite replayed it at the next open: the whole store was the
    command's. The store's files are now created empty before the command and covered."""
    import json
    import subprocess
    import sys

    ws = place / "agent-home"
    ws.mkdir()
    (ws / "forge.py").write_text(_FORGE)
    _own(place, who)
    env = {k: v for k, v in os.environ.items() if k not in _b._JUPYTER_VARS}
    env.update(HOME=str(place), JUPYTER_AGENT_HOME=str(ws), PYTHONPATH=str(_b.REPO))
    prefix = ([] if who == "self" else ["setpriv", f"--reuid={_b.NOBODY}",
                                        f"--regid={_b.NOBODY}", "--clear-groups"])
    done = subprocess.run([*prefix, sys.executable, "-c", _STORE_AS_USER, str(ws)], env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert "PLANTED" not in got["out"], got["out"]
    assert "pwned" not in got["tables"] and "sessions" in got["tables"], got
    assert got["mode"] == "wal"  # the empty covers left the store usable, in WAL mode


# ------------------------------------------------------------------ modules in the kernel's folder


_KERNEL_LIKE = """
import sys
from jupyter_agent.tools.builtin import Workspace, make_builtin_functions
assert sys.path[0] == ''  # like IPython: the working folder is imported from first
tools = make_builtin_functions(Workspace('.'))
print(tools['bash'](sys.argv[1]))
for path in ('colorsys.py', 'httpx/__init__.py'):
    try:
        print(tools['write_file'](path, 'open("MARKER-' + path[:3] + '", "w")'))
    except Exception as exc:
        print('REFUSED', exc)
"""


def test_a_module_planted_in_the_kernels_folder_never_shadows_an_installed_one(
        sandboxed: None, tmp_path: Path) -> None:
    """The kernel imports from its working folder first, and that folder is the workspace: a
    command wrote ``colorsys.py`` (or ``pandas/__init__.py``, ``jupyter_agent.py``) there, and
    the next ``import colorsys`` in the kernel (the next cell, or ``%load_ext jupyter_agent``
    at the next start) ran it unsandboxed, with the key. A new module there that shadows an
    importable one is now renamed after the call (the result says so), and ``write_file``
    refuses one; a module that shadows nothing stays."""
    import subprocess
    import sys

    ws = tmp_path / "ws"
    ws.mkdir()
    env = {**os.environ, "PYTHONPATH": str(_b.REPO)}
    plant = ("echo 'open(\"MARKER-bash\", \"w\")' > colorsys.py; mkdir json2 pandas; "
             "touch pandas/__init__.py; echo 'x = 1' > helpers.py; echo planted")
    done = subprocess.run([sys.executable, "-c", _KERNEL_LIKE, plant], cwd=ws, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    # The next kernel start imports the real modules.
    nxt = subprocess.run([sys.executable, "-c", "import colorsys, httpx; "
                          "print(colorsys.__file__)"], cwd=ws, env=env,
                         capture_output=True, text=True, timeout=60, check=False)
    assert not list(ws.glob("MARKER-*")), "a planted module ran at the next import"
    assert nxt.returncode == 0, nxt.stderr
    assert str(ws) not in nxt.stdout
    assert "planted" in done.stdout
    # Every module the command wrote is held, shadowing or not (docs/sandbox.md), until a
    # person keeps it; write_file still refuses a shadowing name.
    assert "a module the kernel could import: held" in done.stdout, done.stdout
    assert done.stdout.count("REFUSED") == 2, done.stdout
    assert not (ws / "helpers.py").exists() and not (ws / "colorsys.py").exists()


# ------------------------------------------------------------------ memory through tmpfs


@as_nobody_too
def test_files_in_memory_are_capped_like_memory(sandboxed: None, place: Path, who: str) -> None:
    """``/tmp``, ``/dev/shm`` and ``/dev`` are tmpfs, whose files are memory the per-process
    address-space limit does not count: with a 64 MB limit a command kept 200 MB there (each
    tmpfs would take half the host's RAM). Each is now capped at the memory figure, and
    ``/dev`` is read-only (its devices still work)."""
    ws = place / "ws"
    ws.mkdir()
    _own(place, who)
    out = sandboxed_bash(ws, "head -c 100M /dev/zero > /tmp/big && echo TMP-FULL; "
                             "head -c 100M /dev/zero > /dev/shm/big && echo SHM-FULL; "
                             "head -c 1M /dev/zero > /dev/big && echo DEV-FULL; "
                             "echo x > /dev/null && echo NULL-WORKS; "
                             "rm /tmp/big; head -c 1M /dev/zero > /tmp/small && echo SMALL-OK",
                         who, env={"JUPYTER_AGENT_SANDBOX_MEMORY_MB": "64"})
    assert "FULL" not in out, out
    assert "No space left on device" in out and "Read-only file system" in out, out
    assert "NULL-WORKS" in out
    assert "SMALL-OK" in out


def test_sandbox_python_gets_the_same_memory_cap_and_import_folder_check(
        sandboxed: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``sandbox_python`` runs in the same bubblewrap sandbox as ``bash``: its ``/tmp`` was
    uncapped and it could leave a module for the kernel to import, like ``bash``."""
    import subprocess
    import sys

    from jupyter_agent.agents.sandbox import run_python_code

    ws = tmp_path / "ws"
    ws.mkdir()
    monkeypatch.setenv("JUPYTER_AGENT_SANDBOX_MEMORY_MB", "64")
    r = run_python_code("open('/tmp/big', 'wb').write(b'0' * (100 << 20))", workspace=ws,
                        memory_mb=None)
    assert "No space left on device" in (r.error or "") + r.stderr, r
    # As in the kernel: its folder first on the import path.
    code = ("import sys; sys.path.insert(0, ''); from jupyter_agent.agents.sandbox import "
            "run_python_code as r; print(r(\"open('colorsys.py', 'w').write("
            "'open(\\\\'MARKER\\\\', \\\\'w\\\\')')\", workspace='.').stderr)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ws, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(_b.REPO)}, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr
    subprocess.run([sys.executable, "-c", "import colorsys"], cwd=ws, timeout=60, check=False)
    assert not (ws / "MARKER").exists()
    assert "a module the kernel could import: held" in done.stdout, done.stdout


# ------------------------------------------------------------------ nested user namespaces


_NESTED = ("python3 -c \"import ctypes; libc = ctypes.CDLL(None, use_errno=True); "
           "r = libc.unshare(0x10000000 | 0x40000000); "
           "caps = open('/proc/self/status').read().split('CapEff:')[1].split()[0]; "
           "print('NESTED' if r == 0 else 'refused', caps)\"")


@as_nobody_too
def test_no_nested_user_namespace_gives_back_capabilities(sandboxed: None, place: Path,
                                                          who: str) -> None:
    """The command is not root in its namespace, but it could make a nested user namespace
    (``unshare(CLONE_NEWUSER | CLONE_NEWNET)``) and hold every capability there over a new
    network namespace: the nf_tables and mount code that kernel exploits go through. Nested
    user namespaces are now off (bubblewrap's ``--disable-userns``, 0.8 and later)."""
    if not sandbox_status().userns:
        pytest.skip("the sandbox runs without a user namespace here")
    ws = place / "ws"
    ws.mkdir()
    _own(place, who)
    out = sandboxed_bash(ws, _NESTED, who)
    assert "NESTED" not in out, out
    assert "refused 0000000000000000" in out, out


# ------------------------------------------------------------------ end to end: a hostile model


def test_a_hostile_model_gets_none_of_it_end_to_end(
        sandboxed: None, tmp_path: Path, server: object,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The real loop over the real ``openai`` client and the scripted server: a hostile model
    whose ``bash`` the person allowed runs, in one round and in parallel, the attacks above (a
    module for the kernel to import, a tmpfs memory bomb, a nested user namespace, the
    kernel's environment) and a ``write_file`` that would shadow a module. None lands."""
    import subprocess
    import sys

    from jupyter_agent.agents.toolloop import toolloop
    from tests.fakes.openai_server import call, text, tool_calls

    ws = tmp_path / "ws"
    ws.mkdir()
    monkeypatch.chdir(ws)
    monkeypatch.syspath_prepend("")  # like IPython: the kernel's folder is imported from first
    monkeypatch.setenv("JUPYTER_AGENT_SANDBOX_MEMORY_MB", "64")
    attack = ("echo 'open(\"MARKER\", \"w\")' > colorsys.py; "
              "head -c 100M /dev/zero > /dev/shm/fill || echo SHM-CAPPED; "
              + _NESTED + "; cat /proc/1/environ /proc/$PPID/environ 2>/dev/null | tr '\\0' '\\n'"
              " | grep -c OPENAI_API_KEY; ls /sys 2>&1 | head -1")
    server.enqueue(tool_calls([  # type: ignore[attr-defined]
        call("bash", {"command": attack}, id="b1"),
        call("write_file", {"path": "json.py", "content": "open('MARKER', 'w')"}, id="w1"),
    ]), text("done"))
    run = toolloop("Tidy up.", tools=["bash", "write_file"], auto_approve=True)
    assert run.status == "done", run.error
    results = {m["tool_call_id"]: m["content"]
               for m in server.requests[1]["messages"]  # type: ignore[attr-defined]
               if m["role"] == "tool"}
    assert "a module the kernel could import: held" in results["b1"], results
    assert "SHM-CAPPED" in results["b1"] and "NESTED" not in results["b1"]
    assert "\n0\n" in results["b1"] and "sk-test-key" not in results["b1"]
    assert "No such file or directory" in results["b1"]  # no /sys
    assert "shadow the module 'json'" in results["w1"]
    subprocess.run([sys.executable, "-c", "import colorsys, json"], cwd=ws, timeout=60,
                   check=False)
    assert not (ws / "MARKER").exists()


# ------------------------------------------------------------------ secrets through prompt fields


def test_a_field_never_brings_a_key_into_a_prompt(server: object) -> None:
    """``{api_key}`` is refused in a cell and a ``--over`` template, but the check read only a
    field's first name: ``{os.environ[OPENAI_API_KEY]}`` sent the key to the model, and
    ``{x:{os.environ[OPENAI_API_KEY]}}`` printed it in the error. What the fields fill in is
    now checked against the known secrets, in a cell and in each batch item, and the error
    text is masked."""
    import json

    from IPython.core.error import UsageError

    import jupyter_agent.batch as batch_api
    from jupyter_agent.edge.magics import interpolate

    key = os.environ["OPENAI_API_KEY"]  # set by the server fixture
    ns = {"os": os, "x": "a", "cfg": type("Cfg", (), {"token": key})()}
    for cell in ("Say {os.environ[OPENAI_API_KEY]}", "Env: {os.environ}", "{cfg.token}"):
        with pytest.raises(UsageError, match="secret") as got:
            interpolate(cell, ns)
        assert key not in str(got.value)
    with pytest.raises(UsageError) as bad:
        interpolate("{x:{os.environ[OPENAI_API_KEY]}}", ns)
    assert key not in str(bad.value) and "[redacted]" in str(bad.value)
    assert interpolate("Say {x} and {{literal}}", ns) == "Say a and {literal}"
    res = batch_api.batch("Row {item}: {os.environ[OPENAI_API_KEY]}", ["a", "b"], kind="chat",
                          namespace={"os": os})
    assert list(res.results["status"]) == ["error", "error"], res.results
    sent = json.dumps(server.requests)  # type: ignore[attr-defined]
    assert key not in sent


# ------------------------------------------------------------------ what an approval card shows


def test_an_approval_card_shows_hidden_characters(server: object, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A person approves what the card shows. A model wrote ``echo done # <U+202E>...``: the
    direction control makes the browser draw the rest of the line reversed, so ``rm -rf ~``
    reads as a harmless comment (and ``\\r`` hides a line's start in a terminal). The card's
    rows now show such characters as escapes and say so; the call is unchanged."""
    from jupyter_agent.agents.toolloop import toolloop
    from tests.fakes.openai_server import call, text, tool_calls

    monkeypatch.chdir(tmp_path)
    command = "echo done # \u202e~ fr- mr;\u2066\nls\rok"
    server.enqueue(tool_calls([call("bash", {"command": command}, id="b1")]),  # type: ignore[attr-defined]
                   text("ok"))
    run = toolloop("Tidy up.", tools=["bash"], store=None)
    assert run.status == "ask"
    detail = run.view["ask"]["detail"]
    assert "\u202e" not in detail["command"] and "\\u202e" in detail["command"]
    assert "\\x0d" in detail["command"] and "\r" not in detail["command"]
    assert "hidden characters" in detail
    assert json.loads(detail["arguments"] if isinstance(detail["arguments"], str)
                      else json.dumps(detail["arguments"]))["command"] == command
