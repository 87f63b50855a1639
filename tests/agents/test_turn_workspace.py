"""A turn's default workspace: reused for the same folder for a second (a batch starts a turn
per item), never when the folder is gone or is another folder now."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from jupyter_agent.agents.turn.setup import _default_workspace
from jupyter_agent.base.errors import ConfigError


def test_the_same_folder_gives_the_same_workspace(tmp_path: Path) -> None:
    first = _default_workspace(None, str(tmp_path))
    assert _default_workspace(None, str(tmp_path)) is first
    assert first.root == Path(os.path.realpath(tmp_path))
    other = tmp_path / "other"
    other.mkdir()
    assert _default_workspace(None, str(other)).root == Path(os.path.realpath(other))


def test_a_removed_folder_still_fails_at_once(tmp_path: Path) -> None:
    folder = tmp_path / "proj"
    folder.mkdir()
    assert _default_workspace(None, str(folder)).root.name == "proj"
    shutil.rmtree(folder)
    with pytest.raises(ConfigError, match="does not exist"):
        _default_workspace(None, str(folder))


def test_a_folder_replaced_by_another_or_by_a_symlink_is_resolved_again(tmp_path: Path) -> None:
    folder = tmp_path / "proj"
    folder.mkdir()
    first = _default_workspace(None, str(folder))
    shutil.rmtree(folder)
    folder.mkdir()  # the same name, another folder (maybe the same inode: then all alike)
    assert _default_workspace(None, str(folder)).root == first.root
    shutil.rmtree(folder)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    folder.symlink_to(elsewhere)  # the name now leads somewhere else
    assert _default_workspace(None, str(folder)).root == Path(os.path.realpath(elsewhere))
