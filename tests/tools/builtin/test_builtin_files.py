"""read_file, write_file, search_files and glob_files inside a workspace."""

from __future__ import annotations

import inspect
import os
import typing
from pathlib import Path

import pytest

from jupyter_agent.base.errors import ToolError
from jupyter_agent.tools.builtin import (
    BUILTIN_TOOL_NAMES,
    Workspace,
    WorkspaceError,
    make_builtin_functions,
)
from jupyter_agent.tools.builtin.cap import DEFAULT_LIMIT


@pytest.fixture
def fns(tmp_path: Path) -> dict[str, typing.Callable[..., str]]:
    return make_builtin_functions(Workspace(tmp_path))


def test_write_then_read_a_file(fns: dict[str, typing.Callable[..., str]], tmp_path: Path) -> None:
    assert fns["write_file"]("notes/a.txt", "one\ntwo\n") == (
        "Created notes/a.txt (8 characters, 2 lines)."
    )
    assert (tmp_path / "notes" / "a.txt").read_text() == "one\ntwo\n"
    assert fns["read_file"]("notes/a.txt") == "one\ntwo\n"


def test_bound_functions_carry_names_docs_and_hints(tmp_path: Path) -> None:
    fns = make_builtin_functions(Workspace(tmp_path))
    assert tuple(fns) == BUILTIN_TOOL_NAMES
    for name, fn in fns.items():
        assert fn.__name__ == name
        doc = inspect.getdoc(fn) or ""
        description, _, rest = doc.partition("\n\n")
        assert description and "Args:" in rest
        params = inspect.signature(fn, eval_str=True).parameters
        assert "workspace" not in params
        for param in params:
            assert f"    {param}:" in rest or f"{param}:" in rest.split("Args:")[1]
        hints = typing.get_type_hints(fn)
        assert hints.pop("return") is str
        assert set(hints) == set(params)


def test_read_file_offset_limit_and_continuation_note(
    fns: dict[str, typing.Callable[..., str]], tmp_path: Path
) -> None:
    (tmp_path / "n.txt").write_text("".join(f"line {i}\n" for i in range(10)))
    assert fns["read_file"]("n.txt", offset=2, limit=3).startswith("line 2\nline 3\nline 4\n")
    assert "call read_file with offset=5" in fns["read_file"]("n.txt", offset=2, limit=3)
    assert fns["read_file"]("n.txt", offset=8) == "line 8\nline 9\n"
    assert "past the end" in fns["read_file"]("n.txt", offset=50)


def test_read_file_caps_a_large_file_and_says_how_to_continue(
    fns: dict[str, typing.Callable[..., str]], tmp_path: Path
) -> None:
    (tmp_path / "big.txt").write_text("x" * 99 + "\n" * 1 + ("y" * 99 + "\n") * 5000)
    out = fns["read_file"]("big.txt")
    assert len(out) < DEFAULT_LIMIT + 200
    assert "of 5001; call read_file with offset=" in out


def test_read_file_refuses_binary_and_reports_missing_files(
    fns: dict[str, typing.Callable[..., str]], tmp_path: Path
) -> None:
    (tmp_path / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    with pytest.raises(WorkspaceError, match="binary file"):
        fns["read_file"]("img.png")
    with pytest.raises(WorkspaceError, match="File not found"):
        fns["read_file"]("missing.txt")
    with pytest.raises(WorkspaceError, match="is a directory"):
        fns["read_file"](".")


def test_write_file_is_atomic_when_the_write_fails(
    fns: dict[str, typing.Callable[..., str]], tmp_path: Path
) -> None:
    target = tmp_path / "data.txt"
    fns["write_file"]("data.txt", "original\n")
    # A lone surrogate cannot be encoded as UTF-8: the write fails after it started.
    with pytest.raises(UnicodeEncodeError):
        fns["write_file"]("data.txt", "new content " * 10_000 + "\ud800")
    assert target.read_text() == "original\n"
    assert os.listdir(tmp_path) == ["data.txt"]  # no temporary file left behind


def test_write_file_replaces_content_fully_and_keeps_the_mode(
    fns: dict[str, typing.Callable[..., str]], tmp_path: Path
) -> None:
    target = tmp_path / "run.sh"
    target.write_text("old " * 1000)
    target.chmod(0o750)
    assert fns["write_file"]("run.sh", "#!/bin/sh\necho hi\n").startswith("Overwrote run.sh")
    assert target.read_text() == "#!/bin/sh\necho hi\n"
    assert target.stat().st_mode & 0o777 == 0o750
    assert sorted(os.listdir(tmp_path)) == ["run.sh"]


def test_write_file_refuses_directories_and_non_text(
    fns: dict[str, typing.Callable[..., str]], tmp_path: Path
) -> None:
    (tmp_path / "d").mkdir()
    with pytest.raises(WorkspaceError, match="is a directory"):
        fns["write_file"]("d", "x")
    with pytest.raises(ToolError, match="content must be text"):
        fns["write_file"]("a.txt", b"bytes")  # type: ignore[arg-type]


def test_search_files_reports_path_line_text(
    fns: dict[str, typing.Callable[..., str]], tmp_path: Path
) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("import os\ndef main():\n    return 1\n")
    (tmp_path / "src" / "b.txt").write_text("def not_python\n")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "x.py").write_text("def hidden():\n")
    (tmp_path / "blob.bin").write_bytes(b"def \x00binary")
    assert fns["search_files"](r"def \w+") == (
        "src/a.py:2: def main():\nsrc/b.txt:1: def not_python"
    )
    assert fns["search_files"](r"def \w+", glob="*.py") == "src/a.py:2: def main():"
    assert fns["search_files"]("return", path="src/a.py") == "src/a.py:3:     return 1"
    with pytest.raises(ToolError, match="Invalid regular expression"):
        fns["search_files"]("(")


def test_search_files_caps_the_number_of_matches(
    fns: dict[str, typing.Callable[..., str]], tmp_path: Path
) -> None:
    (tmp_path / "many.txt").write_text("hit\n" * 1000)
    out = fns["search_files"]("hit")
    assert out.count("many.txt:") == 200
    assert "more than 200 matches" in out


def test_glob_files_sorted_relative_with_folders_marked(
    fns: dict[str, typing.Callable[..., str]], tmp_path: Path
) -> None:
    for rel in ("b.py", "a.py", "pkg/c.py", "pkg/deep/d.py", "pkg/e.txt", ".hidden.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    assert fns["glob_files"]("*.py") == "a.py\nb.py"
    assert fns["glob_files"]("**/*.py") == "a.py\nb.py\npkg/c.py\npkg/deep/d.py"
    assert fns["glob_files"]("pkg/*") == "pkg/c.py\npkg/deep/\npkg/e.txt"
    assert fns["glob_files"](".*") == ".hidden.py"
    assert fns["glob_files"]("*.csv") == "No paths match '*.csv'."


def test_glob_files_caps_the_listing(
    fns: dict[str, typing.Callable[..., str]], tmp_path: Path
) -> None:
    for i in range(600):
        (tmp_path / f"f{i:04}.txt").write_text("")
    out = fns["glob_files"]("*.txt").splitlines()
    assert out[0] == "f0000.txt" and out[499] == "f0499.txt"
    assert out[500] == "[... 100 more paths not shown; use a narrower pattern]"
