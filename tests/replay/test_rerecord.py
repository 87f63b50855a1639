"""Re-recording a notebook with one command, and replaying it in a kernel (nbclient)."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from jupyter_agent.edge.demo import run_demo
from jupyter_agent.replay.compare import comparable_outputs
from jupyter_agent.replay.notebooks import execute_notebook, scrub_folder
from jupyter_agent.replay.rerecord import main as rerecord_main
from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls

pytestmark = [pytest.mark.notebook, pytest.mark.timeout(300)]


def _notebook(path: Path, cassette: str) -> None:
    nb = new_notebook(cells=[
        new_markdown_cell("# A small tutorial"),
        new_code_cell(f"%load_ext jupyter_agent\n%agent replay {cassette}"),
        new_code_cell('from jupyter_agent import tool\n\n@tool\ndef add(a: int, b: int) -> int:\n'
                      '    """Add two numbers."""\n    return a + b'),
        new_code_cell("%%toolloop\nWhat is 2 + 3?"),
        new_code_cell("%%chat --no-history\nThanks!"),
        new_code_cell("print(_agent_run.answer)"),
    ], metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                "language": "python"}})
    nbformat.write(nb, str(path))


def test_rerecord_then_replay_in_a_kernel(server: ScriptedOpenAI, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "tutorial.ipynb"
    _notebook(path, "tutorial.ipynb")
    server.enqueue(tool_calls([call("add", {"a": 2, "b": 3})]), text("2 + 3 = 5."),
                   text("You're welcome."))

    assert rerecord_main([str(path), "--model", "scripted-model"]) == 0  # env: server's URL, key
    assert "recorded 3 model call(s) and 0 answer(s) with scripted-model" in capsys.readouterr().out

    recorded = nbformat.read(str(path), as_version=4)
    assert recorded.cells[1].source == "%load_ext jupyter_agent\n%agent replay tutorial.ipynb"
    assert recorded.cells[1].outputs == []  # it named a temporary recording file
    assert recorded.cells[5].outputs[0]["text"] == "You're welcome.\n"
    stored = path.read_text(encoding="utf-8")
    assert "sk-test-key" not in stored and str(tmp_path) not in stored
    assert len(recorded.metadata["jupyter_agent"]["cassette"]["interactions"]) == 3

    server.stop()  # the replay needs no server...
    replayed = nbformat.read(str(path), as_version=4)
    execute_notebook(replayed, tmp_path, env={"OPENAI_API_KEY": "", "OPENAI_BASE_URL": ""})
    scrub_folder(replayed, tmp_path)
    for old, new in zip(recorded.cells[2:], replayed.cells[2:], strict=True):
        assert comparable_outputs(new.outputs) == comparable_outputs(old.outputs)


def test_a_cassette_beside_the_notebook_and_the_demo(server: ScriptedOpenAI,
                                                     tmp_path: Path) -> None:
    source = tmp_path / "notebooks"
    source.mkdir()
    path = source / "01-small.ipynb"
    _notebook(path, "01-small.cassette.json")
    server.enqueue(tool_calls([call("add", {"a": 2, "b": 3})]), text("5."), text("Bye."))
    rerecord_main([str(path), "--model", "scripted-model"])
    cassette = json.loads((source / "01-small.cassette.json").read_text(encoding="utf-8"))
    assert cassette["model"] == "scripted-model" and len(cassette["interactions"]) == 3
    assert "jupyter_agent" not in nbformat.read(str(path), as_version=4).metadata

    out = tmp_path / "demo-output"
    results = run_demo(source, out, live_local=False)
    assert [(r["name"], r["ok"]) for r in results] == [("01-small.ipynb", True)]
    executed = nbformat.read(str(out / "01-small.ipynb"), as_version=4)
    assert executed.cells[5].outputs[0]["text"] == "Bye.\n"
    html = (out / "01-small.html").read_text(encoding="utf-8")
    assert "Bye." in html and "2 + 3" in html


def test_the_demo_fails_loudly_when_a_notebook_fails(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    from jupyter_agent.edge.demo import main

    source = tmp_path / "notebooks"
    source.mkdir()
    nbformat.write(new_notebook(cells=[new_code_cell("raise ValueError('boom')")]),
                   str(source / "01-broken.ipynb"))
    assert main(["--notebooks", str(source), "--output", str(tmp_path / "out")]) == 1
    printed = capsys.readouterr().out
    assert "FAILED" in printed and "ValueError: boom" in printed
    assert "0 of 1 notebooks ran" in printed
    assert "jupyter lab" in printed and (tmp_path / "out" / "01-broken.html").exists()
