"""A finished batch card tells the truth (issue 37): rows it leaves out are counted and the
card says where they are; a cost or saving that needs an unknown price says "unknown", never
0; the judge's calls sent apart from those the cache answered; plurals right; the comparison
chart reads on a dark theme (transparent, mid-tone) and names an unknown cost."""

from __future__ import annotations

import io
from typing import Any

import pytest

from jupyter_agent import batch
from jupyter_agent.view.batch import (
    COST_UNKNOWN,
    batch_markdown,
    batch_plain,
    judge_line,
    summary_line,
)
from tests.fakes.openai_server import ScriptedOpenAI, text

UNPRICED = "some-unpriced-model"


def test_a_60_row_batch_says_40_more_and_where_they_are(srv: ScriptedOpenAI) -> None:
    res = batch("Classify: {item}", [f"ticket {i}" for i in range(60)], kind="chat",
                store=None, concurrency=4)
    assert len(res.results) == 60
    view = res.view
    assert len(view["preview"]) == 20 and view["results_total"] == 60
    for shown in (batch_markdown(view), batch_plain(view)):
        assert "… 40 more not shown" in shown and "_agent_batch.results" in shown
    # Every row shown: no such line.
    small = batch("Classify: {item}", ["a", "b"], kind="chat", store=None)
    assert "more not shown" not in batch_markdown(small.view)


def test_an_unpriced_judge_says_cost_unknown_not_zero(srv: ScriptedOpenAI) -> None:
    def answer(body: dict[str, Any]) -> Any:
        if "strict judge" in body["messages"][-1]["content"]:
            return text('{"score": 4, "reason": "fine"}')
        return text("billing")

    srv.default = answer
    res = batch("Classify: {item}", ["a", "b"], kind="chat", model=UNPRICED,
                judge="Correct.", store=None)
    j = res.view["judge"]
    assert j["priced"] is False and j["cost"] is None
    line = judge_line(res.view)
    assert line is not None and COST_UNKNOWN in line and "cost 0.0000" not in line
    assert "2 calls sent" in line and "2 answers" in line
    assert res.view["cost"] is None and COST_UNKNOWN in summary_line(res.view)


def test_a_fully_cached_judge_sent_nothing(srv: ScriptedOpenAI) -> None:
    def answer(body: dict[str, Any]) -> Any:
        if "strict judge" in body["messages"][-1]["content"]:
            return text('{"score": 5, "reason": "right"}')
        return text("billing")

    srv.default = answer
    items = ["one", "two", "three", "four", "five"]
    batch("Classify: {item}", items, kind="chat", judge="Correct.", cache=True)
    sent = len(srv.requests)
    again = batch("Classify: {item}", items, kind="chat", judge="Correct.", cache=True,
                  rerun=True)
    assert len(srv.requests) == sent  # nothing sent the second time
    line = judge_line(again.view)
    assert line is not None
    assert "5 calls from the cache, none sent" in line, line
    assert "5 calls sent" not in line


def test_plurals_and_an_unknown_saving() -> None:
    view = {"judge": {"model": "m", "scale": 5, "judged": 1, "mean": 4.0, "invalid": 0,
                      "calls": 1, "cost": 0.5, "priced": True,
                      "pairwise": {"compared": 3, "a": "x", "b": "y", "wins_a": 1,
                                   "wins_b": 1, "ties": 1, "win_rate_a": 0.5}}}
    line = judge_line(view)
    assert line is not None
    assert "1 answer ·" in line and "1 call sent" in line
    assert "1 win, 1 loss, 1 tie" in line and "losses" not in line
    unpriced = {"counts": {}, "cost": None, "cached": 3, "saved": None, "elapsed": 1.0}
    assert "3 answers from the cache, not sent (saved unknown: set a price in the profile)" \
        in summary_line(unpriced)
    assert "saved 0" not in summary_line(unpriced)


def test_the_chart_is_transparent_and_names_an_unknown_cost() -> None:
    pytest.importorskip("matplotlib")
    from matplotlib.image import imread

    from jupyter_agent.batch.results import chart_png

    board = [{"model": "priced", "items": 2, "done": 2, "failed": 0, "cost": 0.02,
              "p50_seconds": 0.1, "p95_seconds": 0.2},
             {"model": UNPRICED, "items": 2, "done": 2, "failed": 0, "cost": None,
              "p50_seconds": 0.1, "p95_seconds": 0.3}]
    png = chart_png(board)
    assert png is not None
    pixels = imread(io.BytesIO(png))
    assert pixels.shape[2] == 4 and pixels[0, 0, 3] == 0  # no white sheet on a dark theme
    opaque = pixels[pixels[..., 3] > 0.9][..., :3]
    # Nothing drawn is pure white (invisible on light) or pure black (invisible on dark).
    assert opaque.size and not (opaque.min(axis=1) > 0.97).any()
    assert not (opaque.max(axis=1) < 0.03).any()
