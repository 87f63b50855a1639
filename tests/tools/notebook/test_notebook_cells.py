"""``read_notebook``/``read_cells`` (saved file or kernel history) and ``insert_cell``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
import pytest
from IPython.core.formatters import MarkdownFormatter

from jupyter_agent.base.events import EVENT_ADAPTER, CellProposed, event_to_json
from jupyter_agent.base.secrets import MASK
from jupyter_agent.tools.notebook import CellProposal, load_cells, notebook_tools, propose_cell
from jupyter_agent.tools.notebook.cells import outline
from jupyter_agent.tools.notebook.variables import VariableError

pytestmark = pytest.mark.timeout(60)

SECRET = "sk-saved-in-a-cell-0123456789"


def tools_of(ns: Any, **kwargs: Any) -> dict[str, Any]:
    return {t.name: t for t in notebook_tools(ns, **kwargs)}


def write_notebook(path: Path) -> Path:
    v4 = nbformat.v4
    cells = [
        v4.new_markdown_cell("# Sales analysis\nLoad and clean the data."),
        v4.new_code_cell(f'OPENAI_API_KEY = "{SECRET}"\nimport pandas as pd', execution_count=1),
        v4.new_code_cell("df = pd.read_csv('sales.csv')\ndf.head()", execution_count=2,
                         outputs=[v4.new_output("execute_result", execution_count=2,
                                                data={"text/plain": "   units\n0     3",
                                                      "text/html": "<table/>"})]),
        v4.new_code_cell("print('rows', len(df))\n1/0", execution_count=3, outputs=[
            v4.new_output("stream", name="stdout", text="rows 100\n"),
            v4.new_output("error", ename="ZeroDivisionError", evalue="division by zero",
                          traceback=["long", "wall"])]),
        v4.new_code_cell("%%chat\nSummarise", execution_count=4, outputs=[
            v4.new_output("display_data", data={
                "application/vnd.jupyter-agent.run+json": {"events": []},
                "text/plain": "Sales rose 5%."})]),
    ]
    nbformat.write(v4.new_notebook(cells=cells), path)
    return path


def test_read_the_saved_notebook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_notebook(tmp_path / "analysis.ipynb")
    monkeypatch.setenv("JPY_SESSION_NAME", str(path))
    tools = tools_of({})
    out = tools["read_notebook"].invoke("{}").output
    assert out.startswith("Notebook from file analysis.ipynb (as last saved): 5 cells.")
    assert "--- cell 1 (markdown) ---\n# Sales analysis" in out
    assert f'OPENAI_API_KEY = {MASK}' in out and SECRET not in out
    assert "→ result: units 0 3 [text/html]" in out
    assert "→ stdout: rows 100" in out and "→ error: ZeroDivisionError: division by zero" in out
    assert "→ [jupyter-agent run] Sales rose 5%." in out and "wall" not in out
    cells = tools["read_cells"].invoke(json.dumps({"start": 3, "end": 4})).output
    assert cells.startswith("Cells from file analysis.ipynb (as last saved):\n"
                            "--- cell 3 (code, executed [2]) ---\ndf = pd.read_csv")
    assert "--- cell 4" in cells and "--- cell 2" not in cells and "(the notebook has 5" in cells
    for bad in ({"start": 0}, {"start": 6}, {"start": 3, "end": 2}):
        r = tools["read_cells"].invoke(json.dumps(bad))
        assert r.error and "the notebook has cells 1..5" in r.output


def test_relative_session_name_and_a_broken_file(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    write_notebook(tmp_path / "rel.ipynb")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("JPY_SESSION_NAME", "some/server/dir/rel.ipynb")  # server-relative
    assert load_cells().origin.startswith("file rel.ipynb")
    (tmp_path / "rel.ipynb").write_text("{not json", encoding="utf-8")
    r = tools_of({})["read_notebook"].invoke("{}")
    assert r.error and "Could not read the notebook rel.ipynb" in r.output


def test_a_malformed_notebook_file_is_read_as_far_as_it_makes_sense(tmp_path: Path) -> None:
    """Valid JSON that is not quite nbformat (numbers and nulls among the lines, a cell that is
    not an object, a count that is a string) is read, not a crash: the typed reader narrows
    each field. Before, ``"".join`` raised TypeError, ``.get`` on a string AttributeError, and
    a string count failed the Cell model; a top-level array raised AttributeError."""
    path = tmp_path / "odd.ipynb"
    path.write_text(json.dumps({"cells": [
        {"cell_type": "code", "source": ["x = ", 1, "\n"], "execution_count": "7",
         "outputs": [{"output_type": "stream", "name": "stdout", "text": ["a", None]},
                     {"output_type": "execute_result", "data": {"text/plain": ["4", 2]}}]},
        "not a cell",
    ]}), encoding="utf-8")
    cells = load_cells(path).cells
    assert [c.source for c in cells] == ["x = 1\n", ""]
    assert cells[0].execution_count is None
    assert cells[0].outputs == ["stdout: aNone", "result: 42"]
    path.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(VariableError, match="not a JSON object"):
        load_cells(path)


def test_history_fallback_in_a_real_shell(shell: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    shell.run_cell("history_probe = 21", store_history=True)
    shell.run_cell("history_probe * 2", store_history=True)
    shell.run_cell(f"MY_TOKEN = '{SECRET}'", store_history=True)
    out = tools_of(shell)["read_notebook"].invoke("{}").output
    assert out.startswith("Notebook from kernel history (cells executed in this kernel)")
    assert "history_probe = 21" in out and "→ result: 42" in out
    assert SECRET not in out and f"MY_TOKEN = {MASK}" in out
    r = tools_of({})["read_notebook"].invoke("{}")  # no file, no shell: a clear error
    assert r.error and "No notebook file is known" in r.output


def test_a_long_notebook_outline_is_bounded(tmp_path: Path) -> None:
    v4 = nbformat.v4
    nb = v4.new_notebook(cells=[v4.new_code_cell(f"step_{i} = {i}\n" + "x = 1\n" * 50)
                                for i in range(500)])
    nbformat.write(nb, tmp_path / "long.ipynb")
    text = outline(load_cells(tmp_path / "long.ipynb"))
    assert len(text) <= 8000
    assert "--- cell 1 (code) ---" in text and "--- cell 500 (code) ---" in text
    assert "cells not shown (read_cells reads any range)" in text


def test_insert_cell_records_a_proposal() -> None:
    seen: list[CellProposal] = []
    tools = notebook_tools({}, on_proposal=seen.append)
    insert = tools[-1]
    r = insert.invoke(json.dumps({"source": "df.describe()\n", "explanation": "Stats."}))
    assert r.error is None and r.output.startswith("Proposed a code cell (1 line). ")
    assert "has not run" in r.output
    (p,) = seen
    assert insert.proposals == [p] and r.value is p  # type: ignore[attr-defined]
    assert p.source == "df.describe()" and p.kind == "code" and p.explanation == "Stats."
    md = MarkdownFormatter()(p)  # what a notebook shows for ``insert.proposals[0]``
    assert md == f"**Proposed code cell** `{p.id}`\n\nStats.\n\n```python\ndf.describe()\n```\n"
    tricky = propose_cell("print('```')", "code")
    assert "````python\nprint('```')\n````" in tricky._repr_markdown_()  # the fence still closes
    for bad, fragment in [({"source": "  \n"}, "source is empty"),
                          ({"source": "x" * 100_001}, "at most 100,000"),
                          ({"source": "x", "kind": "raw"}, "kind")]:
        r = insert.invoke(json.dumps(bad))
        assert r.error and fragment in r.output, r.output
    assert len(seen) == 1  # refused proposals are not recorded


def test_cell_proposed_event_round_trips() -> None:
    p = CellProposal(source="x = 1", explanation="why")
    event = CellProposed(round=2, call_id="call_1", proposal=p.model_dump())
    data = json.loads(json.dumps(event_to_json(event)))
    back = EVENT_ADAPTER.validate_python(data)
    assert back == event and CellProposal.model_validate(back.proposal) == p
