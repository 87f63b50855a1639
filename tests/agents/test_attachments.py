"""Files the user attaches: readable by id or name, and nothing else."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from jupyter_agent import attach_files, toolloop
from jupyter_agent.base.errors import ConfigError
from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls

pytestmark = pytest.mark.timeout(60)


def read(t: object, **args: object) -> tuple[str, str | None]:
    r = t.invoke(json.dumps(args))  # type: ignore[attr-defined]
    return r.output, r.error


def test_simplest_attachment(tmp_path: Path) -> None:
    report = tmp_path / "report.txt"
    report.write_text("Revenue grew 12%.\n")
    reader = attach_files([report])
    assert reader.name == "read_attachment"
    assert "file_1 (report.txt)" in reader.description
    assert read(reader, file="file_1") == ("Revenue grew 12%.\n", None)
    assert read(reader, file="report.txt") == ("Revenue grew 12%.\n", None)


def test_the_model_reads_an_attached_file(server: ScriptedOpenAI, tmp_path: Path) -> None:
    notes = tmp_path / "notes.md"
    notes.write_text("# Notes\nThe launch is on May 3.\n")
    server.enqueue(tool_calls([call("read_attachment", {"file": "notes.md"})]),
                   text("The launch is on May 3."))
    run = toolloop("When is the launch? Read my notes.", tools=[attach_files(notes)])
    assert run.answer == "The launch is on May 3."
    assert server.requests[1]["messages"][-1]["content"] == "# Notes\nThe launch is on May 3.\n"


def test_other_paths_are_refused(tmp_path: Path) -> None:
    attached = tmp_path / "a.txt"
    attached.write_text("A")
    secret = tmp_path / "secret.txt"
    secret.write_text("S")
    reader = attach_files([attached])
    for other in ("secret.txt", str(secret), "../a.txt", str(attached), "file_2", ""):
        output, err = read(reader, file=other)
        assert err is not None and "S" not in output.replace("ToolError", "")
        assert "is not an attached file; only these can be read: file_1 (a.txt)" in output


def test_same_names_need_the_id_and_paging_works(tmp_path: Path) -> None:
    (tmp_path / "x").mkdir()
    (tmp_path / "y").mkdir()
    (tmp_path / "x" / "data.csv").write_text("x1\nx2\nx3\n")
    (tmp_path / "y" / "data.csv").write_text("y1\n")
    reader = attach_files([tmp_path / "x" / "data.csv", tmp_path / "y" / "data.csv"])
    output, err = read(reader, file="data.csv")
    assert err is not None and "use the id (file_1, file_2)" in output
    assert read(reader, file="file_2") == ("y1\n", None)
    output, _ = read(reader, file="file_1", offset=1, limit=1)
    assert output.startswith("x2\n") and output.endswith(
        'call read_attachment with file="file_1" and offset=2 to read more]')


def test_binary_files_and_swapped_links_are_refused(tmp_path: Path) -> None:
    blob = tmp_path / "image.bin"
    blob.write_bytes(b"\x89PNG\x00\x00data")
    text_file = tmp_path / "a.txt"
    text_file.write_text("A")
    reader = attach_files([blob, text_file])
    output, err = read(reader, file="file_1")
    assert err is not None and "binary" in output
    outside = tmp_path / "outside.txt"
    outside.write_text("S")
    text_file.unlink()
    os.symlink(outside, text_file)  # replaced after attaching
    output, err = read(reader, file="a.txt")
    assert err is not None and "replaced by a link" in output


def test_attaching_a_missing_file_fails_at_once(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such file"):
        attach_files([tmp_path / "nope.txt"])
    with pytest.raises(ConfigError, match="no such file"):
        attach_files(tmp_path)  # a folder is not a file
    with pytest.raises(ConfigError, match="at least one"):
        attach_files([])
