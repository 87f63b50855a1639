"""A batch over pandas, polars, dicts and values: one item per row, results in row order with
the documented columns, each item's run stored by its id; one item's failure stays its own."""

from __future__ import annotations

import threading
from typing import Any

import pandas as pd
import polars as pl
import pytest

from jupyter_agent import batch, tool
from jupyter_agent.batch.cards import run_card
from jupyter_agent.session import default_store
from tests.batch.conftest import EXPECTED, TICKETS, classifier, user_texts
from tests.fakes.openai_server import ScriptedOpenAI, call, error, hang, text, tool_calls

COLUMNS = ["answer", "status", "rounds", "input_tokens", "output_tokens", "cost", "seconds",
           "error", "run_id"]


def test_a_dataframe_gives_its_rows_back_in_order_with_the_result_columns(
        srv: ScriptedOpenAI) -> None:
    # The first row's answer comes last: results keep the rows' order, not the finishing order.
    classify = classifier()

    def answer(body: dict[str, Any]) -> Any:
        content = body["messages"][-1]["content"]
        slow = 0.6 if TICKETS[0] in content else 0.0
        return hang(slow, then=classify.pick(body))

    srv.default = answer
    df = pd.DataFrame({"ticket": TICKETS, "id": range(100, 106)},
                      index=[f"t{i}" for i in range(6)])
    result = batch("Classify: {ticket}", df, kind="chat", concurrency=3)

    out = result.results
    assert isinstance(out, pd.DataFrame)
    assert list(out.columns) == ["ticket", "id", *COLUMNS]
    assert list(out.index) == list(df.index) and list(out["id"]) == list(df["id"])
    assert list(out["answer"]) == EXPECTED
    assert set(out["status"]) == {"done"} and set(out["rounds"]) == {1}
    assert (out["input_tokens"] > 0).all() and (out["cost"] > 0).all()
    assert out["error"].isna().all()
    # Every request was one of the rows, each row exactly once; the slow one finished last.
    assert sorted(user_texts(srv)) == sorted(f"Classify: {t}" for t in TICKETS)
    assert result.outcomes[0]["seconds"] >= 0.5
    # Each item's run is in the store under its id, with its full card.
    store = default_store()
    for run_id, answer_ in zip(out["run_id"], out["answer"]):
        assert store.get_run(run_id).status == "done"
        card = run_card(run_id)
        assert card.answer == answer_ and "text/markdown" in card.bundle()
        # A stored card is static: no widget view (its events are not a widget's model id).
        assert "application/vnd.jupyter.widget-view+json" not in card.bundle()
    assert result.status == "done" and result.view["counts"]["done"] == 6


def test_items_share_no_history_and_no_session(srv: ScriptedOpenAI) -> None:
    batch("Classify: {ticket}", [{"ticket": t} for t in TICKETS[:3]], kind="chat",
          concurrency=1)
    for body in srv.requests:  # one user message each: nothing of another item came along
        assert [m["role"] for m in body["messages"] if m["role"] != "system"] == ["user"]
        assert body.get("stream") is not True
    assert default_store().list_sessions(None) == []


def test_polars_list_of_dicts_and_plain_values(srv: ScriptedOpenAI) -> None:
    pl_df = pl.DataFrame({"ticket": TICKETS[:3], "n": [1, 2, 3]})
    res = batch("Classify: {ticket}", pl_df, kind="chat").results
    assert isinstance(res, pl.DataFrame)
    assert res.columns == ["ticket", "n", *COLUMNS]
    assert res["answer"].to_list() == EXPECTED[:3] and res["n"].to_list() == [1, 2, 3]

    dicts = batch("Classify: {ticket}", [{"ticket": t, "k": i} for i, t in enumerate(TICKETS[:2])],
                  kind="chat").results
    assert list(dicts.columns) == ["ticket", "k", *COLUMNS]
    assert list(dicts["answer"]) == EXPECTED[:2]

    values = batch("Classify: {item}", TICKETS[3:], kind="chat").results
    assert list(values.columns) == ["item", *COLUMNS]
    assert list(values["answer"]) == EXPECTED[3:]


