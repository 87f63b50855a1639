"""Nothing a sandboxed command writes runs outside the sandbox unless a person kept it (issue
35): every ``bash`` and ``sandbox_python`` call runs over an overlay of the workspace, and
its changes are judged on the final state they leave (docs/security.md, "By effect").

Each attack is one the old path-based boundary let through (a new module of a name nothing
installed has, a ``.git`` replaced by a rename, a venv copied back with a ``.pth``, the store's
folder renamed) or a variant (a nested repository, a ``.git`` file, a package folder, a hard
link, a rename three folders up, a symlink swap, a copy-back). After each, what runs outside
(the kernel's next ``import``, the user's ``git status``, Python's start-up, the store) is run
for real, and the workspace is compared with what it was. Keep, Discard and Undo are then a
person's: ``%agent`` commands in a real IPython shell.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from jupyter_agent import sandbox
from jupyter_agent.tools.builtin import Workspace, make_builtin_functions, sandbox_status

pytestmark = [
    pytest.mark.timeout(180),
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed"),
    pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="Linux only"),
]

_MARK = "open(__import__('os').path.join(%r, 'MARKER'), 'w')"


def bash(ws: Path, command: str) -> str:
    out = make_builtin_functions(Workspace(ws))["bash"](command)
    assert isinstance(out, str)
    return out


def tree(folder: Path) -> dict[str, str]:
    """Every path under ``folder`` with its content's hash (or link target, or 'dir')."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = str(p.relative_to(folder))
            if p.is_symlink():
                out[rel] = "-> " + os.readlink(p)
            elif p.is_dir():
                out[rel] = "dir"
            else:
                out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def git(ws: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(ws.parent)}
    return subprocess.run(["git", "-C", str(ws), *args], capture_output=True, text=True,
                          env=env, timeout=60, check=False)


def repo(ws: Path) -> None:
    for args in (["init", "-q"], ["config", "user.email", "a@b"], ["config", "user.name", "a"]):
        assert git(ws, *args).returncode == 0
    (ws / "README").write_text("hi\n")
    assert git(ws, "add", "README").returncode == 0
    assert git(ws, "commit", "-qm", "one").returncode == 0


def kernel_import(ws: Path, code: str) -> subprocess.CompletedProcess[str]:
    """``code`` run the way the kernel's next cell would: the workspace first on sys.path."""
    return subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, ''); " + code],
                          cwd=ws, capture_output=True, text=True, timeout=60, check=False)


def last_id(ws: Path) -> str:
    text = sandbox.changes_text(str(ws))
    return text.splitlines()[-1].split()[0]


# ------------------------------------------------------------------ 1. a planted module


@pytest.mark.parametrize("plant", [
    "echo \"{mark}\" > pyarrow.py",                                   # a module
    "mkdir -p pyarrow && echo \"{mark}\" > pyarrow/__init__.py",      # a package folder
    "mkdir -p pyarrow/ns && echo \"{mark}\" > pyarrow/ns/core.py",    # a namespace package
    "echo x > helpers.txt && echo \"{mark}\" > notes.txt && ln notes.txt pyarrow.py",  # link
    "mkdir -p a/b/c && echo \"{mark}\" > a/b/c/pyarrow.py && mv a/b/c/pyarrow.py . ",
])
def test_a_planted_module_is_held_not_imported(ws: Path, plant: str) -> None:
    """Break 1: ``pyarrow`` is not installed, so the old shadow check let ``pyarrow.py``
    through, and the next ``import pandas`` (which tries ``import pyarrow``) ran it in the
    kernel. Now any module the command leaves in an import folder is held: the optional
    import fails as if nothing were there, until a person keeps it."""
    out = bash(ws, plant.format(mark=_MARK % str(ws)))
    assert "a module the kernel could import: held until a person keeps it" in out, out
    done = kernel_import(ws, "\ntry:\n    import pyarrow.ns.core\nexcept ImportError:\n"
                             "    print('OPTIONAL-MISSING')")
    assert "OPTIONAL-MISSING" in done.stdout, done
    assert not (ws / "MARKER").exists()
    assert not (ws / "pyarrow.py").exists() and not (ws / "pyarrow").exists()
    # The agent's next command sees what it wrote (the held layer is stacked below it).
    assert "pyarrow" in bash(ws, "ls")


