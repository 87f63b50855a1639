"""Issue 35: what the package makes in the shared temp folder is this user's alone.

The replay store sat at a predictable ``jupyter-agent-replay-<hash>`` in the temp folder and
was reused whoever owned it: another local user could make it first and read the replayed
prompts and answers (as root, SQLite's ``-wal``/``-shm`` came out 0666, owned by that user).
Now it lives in ``jupyter-agent-<uid>/replay-<hash>``, both made 0700 atomically, and a folder
that exists but is someone else's, open to others, or a link is never used.

Run as root, with folders pre-made by ``nobody`` (``os.chown``) and opened 0777, in a shared
temp folder of the test's own (``tempfile.tempdir``), so no other process's temp is touched.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.agents.chat import chat
from jupyter_agent.base.private_dir import UnsafeFolderError, private_dir
from jupyter_agent.replay import go_live, start
from jupyter_agent.replay.mode import replay_store_dir
from jupyter_agent.session import default_store
from tests.fakes.openai_server import ScriptedOpenAI, text

NOBODY = 65534
_IS_ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not _IS_ROOT, reason="making another user's folder needs root")


@pytest.fixture
def shared_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A sticky, world-writable temp folder, as /tmp is, used as the process's temp folder."""
    shared = tmp_path / "shared-tmp"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    monkeypatch.setattr(tempfile, "tempdir", str(shared))
    yield shared
    go_live()


def _recorded(server: ScriptedOpenAI, cassette: Path) -> None:
    server.enqueue(text("Apples are red."))
    start("record", cassette)
    chat("Tell me about apples.")
    go_live()


def _planted(path: Path, mode: int = 0o777) -> tuple[int, int]:
    """``path`` made by ``nobody``, open to all, with a file in it: (inode, owner)."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "planted.txt").write_text("nobody was here")
    for p in (path, path / "planted.txt"):
        os.chown(p, NOBODY, NOBODY)
    os.chmod(path, mode)
    st = os.lstat(path)
    return st.st_ino, st.st_uid


def _replays_privately(cassette: Path, offline: Any, *, not_in: Path) -> Path:
    offline()
    with pytest.warns(UserWarning, match="not used"):
        start("replay", cassette)
    assert chat("Tell me about apples.").answer == "Apples are red."
    store = default_store().path
    folder = store.parent
    assert not str(store).startswith(str(not_in) + os.sep)
    st = os.lstat(folder)
    assert stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid()
    assert stat.S_IMODE(st.st_mode) == 0o700
    return folder


@needs_root
def test_a_replay_folder_made_first_by_another_user_is_never_used(
        server: ScriptedOpenAI, shared_tmp: Path, tmp_path: Path, offline: Any) -> None:
    cassette = tmp_path / "c.cassette.json"
    _recorded(server, cassette)
    target = replay_store_dir(cassette)
    planted = target if target.parent == shared_tmp else target.parent
    ino, uid = _planted(planted)
    _replays_privately(cassette, offline, not_in=planted)
    # Untouched: the same folder, still that user's, holding only what they put there.
    st = os.lstat(planted)
    assert (st.st_ino, st.st_uid) == (ino, uid)
    assert sorted(p.name for p in planted.rglob("*")) == ["planted.txt"]


@needs_root
def test_a_replay_folder_inside_ours_but_made_by_another_user_is_never_used(
        server: ScriptedOpenAI, shared_tmp: Path, tmp_path: Path, offline: Any) -> None:
    cassette = tmp_path / "c.cassette.json"
    _recorded(server, cassette)
    target = replay_store_dir(cassette)
    private_dir(target.parent) if target.parent != shared_tmp else None
    _planted(target)
    _replays_privately(cassette, offline, not_in=target)
    assert sorted(p.name for p in target.rglob("*")) == ["planted.txt"]


def test_a_link_or_an_open_folder_of_ours_is_never_used(
        server: ScriptedOpenAI, shared_tmp: Path, tmp_path: Path, offline: Any) -> None:
    cassette = tmp_path / "c.cassette.json"
    _recorded(server, cassette)
    target = replay_store_dir(cassette)
    if target.parent == shared_tmp:  # one folder level only: plant at the store's folder
        target.mkdir(mode=0o755)
        os.chmod(target, 0o755)
        _replays_privately(cassette, offline, not_in=target)
        return
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    target.parent.symlink_to(elsewhere)  # a link to a private folder is still a link
    _replays_privately(cassette, offline, not_in=elsewhere)
    go_live()
    target.parent.unlink()
    target.parent.mkdir(mode=0o700)
    os.chmod(target.parent, 0o755)  # ours, but readable by all
    _replays_privately(cassette, offline, not_in=target.parent)
    assert list(target.parent.iterdir()) == []


def test_a_fresh_replay_store_is_private_and_survives_in_its_folder(
        server: ScriptedOpenAI, shared_tmp: Path, tmp_path: Path, offline: Any) -> None:
    cassette = tmp_path / "c.cassette.json"
    _recorded(server, cassette)
    offline()
    start("replay", cassette)
    assert chat("Tell me about apples.").answer == "Apples are red."
    folder = default_store().path.parent
    assert folder == replay_store_dir(cassette)
    for f in (folder, folder.parent):
        st = os.lstat(f)
        assert st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) == 0o700, f
    go_live()


def test_private_dir_refuses_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    (tmp_path / "link").symlink_to(tmp_path)
    (tmp_path / "open").mkdir()
    os.chmod(tmp_path / "open", 0o777)
    for name, why in (("file", "not a folder"), ("link", "not a folder"),
                      ("open", "open to other users")):
        with pytest.raises(UnsafeFolderError) as exc:
            private_dir(tmp_path / name)
        assert why in str(exc.value) and "\n" not in str(exc.value)
    assert stat.S_IMODE(os.lstat(private_dir(tmp_path / "new")).st_mode) == 0o700
