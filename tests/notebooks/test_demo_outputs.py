"""What ``make demo`` writes tells the truth: no path of the machine that ran it, no rate over
a near-zero time, estimated token counts said in words, and a tutorial run live says so."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest

from jupyter_agent.edge.demo import LIVE_NOTE, run_demo
from jupyter_agent.llm.local import local_available

pytestmark = [pytest.mark.notebook, pytest.mark.timeout(900)]

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
ABSOLUTE = re.compile(r"(?<![\w.~])/(?:home|root|tmp|work|Users|var|opt|srv|mnt|private)/")
RATE = re.compile(r"([\d,]+\.\d) items/min · ([\d,]+\.\d) s")


def outputs_text(nb: Any) -> str:
    """Every output of every code cell, as JSON text."""
    return "\n".join(json.dumps(c.outputs, ensure_ascii=False) for c in nb.cells
                     if c.cell_type == "code")


def artefacts(nb: Any, *folders: Path) -> list[str]:
    """What a reader should never see in a saved output."""
    text = outputs_text(nb)
    found = [m.group(0) for m in ABSOLUTE.finditer(text)]
    found += [str(f) for f in folders if str(f) in text]
    for rate, seconds in RATE.findall(text):
        if float(rate.replace(",", "")) <= 0 or float(seconds.replace(",", "")) < 1.0:
            found.append(f"{rate} items/min over {seconds} s")
    found += re.findall(r"~\d[\d,]* (?:in|out)\b", text)  # estimated counts, unexplained
    return found


def test_the_scan_finds_what_it_looks_for() -> None:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x")])
    nb.cells[0].outputs = [nbformat.v4.new_output(
        "stream", text="at /home/me/nb · 29,038.0 items/min · 0.1 s · ~86 out tokens")]
    assert len(artefacts(nb)) == 3


def test_demo_tutorials_carry_no_machine_path_and_no_rate_artefact(tmp_path: Path) -> None:
    out = tmp_path / "demo-output"
    results = run_demo(NOTEBOOKS, out, live_local=False, only=["01", "04", "07"])
    assert [r["ok"] for r in results] == [True, True, True], results
    for result in results:
        nb = nbformat.read(str(result["notebook"]), as_version=4)
        assert artefacts(nb, out.resolve(), Path.home()) == [], result["name"]
        html = Path(result["html"]).read_text(encoding="utf-8")
        assert str(out.resolve()) not in html
        assert LIVE_NOTE not in json.dumps(nb.cells[1].source)  # replayed: its text is true


def test_the_saved_tutorials_carry_no_artefact_either() -> None:
    for path in sorted(NOTEBOOKS.glob("[0-9][0-9]-*.ipynb")):
        assert artefacts(nbformat.read(str(path), as_version=4)) == [], path.name


@pytest.mark.local_model
@pytest.mark.skipif(not local_available(), reason="needs the `local` extra")
def test_a_tutorial_the_demo_runs_live_says_so(tmp_path: Path) -> None:
    results = run_demo(NOTEBOOKS, tmp_path, live_local=True, only=["01"])
    assert results[0]["ok"] and results[0]["mode"] == "live, embedded model", results
    nb = nbformat.read(str(results[0]["notebook"]), as_version=4)
    assert nb.cells[1].cell_type == "markdown" and nb.cells[1].source == LIVE_NOTE
    assert artefacts(nb, tmp_path.resolve(), Path.home()) == []


def test_the_demo_names_the_jupyter_of_its_own_environment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The closing "Open them" line names a ``jupyter`` that exists from where the demo ran,
    whichever environment runs it (not a fixed ``.venv/bin/jupyter``)."""
    from jupyter_agent.edge.demo import jupyter_command

    monkeypatch.chdir(tmp_path)  # no .venv here
    command = jupyter_command()
    beside = Path(sys.executable).parent / "jupyter"
    if beside.exists():
        assert Path(command).resolve() == beside.resolve()
    else:
        assert command == "jupyter"


def test_the_demo_signs_what_it_executed_so_jupyter_trusts_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Notebook 7 showed "Not Trusted" on every demo notebook. The signature goes to the Jupyter
    # data folder (this test's own), where JupyterLab and Notebook 7 look it up.
    from nbformat.sign import NotebookNotary

    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "jupyter-data"))
    results = run_demo(NOTEBOOKS, tmp_path / "out", live_local=False, only=["03"])
    assert results[0]["ok"], results
    nb = nbformat.read(str(results[0]["notebook"]), as_version=4)
    notary = NotebookNotary()
    assert notary.check_signature(nb)  # the file as written, read back
    # The signature covers the outputs: one changed afterwards is not trusted any more, and a
    # copy of the tutorial as shipped (not executed here) never was.
    nb.cells[-2].outputs[0]["data"]["text/plain"] = "<script>alert(1)</script>"
    assert not notary.check_signature(nb)
    assert not notary.check_signature(nbformat.read(str(NOTEBOOKS / results[0]["name"]),
                                                    as_version=4))