def test_keep_makes_a_held_module_importable_and_discard_restores(
        ws: Path, ip: object) -> None:
    """Only a person decides: ``%agent keep ID`` applies the held module, ``%agent discard
    ID`` deletes it and the workspace is exactly as before."""
    (ws / "data.csv").write_text("a,b\n")
    before = tree(ws)
    bash(ws, "echo 'VALUE = 42' > mymod.py")
    rid = last_id(ws)
    assert tree(ws) == before
    run = ip.run_cell  # type: ignore[attr-defined]
    assert run(f"%agent discard {rid}").success
    assert tree(ws) == before
    assert "mymod" not in bash(ws, "ls")  # discarded: later commands no longer see it
    bash(ws, "echo 'VALUE = 42' > mymod.py")
    rid = last_id(ws)
    assert run(f"%agent keep {rid}").success
    assert kernel_import(ws, "import mymod; print(mymod.VALUE)").stdout.strip() == "42"
    r = run(f"%agent keep {rid}")  # twice: one line, nothing changes
    assert not r.success or r.error_in_exec is None


# ------------------------------------------------------------------ 2. git, at any depth


_FSMONITOR = "git config -f {git}/config core.fsmonitor 'touch {ws}/MARKER; false'"


@pytest.mark.parametrize("attack", [
    # break 2: the .git folder renamed, a new one with core.fsmonitor
    "mv .git old && mkdir .git && cp -r old/. .git/ && " + _FSMONITOR + " && rm -rf old",
    # a copy-back through /tmp
    "cp -a .git /tmp/g && " + _FSMONITOR.replace("{git}", "/tmp/g") + " && rm -rf .git "
    "&& cp -a /tmp/g .git",
    # a hard link to the config under another name, then written through it
    "ln .git/config cfg.txt && printf '[core]\\n\\tfsmonitor = touch {ws}/MARKER\\n' >> cfg.txt",
    # a symlink swap: .git becomes a link to a repository the command made
    "cp -a .git /tmp/g && " + _FSMONITOR.replace("{git}", "/tmp/g") + " && rm -rf .git "
    "&& ln -s /tmp/g .git",
    # a .git FILE pointing elsewhere
    "cp -a .git /tmp/g && " + _FSMONITOR.replace("{git}", "/tmp/g") + " && rm -rf .git "
    "&& echo 'gitdir: /tmp/g' > .git",
])
def test_a_replaced_git_never_runs_at_the_users_git_status(ws: Path, attack: str) -> None:
    repo(ws)
    before = tree(ws / ".git")
    out = bash(ws, attack.format(ws=ws, git=".git"))
    assert "git metadata: held until a person keeps it" in out, out
    status = git(ws, "status", "--short")
    assert status.returncode == 0, status
    assert not (ws / "MARKER").exists(), "git ran the planted fsmonitor"
    assert (ws / ".git").is_dir() and not (ws / ".git").is_symlink()
    assert tree(ws / ".git") == before
    # Discard: the user's .git is whole (it was never touched).
    sandbox.discard(last_id(ws))
    assert tree(ws / ".git") == before


def test_a_nested_repository_renamed_three_folders_up_is_held(ws: Path) -> None:
    """A repository at ``a/b/c`` (its ``.git`` not at the top): the command renames ``a``,
    copies it back and sets ``core.fsmonitor`` in the copy."""
    inner = ws / "a" / "b" / "c"
    inner.mkdir(parents=True)
    repo(inner)
    before = tree(ws / "a")
    out = bash(ws, "mv a z && cp -r z a && " + _FSMONITOR.format(ws=ws, git="a/b/c/.git")
               + " && rm -rf z")
    assert "git metadata: held" in out, out
    assert git(inner, "status").returncode == 0
    assert not (ws / "MARKER").exists()
    assert tree(ws / "a") == before


def test_a_submodule_folder_replaced_by_rename_of_its_parent_is_held(ws: Path) -> None:
    """``sub/.git`` falls through a rename of ``sub`` (break 2's nested variant)."""
    (ws / "sub").mkdir()
    repo(ws / "sub")
    out = bash(ws, "mv sub s2 && mkdir sub && cp -r s2/. sub/ && "
               + _FSMONITOR.format(ws=ws, git="sub/.git") + " && rm -rf s2")
    assert "held" in out, out
    git(ws / "sub", "status")
    assert not (ws / "MARKER").exists()


# ------------------------------------------------------------------ 3. a venv copied back


