"""Workspace confinement: every hostile path is refused and nothing outside is touched."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from jupyter_agent.base.errors import ConfigError, ToolError
from jupyter_agent.tools.builtin import Workspace, WorkspaceError, make_builtin_functions


def test_resolve_a_relative_path_inside_the_workspace(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    assert ws.resolve("notes/a.txt") == tmp_path.resolve() / "notes" / "a.txt"
    assert ws.resolve(".") == ws.root
    assert ws.resolve("a/../b.txt") == ws.root / "b.txt"  # ".." that stays inside is fine
    assert ws.resolve(str(ws.root / "x.txt")) == ws.root / "x.txt"  # absolute but inside


def test_workspace_error_is_a_tool_error() -> None:
    assert issubclass(WorkspaceError, ToolError)


def test_missing_root_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        Workspace(tmp_path / "nope")
    assert Workspace(tmp_path / "new", create=True).root.is_dir()


@pytest.fixture
def layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A workspace next to an "outside" folder, with symlinks from one into the other."""
    ws = tmp_path / "ws"
    outside = tmp_path / "outside"
    home = tmp_path / "home"
    for folder in (ws, outside, home):
        folder.mkdir()
    (outside / "secret.txt").write_text("SECRET-OUTSIDE\n")
    (home / ".bashrc").write_text("SECRET-HOME\n")
    monkeypatch.setenv("HOME", str(home))  # "~" must not reach this, even if it were expanded
    (ws / "inside.txt").write_text("hello\n")
    (ws / "dirlink").symlink_to(outside, target_is_directory=True)
    (ws / "filelink").symlink_to(outside / "secret.txt")
    (ws / "dangling").symlink_to(outside / "created-through-link.txt")
    (ws / "sub").mkdir()
    (ws / "sub" / "up").symlink_to(tmp_path, target_is_directory=True)
    return {"ws": ws, "outside": outside, "home": home, "tmp": tmp_path}


def _snapshot(*folders: Path) -> dict[str, bytes]:
    """Every file under the folders (not following links) with its content."""
    found: dict[str, bytes] = {}
    for folder in folders:
        for dirpath, _, names in os.walk(folder):
            for name in names:
                p = Path(dirpath, name)
                if not p.is_symlink():
                    found[str(p)] = p.read_bytes()
    return found


def hostile_paths(layout: dict[str, Path]) -> list[str]:
    """The security table: each of these must be refused by every file tool."""
    return [
        "../../etc/passwd",
        "../outside/secret.txt",
        "a/../../x",
        "/etc/passwd",
        str(layout["outside"] / "secret.txt"),
        "~/.bashrc",
        "~",
        "ok\x00.txt",
        "dirlink/secret.txt",
        "filelink",
        "dangling",
        "sub/up/outside/secret.txt",
        "sub/up/home/.bashrc",
    ]


def test_resolve_refuses_every_hostile_path(layout: dict[str, Path]) -> None:
    ws = Workspace(layout["ws"])
    for path in hostile_paths(layout):
        with pytest.raises(WorkspaceError):
            ws.resolve(path)


@pytest.mark.parametrize("tool", ["read_file", "write_file", "search_files"])
def test_file_tools_refuse_hostile_paths_and_touch_nothing(layout: dict[str, Path],
                                                          tool: str) -> None:
    fns = make_builtin_functions(Workspace(layout["ws"]))
    before = _snapshot(layout["tmp"])
    for path in hostile_paths(layout):
        with pytest.raises(WorkspaceError) as info:
            if tool == "read_file":
                fns["read_file"](path)
            elif tool == "write_file":
                fns["write_file"](path, "PWNED")
            else:
                fns["search_files"]("SECRET", path=path)
        assert "SECRET" not in str(info.value)
    assert _snapshot(layout["tmp"]) == before  # nothing written anywhere, inside or out
    assert not (layout["outside"] / "created-through-link.txt").exists()


def test_error_messages_say_what_was_wrong(layout: dict[str, Path]) -> None:
    ws = Workspace(layout["ws"])
    cases = {
        "../../etc/passwd": "escapes the workspace",
        "/etc/passwd": "Absolute path",
        "~/.bashrc": "home directories are not expanded",
        "a\x00b": "NUL byte",
        "dirlink/secret.txt": "symlink",
    }
    for path, expected in cases.items():
        with pytest.raises(WorkspaceError, match=expected):
            ws.resolve(path)


@pytest.mark.parametrize("pattern", ["../*", "/etc/*", "../outside/*", "~/*", "**/../*",
                                     "sub/../../*", "a\x00"])
def test_glob_refuses_patterns_that_leave_the_workspace(layout: dict[str, Path],
                                                        pattern: str) -> None:
    glob_files = make_builtin_functions(Workspace(layout["ws"]))["glob_files"]
    with pytest.raises(WorkspaceError):
        glob_files(pattern)


def test_glob_and_search_never_follow_links_out(layout: dict[str, Path]) -> None:
    fns = make_builtin_functions(Workspace(layout["ws"]))
    listing = fns["glob_files"]("**/*")
    assert "inside.txt" in listing
    assert "secret" not in listing and ".bashrc" not in listing and "home" not in listing
    assert fns["glob_files"]("dirlink/*") == "No paths match 'dirlink/*'."
    assert fns["search_files"]("SECRET").startswith("No matches")


def test_glob_with_a_link_to_the_filesystem_root_stays_inside(layout: dict[str, Path]) -> None:
    (layout["ws"] / "rootlink").symlink_to("/", target_is_directory=True)
    (layout["ws"] / "sub" / "loop").symlink_to(layout["ws"], target_is_directory=True)
    fns = make_builtin_functions(Workspace(layout["ws"]))
    listing = fns["glob_files"]("**/*.txt").splitlines()
    assert listing == ["inside.txt"]  # not /etc/..., not a cycle through sub/loop


def test_read_only_workspace_refuses_writes(tmp_path: Path) -> None:
    fns = make_builtin_functions(Workspace(tmp_path, read_only=True))
    with pytest.raises(WorkspaceError, match="read-only"):
        fns["write_file"]("a.txt", "x")
    assert not (tmp_path / "a.txt").exists()
