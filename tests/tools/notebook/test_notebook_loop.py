"""A tool loop over the scripted server where the model explores a real IPython shell's
variables: what reaches the server is bounded, correct and free of secrets."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd
import pytest

from jupyter_agent import toolloop
from jupyter_agent.tools.notebook import CellProposal, notebook_tools
from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls

pytestmark = pytest.mark.timeout(120)

SECRET = "sk-proj-very-secret-0123456789"


def tool_messages(server: ScriptedOpenAI) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in server.requests[-1]["messages"]
            if m["role"] == "tool"}


def test_list_then_inspect_a_dataframe(shell: Any, server: ScriptedOpenAI) -> None:
    n = 300_000
    rng = np.random.default_rng(3)
    shell.user_ns.update(
        sales=pd.DataFrame({"region": pd.array(rng.choice(["north", "south"], n), dtype="str"),
                            "units": rng.integers(1, 100, n),
                            "price": rng.uniform(1.0, 2.0, n)}),
        OPENAI_API_KEY=SECRET, threshold=50)
    shell.run_cell("import numpy as np", store_history=True)
    server.enqueue(
        tool_calls([call("list_variables", {}, id="call_list")]),
        tool_calls([call("inspect_variable", {"name": "sales", "rows": 2}, id="call_sales")]),
        text("sales has 300,000 rows of units and prices by region."))
    run = toolloop("What data do I have?", tools=notebook_tools(shell), store=None)
    assert run.status == "done", run.error
    results = tool_messages(server)
    listing = results["call_list"]
    assert listing.splitlines()[1:] == [
        "sales (pandas.DataFrame): DataFrame: 300,000 rows × 3 columns (region:str, "
        "units:int64, price:float64)",
        "threshold (int): 50"]
    summary = results["call_sales"]
    assert len(summary) < 4000
    assert summary.startswith("sales: pandas.DataFrame: 300,000 rows × 3 columns")
    units = next(line for line in summary.splitlines() if line.startswith("units ")).split()
    assert units[1:4] == ["int64", "0", "1"] and units[5] == "99"  # dtype, nulls, min, max
    assert 45 <= float(units[4]) <= 55 and 48 <= float(units[6]) <= 52  # p50, mean: sampled
    assert "First 2 rows:" in summary and "Last 2 rows:" in summary
    assert f"{sales_last(shell)}" in summary  # the real last row's units value
    body = json.dumps(server.requests)
    assert SECRET not in body and "OPENAI_API_KEY" not in body


def sales_last(shell: Any) -> int:
    return int(shell.user_ns["sales"]["units"].iloc[-1])


def test_the_model_misbehaves_and_the_loop_goes_on(shell: Any, server: ScriptedOpenAI) -> None:
    shell.user_ns.update(OPENAI_API_KEY=SECRET, data=[1, 2, 3])
    server.enqueue(
        tool_calls([call("inspect_variable", {"name": "OPENAI_API_KEY"}, id="c1"),
                    call("inspect_variable", {"name": "__import__('os').environ"}, id="c2"),
                    call("inspect_variable", "{not json", id="c3"),
                    call("read_cells", {"start": 999}, id="c4"),
                    call("insert_cell", {"source": f"key = {SECRET!r}\nprint(data)"},
                         id="c5")]),
        text("Done."))
    proposals: list[CellProposal] = []
    run = toolloop("Look around.", tools=notebook_tools(shell, on_proposal=proposals.append),
                   store=None)
    assert run.status == "done"
    results = tool_messages(server)
    assert "looks like a secret" in results["c1"]
    assert "Not a variable name" in results["c2"]
    assert "not valid JSON" in results["c3"]
    assert "No cells 999..999" in results["c4"]
    assert results["c5"].startswith("Proposed a code cell (2 lines). ")
    (proposal,) = proposals
    assert proposal.source == "key = [redacted]\nprint(data)" and proposal.status == "proposed"
    assert run.tool_values["c5"] == proposal
    # The model wrote the key into its own arguments; no tool result ever carries it.
    assert SECRET not in json.dumps(results)