def test_a_venv_renamed_and_copied_back_with_a_pth_is_held(ws: Path) -> None:
    """Break 3: the folder holding a venv is renamed and copied back with a ``.pth``, which
    runs at the next Python start. The venv is judged by its final state (``pyvenv.cfg``)."""
    site = ws / "envs" / "venv" / "lib" / "site-packages"
    site.mkdir(parents=True)
    (ws / "envs" / "venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (site / "ok.py").write_text("x = 1\n")
    before = tree(ws)
    out = bash(ws, "mv envs e2 && cp -r e2 envs && echo \"import os; "
               + _MARK % str(ws) + "\" > envs/venv/lib/site-packages/evil.pth && rm -rf e2")
    assert "held" in out, out
    assert tree(ws) == before
    subprocess.run([sys.executable, "-c", f"import site; site.addsitedir({str(site)!r})"],
                   timeout=60, check=False)
    assert not (ws / "MARKER").exists()


@pytest.mark.parametrize("name", ["x.pth", "sitecustomize.py", ".envrc", ".gitattributes",
                                  ".gitmodules", "ipython_config.py", "t.cassette.json"])
def test_every_class_by_name_is_held(ws: Path, name: str) -> None:
    out = bash(ws, f"mkdir -p deep/er && echo x > deep/er/{name}")
    assert "held until a person keeps it" in out, out
    assert not (ws / "deep" / "er" / name).exists()


# ------------------------------------------------------------------ 4. the store's folder


def test_the_stores_parent_renamed_shows_no_transcript_and_changes_nothing(
        ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Break 4: with the store inside the workspace, the command renamed the store's parent
    folder (the hidden mount stayed at the old path) and read every transcript. Through the
    overlay a folder rename is a copy, made of what the command can see: the store stays
    hidden, and what it writes at the store's place is held."""
    from jupyter_agent.session.store import Store

    home = ws / "data" / "agent"
    monkeypatch.setenv("JUPYTER_AGENT_HOME", str(home))
    from jupyter_agent.base.state import STATE
    STATE.reset()
    store = Store(home / "store.sqlite3")
    store.close() if hasattr(store, "close") else None
    (home / "store.sqlite3").write_bytes((home / "store.sqlite3").read_bytes()
                                         + b"TRANSCRIPT-SECRET")
    before = (home / "store.sqlite3").read_bytes()
    out = bash(ws, "mv data d2; cat d2/agent/store.sqlite3 2>&1 | grep -a -c TRANSCRIPT; "
               "mkdir -p data/agent; echo junk > data/agent/store.sqlite3; ls d2/agent | wc -l")
    assert "TRANSCRIPT-SECRET" not in out
    assert (home / "store.sqlite3").read_bytes() == before, out
    assert all(p.stat().st_size == 0 for p in home.glob("store.sqlite3-*")), out


# ------------------------------------------------------------------ undo


def test_undo_restores_exactly_and_refuses_a_path_changed_since(ws: Path) -> None:
    (ws / "a.txt").write_text("old a\n")
    (ws / "c.txt").write_text("old c\n")
    (ws / "d").mkdir()
    (ws / "d" / "e.txt").write_text("e\n")
    before = tree(ws)
    out = bash(ws, "echo new > a.txt; echo b > b.txt; rm c.txt; rm -rf d; mkdir -p n/m; "
               "echo z > n/m/z.txt")
    assert "%agent" not in out, out  # the model gets no id: only a person decides
    rid = last_id(ws)
    listed = sandbox.changes_text(str(ws))
    assert "5 applied" in listed or "applied" in listed, listed
    assert (ws / "a.txt").read_text() == "new\n" and not (ws / "c.txt").exists()
    assert sandbox.undo(rid).startswith("Undid")
    assert tree(ws) == before
    with pytest.raises(sandbox.DecisionError, match="already undone"):
        sandbox.undo(rid)
    bash(ws, "echo newer > a.txt")
    rid = last_id(ws)
    (ws / "a.txt").write_text("the person's own edit\n")
    with pytest.raises(sandbox.DecisionError, match=r"refused: `a.txt` changed since"):
        sandbox.undo(rid)
    assert (ws / "a.txt").read_text() == "the person's own edit\n"


def test_a_symlinked_workspace_folder_is_never_written_through(ws: Path, tmp_path: Path) -> None:
    """A folder of the workspace replaced by a symlink (the command cannot: it changes only
    its overlay) is never followed when changes are applied."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (ws / "sub").mkdir()
    run = sandbox.OverlayRun.start(str(ws))
    assert run is not None
    os.makedirs(os.path.join(run.upper, "sub"))
    Path(run.upper, "sub", "f.txt").write_text("x")
    (ws / "sub").rmdir()
    (ws / "sub").symlink_to(outside)  # swapped after the command, before the check
    rec = run.finish("bash", "test")
    assert not (outside / "f.txt").exists(), rec
    assert not os.listdir(outside)


# ------------------------------------------------------------------ only a person decides


def test_a_model_cannot_keep_anything(ws: Path, server: object) -> None:
    """The real loop, the real client, the scripted server: a model writes a module, then
    asks to keep it in every way it has (its answer, a tool of that name). It stays held."""
    from jupyter_agent.agents.toolloop import toolloop
    from tests.fakes.openai_server import call, text, tool_calls

    server.enqueue(  # type: ignore[attr-defined]
        tool_calls([call("bash", {"command": "echo 'x = 1' > mymod.py"}, id="b1")]),
        tool_calls([call("keep", {"id": "all"}, id="k1")]),
        text("%agent keep all"))
    run = toolloop("Write mymod.", tools=["bash"], auto_approve=True)
    assert run.status in ("done", "error"), run
    assert not (ws / "mymod.py").exists()
    assert "held" in sandbox.changes_text(str(ws))


def test_sandbox_python_is_checked_the_same_way(ws: Path) -> None:
    from jupyter_agent.agents.sandbox import run_python_code

    r = run_python_code("open('pyarrow.py', 'w').write('x = 1')\nopen('out.txt', 'w').write('ok')",
                        workspace=ws, memory_mb=None)
    assert "a module the kernel could import: held" in r.stderr, r
    assert (ws / "out.txt").read_text() == "ok"
    assert not (ws / "pyarrow.py").exists()


# ------------------------------------------------------------------ memory of the whole tree


@pytest.mark.skipif(os.geteuid() != 0, reason="control groups are made for a root kernel only")
def test_the_memory_of_a_whole_process_tree_is_bounded(
        ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Memory was capped per process only (256 processes x 2 GiB). Eight processes of 150 MB
    each pass a per-process cap of 256 MB; together they pass the whole tree's cap (3 x 256
    MB: one process and the two memory-backed folders), where the kernel lets a memory group
    be made (docs/sandbox.md, "Limits")."""
    from jupyter_agent.sandbox.limits import PidsGroup

    probe = PidsGroup.create(8, 256)
    if probe is None or not probe.memory_bound:
        if probe is not None:
            probe.remove()
        pytest.skip("no memory control group can be made here")
    probe.remove()
    monkeypatch.setenv("JUPYTER_AGENT_SANDBOX_MEMORY_MB", "256")
    hog = ("python3 -c 'import time; b = bytearray(150 * 2**20); b[::4096] = b\"x\" * "
           "len(b[::4096]); time.sleep(2); print(\"SURVIVED\")'")
    out = bash(ws, " & ".join([hog] * 8) + " & wait")
    assert out.splitlines().count("SURVIVED") < 8, out
    one = bash(ws, hog)  # one alone fits
    assert "SURVIVED" in one.splitlines(), one


# ------------------------------------------------------------------ fallback, parallel calls


def test_without_an_overlay_the_result_says_so_and_require_refuses(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A workspace whose path cannot be given to the overlay (a ',' in it) runs with the
    read-only binds and every result says its changes were not checked; under
    ``JUPYTER_AGENT_SANDBOX=require`` the command is refused in one line instead."""
    odd = (tmp_path / "a,b").resolve()
    odd.mkdir()
    monkeypatch.chdir(odd)
    monkeypatch.delenv("JUPYTER_AGENT_SANDBOX", raising=False)
    assert sandbox_status().confined
    out = bash(odd, "echo x > f.txt")
    assert "[changes were not checked (the workspace path has a ',' or ':')" in out, out
    monkeypatch.setenv("JUPYTER_AGENT_SANDBOX", "require")
    from jupyter_agent.base.errors import ToolError

    with pytest.raises(ToolError, match="its changes cannot be checked here") as err:
        make_builtin_functions(Workspace(odd))["bash"]("echo y > g.txt")
    assert "\n" not in str(err.value)
    assert not (odd / "g.txt").exists()


def test_parallel_commands_each_apply_their_own_changes(ws: Path) -> None:
    """Tool calls of one round run in parallel: two commands over two overlays of the same
    workspace each apply their own files, and each is held or undone on its own."""
    import threading

    outs: dict[int, str] = {}

    def go(n: int) -> None:
        outs[n] = bash(ws, f"for i in $(seq 50); do echo {n} > f{n}_$i.txt; done; "
                           f"echo m > mod{n}.py")

    threads = [threading.Thread(target=go, args=(n,)) for n in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for n in range(3):
        assert "held" in outs[n], outs[n]
        assert len(list(ws.glob(f"f{n}_*.txt"))) == 50
        assert not (ws / f"mod{n}.py").exists()


def test_a_new_folder_is_applied_whole_and_its_undo_sees_later_edits(ws: Path) -> None:
    """A new folder with nothing held inside moves into the workspace in one rename (the
    check's cost follows what changed); Undo of it refuses once a person edited a file in it."""
    bash(ws, "mkdir -p out/deep && for i in $(seq 200); do echo $i > out/deep/$i.txt; done")
    rid = last_id(ws)
    assert len(list((ws / "out" / "deep").iterdir())) == 200
    assert "201 applied" in sandbox.changes_text(str(ws))
    (ws / "out" / "deep" / "7.txt").write_text("edited by the person\n")
    with pytest.raises(sandbox.DecisionError, match="changed since"):
        sandbox.undo(rid)
    assert (ws / "out" / "deep" / "7.txt").read_text() == "edited by the person\n"
    bash(ws, "mkdir -p fresh && echo 1 > fresh/a.txt")
    assert sandbox.undo(last_id(ws)).startswith("Undid")
    assert not (ws / "fresh").exists()
