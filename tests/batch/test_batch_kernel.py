"""``%%toolloop --over`` in a real kernel (nbclient): notebook tools, ``--out``, one card
that ends as a static bundle in the saved notebook, and a re-run that asks nothing."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import nbformat
import pytest

from jupyter_agent.replay.notebooks import execute_notebook
from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls

pytestmark = [pytest.mark.notebook, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parents[2]
BATCH_MIME = "application/vnd.jupyter-agent.batch+json"

CELL = ("%%toolloop --over tickets --concurrency 4 --out results\n"
        "Look up ticket {id} and classify it as billing, technical or other: {text}")


def _answer(body: dict[str, Any]) -> Any:
    last = body["messages"][-1]
    if last["role"] == "tool":
        return text(last["content"].split(":")[-1].strip())
    ticket = last["content"].split("ticket ")[1].split()[0]
    return tool_calls([call("lookup", {"ticket": int(ticket)})])


def test_toolloop_over_a_dataframe_in_a_kernel(srv: ScriptedOpenAI, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
    srv.default = _answer
    cells = [
        "%load_ext jupyter_agent",
        "import pandas as pd\n"
        "from jupyter_agent import tool\n"
        "KINDS = {1: 'billing', 2: 'technical', 3: 'other', 4: 'billing', 5: 'technical'}\n\n"
        "@tool\n"
        "def lookup(ticket: int) -> str:\n"
        "    '''The category the help desk gave a ticket.'''\n"
        "    return f'ticket {ticket}: {KINDS[ticket]}'\n\n"
        "tickets = pd.DataFrame({'id': [1, 2, 3, 4, 5],\n"
        "                        'text': ['invoice', 'crash', 'hello', 'refund', 'bug']})",
        CELL,
        "print(results[['id', 'answer', 'status', 'rounds']].to_json(orient='records'))",
        CELL,
        "print(_agent_batch.view['reused'], len(results))",
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    execute_notebook(nb, tmp_path, env={"JUPYTER_AGENT_HOME": str(tmp_path / "home")})

    rows = json.loads(nb.cells[3].outputs[0]["text"])
    assert [r["answer"] for r in rows] == ["billing", "technical", "other", "billing",
                                          "technical"]
    assert {r["status"] for r in rows} == {"done"} and {r["rounds"] for r in rows} == {2}
    assert len(srv.requests) == 10  # 5 items x 2 rounds, then nothing on the re-run
    assert nb.cells[5].outputs[0]["text"].split() == ["5", "5"]
    # The batch cell keeps one output: the finished card as a static bundle (no widget
    # state needed to show it), no per-item output.
    outs = [o for o in nb.cells[2].outputs]
    assert len(outs) == 1 and outs[0]["output_type"] == "display_data"
    data = outs[0]["data"]
    assert BATCH_MIME in data and "application/vnd.jupyter.widget-view+json" not in data
    view = data[BATCH_MIME]
    assert view["status"] == "done" and view["counts"]["done"] == 5
    assert [p["answer"] for p in view["preview"]] == [r["answer"] for r in rows]
    assert "done 5" in "".join(data["text/plain"])