STYLE = "one word"


def test_notebook_variables_fill_fields_the_rows_lack(srv: ScriptedOpenAI) -> None:
    # Like a cell: a field the rows lack comes from the caller's variables...
    res = batch("Answer in {STYLE}: {ticket}", [{"ticket": "an invoice"}], kind="chat").results
    # ...and a row's field wins over a variable of the same name.
    batch("Answer in {STYLE}: {ticket}", [{"ticket": "a crash", "STYLE": "French"}],
          kind="chat", namespace={"STYLE": "ignored"})
    assert res["answer"][0] == "billing"
    assert user_texts(srv) == ["Answer in one word: an invoice", "Answer in French: a crash"]


def test_a_toolloop_batch_runs_the_notebook_tools_per_item(srv: ScriptedOpenAI) -> None:
    calls: list[str] = []
    lock = threading.Lock()

    @tool
    def lookup(order: str) -> str:
        """Look an order up."""
        with lock:
            calls.append(order)
        return f"order {order}: paid"

    def answer(body: dict[str, Any]) -> Any:
        last = body["messages"][-1]
        if last["role"] == "tool":
            return text(f"done: {last['content']}")
        order = last["content"].split()[-1]
        return tool_calls([call("lookup", {"order": order})])

    srv.default = answer
    res = batch("Check order {order}", [{"order": str(n)} for n in range(8)], concurrency=4)
    out = res.results
    assert list(out["answer"]) == [f"done: order {n}: paid" for n in range(8)]
    assert set(out["rounds"]) == {2} and sorted(calls) == sorted(str(n) for n in range(8))
    assert len(srv.requests) == 16


def test_one_failing_item_does_not_stop_the_others(srv: ScriptedOpenAI,
                                                   fast_retries: None) -> None:
    classify = srv.default

    def answer(body: dict[str, Any]) -> Any:
        if "broken" in body["messages"][-1]["content"]:
            return error(400, "this item is malformed")  # not retried: a client error
        return classify.pick(body)

    srv.default = answer
    rows = [{"ticket": t} for t in ["an invoice", "broken row", "a crash"]]
    res = batch("Classify: {ticket}", rows, kind="chat", concurrency=2)
    out = res.results
    assert list(out["status"]) == ["done", "error", "done"]
    assert list(out["answer"]) == ["billing", "", "technical"]
    assert "this item is malformed" in out["error"][1]
    assert out["run_id"][1] and default_store().get_run(out["run_id"][1]).status == "error"
    assert res.status == "done" and res.view["counts"] == {
        "done": 2, "failed": 1, "running": 0, "waiting": 0, "ask": 0, "skipped": 0}


def test_a_tool_that_raises_is_the_models_problem_not_the_batchs(srv: ScriptedOpenAI) -> None:
    @tool
    def flaky(n: int) -> int:
        """Fails on odd numbers."""
        if n % 2:
            raise ValueError(f"odd {n}")
        return n

    def answer(body: dict[str, Any]) -> Any:
        last = body["messages"][-1]
        if last["role"] == "tool":
            return text(last["content"])
        return tool_calls([call("flaky", {"n": int(last["content"].split()[-1])})])

    srv.default = answer
    out = batch("n {item}", [1, 2, 3], concurrency=3).results
    assert list(out["status"]) == ["done"] * 3
    assert list(out["answer"]) == ["Tool error: ValueError: odd 1", "2",
                                   "Tool error: ValueError: odd 3"]


@pytest.mark.parametrize("kind", ["chat", "toolloop", "plan"])
def test_every_agent_kind_runs_over_rows(srv: ScriptedOpenAI, kind: str) -> None:
    options: dict[str, Any] = {} if kind == "chat" else {"tools": []}
    out = batch("Classify: {item}", ["an invoice", "a crash"], kind=kind, **options).results
    assert list(out["answer"]) == ["billing", "technical"]
    assert {default_store().get_run(r).kind for r in out["run_id"]} == {kind}
