"""Evaluations: answers scored against a field (exact, case-insensitive, contains) or by a
notebook function, and several models compared on accuracy, cost, latency and tokens."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd
import pytest

from jupyter_agent import batch
from jupyter_agent.base.errors import ParameterError
from jupyter_agent.batch.evaluate import matches
from tests.fakes.openai_server import ScriptedOpenAI, hang, match, rule, text

ROWS = pd.DataFrame({
    "ticket": ["my invoice", "the app crash", "hello", "refund my invoice"],
    "label": ["billing", "technical", "other", "refund"],
})


def _answers(srv: ScriptedOpenAI, replies: dict[str, str]) -> None:
    srv.default = match(*(rule(text(v), contains=k) for k, v in replies.items()),
                        otherwise=text("other"))


@pytest.mark.parametrize(("mode", "scores"), [
    ("exact", [1.0, 0.0, 0.0, 0.0]),
    ("icase", [1.0, 1.0, 0.0, 0.0]),
    ("contains", [1.0, 1.0, 1.0, 0.0]),
])
def test_expect_matches_by_mode(srv: ScriptedOpenAI, mode: str, scores: list[float]) -> None:
    _answers(srv, {"my invoice": " billing ", "crash": "Technical",
                   "hello": "It is other, surely.", "refund": "billing"})
    rows = ROWS.copy()
    res = batch("Classify: {ticket}", rows.iloc[[0, 1, 2, 3]], kind="chat", expect="label",
                match=mode)
    assert list(res.results["score"]) == scores
    (board,) = res.board_rows
    assert board["accuracy"] == pytest.approx(sum(scores) / 4)
    assert list(res.results["label"]) == list(ROWS["label"])  # the input column is kept


def test_matching_rules() -> None:
    assert matches("  billing\n", "billing", "exact")
    assert not matches("Billing", "billing", "exact")
    assert matches("BILLING", "billing ", "icase")
    assert not matches("billing.", "billing", "icase")
    assert matches("It is Billing.", "billing", "contains")
    assert matches("x", 3, "contains") is False and matches("3", 3, "exact")


def test_a_score_function_gets_the_answer_and_the_row(srv: ScriptedOpenAI) -> None:
    _answers(srv, {"my invoice": "billing", "crash": "technical", "hello": "other"})
    seen: list[tuple[str, dict[str, Any]]] = []

    def close_enough(answer: str, row: dict[str, Any]) -> float:
        seen.append((answer, row))
        return 0.5 if row["label"] == "refund" else float(answer == row["label"])

    res = batch("Classify: {ticket}", ROWS, kind="chat", score=close_enough)
    assert list(res.results["score"]) == [1.0, 1.0, 1.0, 0.5]
    assert sorted(a for a, _ in seen) == ["billing", "billing", "other", "technical"]
    assert all(set(r) == {"ticket", "label"} for _, r in seen)

    one_arg = batch("Classify: {ticket}", ROWS, kind="chat", score=lambda a: a == "billing")
    assert list(one_arg.results["score"]) == [1.0, 0.0, 0.0, 1.0]


def test_a_score_function_that_fails_spoils_only_its_item(srv: ScriptedOpenAI) -> None:
    _answers(srv, {"my invoice": "billing", "crash": "technical"})

    def picky(answer: str, row: dict[str, Any]) -> Any:
        if answer == "technical":
            raise RuntimeError("cannot judge crashes")
        if answer == "other":
            return "great"  # not a number
        return True

    res = batch("Classify: {ticket}", ROWS, kind="chat", score=picky)
    out = res.results
    assert list(out["status"]) == ["done"] * 4  # the answers stand
    assert out["score"][0] == 1.0 and out["score"][3] == 1.0
    assert out["score"][1] is None or math.isnan(out["score"][1])
    assert "RuntimeError: cannot judge crashes" in out["error"][1]
    assert "not a number or a bool" in out["error"][2]
    assert res.board_rows[0]["accuracy"] == pytest.approx(0.5)  # no score counts as wrong


def test_failed_items_count_as_wrong_and_get_no_score(srv: ScriptedOpenAI,
                                                      fast_retries: None) -> None:
    from tests.fakes.openai_server import error

    srv.default = match(rule(error(500, "down"), contains="crash"), otherwise=text("billing"))
    res = batch("Classify: {ticket}", ROWS, kind="chat", expect="label")
    assert list(res.results["status"]) == ["done", "error", "done", "done"]
    assert res.results["score"][1] is None or math.isnan(res.results["score"][1])
    assert res.board_rows[0]["accuracy"] == pytest.approx(1 / 4)
    assert res.board_rows[0]["failed"] == 1


def test_several_models_run_every_row_and_are_compared(srv: ScriptedOpenAI) -> None:
    # The small model is fast and wrong about crashes; the big one is slow and right.
    srv.default = match(
        rule(text("other"), contains="crash", model="gpt-4.1-mini"),
        rule(hang(0.3, then=text("technical")), contains="crash", model="gpt-4.1"),
        rule(text("billing"), contains="invoice"),
        otherwise=text("other"))
    res = batch("Classify: {ticket}", ROWS, kind="chat", expect="label",
                model="gpt-4.1-mini,gpt-4.1", concurrency=4)
    out = res.results
    assert list(out["model"]) == ["gpt-4.1-mini", "gpt-4.1"] * 4
    assert list(out.index) == [0, 0, 1, 1, 2, 2, 3, 3]
    assert len(srv.requests) == 8
    assert sorted(b["model"] for b in srv.requests) == ["gpt-4.1"] * 4 + ["gpt-4.1-mini"] * 4
    mini, big = res.board_rows
    assert (mini["model"], big["model"]) == ("gpt-4.1-mini", "gpt-4.1")
    assert (mini["accuracy"], big["accuracy"]) == (0.5, 0.75)
    assert big["cost"] > mini["cost"] > 0  # gpt-4.1 costs five times more per token
    assert big["p95_seconds"] >= 0.25 > mini["p95_seconds"]
    assert mini["input_tokens"] == big["input_tokens"] > 0
    board = res.board
    assert isinstance(board, pd.DataFrame) and list(board["model"]) == ["gpt-4.1-mini", "gpt-4.1"]
    assert out.attrs["board"] is board
    png = res.chart()
    assert png is not None and png.startswith(b"\x89PNG")
    text_ = res.bundle()["text/plain"]
    assert "Comparison:" in text_ and "75.0%" in text_ and "50.0%" in text_


def test_one_model_without_evaluation_has_no_board(srv: ScriptedOpenAI) -> None:
    res = batch("Classify: {ticket}", ROWS, kind="chat")
    assert res.board is None and res.chart() is None and "score" not in res.results


def test_bad_evaluation_parameters_are_refused_before_any_request(srv: ScriptedOpenAI) -> None:
    for kwargs, words in [({"expect": "nope"}, "row 1 has no field 'nope'"),
                          ({"expect": "label", "score": len}, "expect or score"),
                          ({"score": "len"}, "score must be a function"),
                          ({"match": "fuzzy", "expect": "label"}, "match must be one of"),
                          ({"model": "gpt-4.1,gpt-4.1"}, "one model twice"),
                          ({"model": "gpt-4.1,"}, "model must name models")]:
        with pytest.raises(ParameterError, match=words):
            batch("Classify: {ticket}", ROWS, kind="chat", **kwargs)
    assert srv.requests == []
