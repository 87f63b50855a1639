"""``--over`` on the three cell magics, through a real IPython shell: the results table in
``--out``, one card for the whole batch (nothing printed per item), the comparison and its
chart, asks answered with ``%agent resume``, and every mistake one line before any request."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from tests.batch.conftest import EXPECTED, TICKETS
from tests.batch.test_batch_resume import _asking
from tests.fakes.openai_server import ScriptedOpenAI

BATCH_MIME = "application/vnd.jupyter-agent.batch+json"


@pytest.fixture
def shell(ip: InteractiveShell) -> Iterator[InteractiveShell]:
    ip.run_cell("%config AgentMagics.widgets = False")
    ip.user_ns["tickets"] = pd.DataFrame({"text": TICKETS, "label": EXPECTED})
    yield ip
    for name in ("tickets", "results", "board", "_agent_batch", "_agent_run", "n", "judge"):
        ip.user_ns.pop(name, None)
    ip.run_cell("%config AgentMagics.widgets = True")


def _run(shell: InteractiveShell, source: str) -> Any:
    with capture_output() as cap:
        result = shell.run_cell(source)
    assert result.success, result.error_in_exec
    return cap


def test_toolloop_over_a_dataframe_fills_out_and_shows_one_card(
        shell: InteractiveShell, srv: ScriptedOpenAI) -> None:
    cap = _run(shell, "%%toolloop --over tickets --concurrency 3 --out results\n"
                      "Classify this ticket as billing, technical or other: {text}")
    results = shell.user_ns["results"]
    assert list(results["answer"]) == EXPECTED and list(results["text"]) == TICKETS
    assert {"status", "rounds", "cost", "run_id"} <= set(results.columns)
    assert len(srv.requests) == 6
    # Headless: nothing printed, one output (the finished card), no per-item output.
    assert cap.stdout == "" and cap.stderr == ""
    (card,) = cap.outputs
    assert BATCH_MIME in card.data and "done 6" in card.data["text/plain"]
    assert card.data[BATCH_MIME]["counts"]["done"] == 6
    assert shell.user_ns["_agent_batch"].results is results

    # Run again: everything is found in the store, nothing is asked.
    _run(shell, "%%toolloop --over tickets --out results\n"
                "Classify this ticket as billing, technical or other: {text}")
    assert len(srv.requests) == 6 and shell.user_ns["_agent_batch"].view["reused"] == 6


def test_chat_compares_models_with_a_table_and_a_chart(shell: InteractiveShell,
                                                       srv: ScriptedOpenAI) -> None:
    cap = _run(shell, "%%chat --over tickets --expect label --match icase "
                      "--model gpt-4.1-mini,gpt-4.1 --out board\n"
                      "Answer with one word, billing, technical or other: {text}")
    board = shell.user_ns["board"]
    assert list(board["model"]) == ["gpt-4.1-mini", "gpt-4.1"] * 6
    assert list(board["score"]) == [1.0] * 12
    assert list(board.attrs["board"]["accuracy"]) == [1.0, 1.0]
    card, chart = cap.outputs
    assert "Comparison" in card.data["text/markdown"]
    assert chart.data["image/png"] and "comparison chart" in chart.data["text/plain"]


def test_a_score_function_from_the_notebook(shell: InteractiveShell,
                                            srv: ScriptedOpenAI) -> None:
    shell.run_cell("def judge(answer, row):\n    return answer == row['label']")
    _run(shell, "%%chat --over tickets --score judge --out results\nClassify: {text}")
    assert list(shell.user_ns["results"]["score"]) == [1.0] * 6


def test_plan_items_that_ask_wait_and_resume_with_agent_resume(
        shell: InteractiveShell, srv: ScriptedOpenAI) -> None:
    srv.default = _asking
    shell.user_ns["n"] = [1, 2]
    _run(shell, "%%plan --over n --out results\nPaint item {item}")
    results = shell.user_ns["results"]
    assert list(results["status"]) == ["ask", "ask"]
    cap = _run(shell, "%agent pending")
    assert all(r in cap.stdout for r in results["run_id"]) and "Which one?" in cap.stdout
    _run(shell, f"%agent resume {results['run_id'][0]} --option 3")
    _run(shell, "%%plan --over n --out results\nPaint item {item}")
    again = shell.user_ns["results"]
    assert list(again["status"]) == ["done", "ask"] and "Blue" in again["answer"][0]
    assert len(srv.requests) == 3

    cap = _run(shell, f"%agent show {results['run_id'][0]}")
    (card,) = cap.outputs
    assert "application/vnd.jupyter-agent.run+json" in card.data and "Blue" in \
        card.data["text/plain"]
    cap = _run(shell, "%agent batches")
    assert "plan over 2 items" in cap.stdout

    _run(shell, "%%plan --over n --auto-answer first --out results\nPaint item {item} again")
    assert list(shell.user_ns["results"]["status"]) == ["done", "done"]


REFUSED = [
    ("%%chat --concurrency 4\nHi", "--concurrency needs --over"),
    ("%%toolloop --expect label\nHi", "--expect needs --over"),
    ("%%plan --rerun\nHi", "--rerun needs --over"),
    ("%%chat --model gpt-4.1,gpt-4.1-mini\nHi", "Several models"),
    ("%%chat --over nothing_here\nHi {text}", "no variable named 'nothing_here'"),
    ("%%chat --over tickets\nHi {txt}", "Unknown field {txt}"),
    ("%%chat --over tickets\nHi {text", "Bad braces"),
    ("%%chat --over tickets --session other\nHi {text}", "--session with --over: batch items "
                                                          "run without a session"),
    ("%%chat --over tickets --history 2\nHi {text}", "--history with --over: batch items run "
                                                     "without history"),
    ("%%chat --over tickets --history=0\nHi {text}", "--history with --over"),
    ("%%chat --over tickets --no-stream\nHi {text}", "--no-stream with --over"),
    ("%%toolloop --over tickets --notebook\nHi {text}", "--notebook with --over"),
    ("%%chat --over tickets --quote-role user\nHi {text}", "--quote-role applies to --knowledge"),
    ("%%chat --over tickets --with nope\nHi {text}", "--with: No variable 'nope' in the notebook"),
    ("%%chat --over tickets --quote-prompt nope\nHi {text}", "--quote-prompt: 'nope' is not"),
    ("%%chat --over tickets --score label\nHi {text}", "not a function"),
    ("%%chat --over tickets --expect nope\nHi {text}", "no field 'nope'"),
    ("%%chat --over tickets --expect label --score judge\nHi {text}", "expect or score"),
    ("%%chat --over tickets\n   ", "The cell is empty"),
    ("%%chat --over label\nHi {item}", "must be a DataFrame, a list of dicts or a list"),
    ("%%chat --over judge\nHi {item}", "must be a DataFrame, a list of dicts or a list"),
    ("%%toolloop --over tickets --tools nope\nHi {text}", "Unknown tool 'nope'"),
]


@pytest.mark.parametrize(("source", "words"), REFUSED, ids=[s.split("\n")[0] for s, _ in REFUSED])
def test_a_bad_batch_cell_is_one_line_and_asks_nothing(shell: InteractiveShell,
                                                       srv: ScriptedOpenAI, source: str,
                                                       words: str) -> None:
    shell.run_cell("def judge(answer, row):\n    return True")
    shell.user_ns["label"] = "not callable"
    with capture_output() as cap:
        result = shell.run_cell(source)
    shell.user_ns.pop("label", None)
    assert isinstance(result.error_in_exec, UsageError), result.error_in_exec
    lines = [line for line in cap.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and words in lines[0], cap.stderr
    assert "Traceback" not in cap.stderr and not cap.outputs
    assert srv.requests == [] and "results" not in shell.user_ns
    from jupyter_agent.session import default_store

    assert default_store().list_batches() == []
