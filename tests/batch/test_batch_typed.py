"""Typed columns, the LLM judge and the cache over a batch (docs/behaviour.md §10.14):
through ``batch()`` and through ``--over`` in a real IPython shell."""

from __future__ import annotations

import datetime as dt
import enum
import json
import re
from collections.abc import Iterator
from typing import Any, Literal

import pandas as pd
import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
from pydantic import BaseModel

from jupyter_agent.batch import batch
from jupyter_agent.batch.judge import SCALE
from tests.fakes.openai_server import ScriptedOpenAI, match, rule, text

pytestmark = pytest.mark.timeout(120)


class Level(enum.Enum):
    low = "low"
    high = "high"


class Ticket(BaseModel):
    label: Literal["billing", "technical", "other"]
    urgency: int
    confidence: float
    refund: bool
    summary: str
    when: dt.datetime
    level: Level
    tags: list[str]
    note: str | None = None


def _answer(label: str, urgency: int) -> str:
    return json.dumps({"label": label, "urgency": urgency, "confidence": urgency / 2,
                       "refund": label == "billing", "summary": f"a {label} ticket",
                       "when": "2024-05-01T10:00:00", "level": "high", "tags": [label]})


TEXTS = ["My invoice is wrong", "The app crashes", "Hello there", "Broken stuff"]
LABELS = ["billing", "technical", "other", "technical"]


def typed_model() -> Any:
    return match(rule(text(_answer("billing", 3)), contains="invoice"),
                 rule(text(_answer("technical", 5)), contains="crashes"),
                 rule(text(_answer("other", 1)), contains="Hello"),
                 otherwise=text("no idea"))


@pytest.fixture
def srv(server: ScriptedOpenAI) -> Iterator[ScriptedOpenAI]:
    from jupyter_agent.llm.limiter import reset_limiters

    server.default = typed_model()
    reset_limiters()
    yield server
    reset_limiters()


def test_typed_columns_with_dtypes_status_and_errors(srv: ScriptedOpenAI) -> None:
    rows = pd.DataFrame({"text": TEXTS, "label": LABELS})
    res = batch("Classify: {text}", rows, kind="chat", output=Ticket, schema_retries=1,
                expect="label", store=None)
    t = res.results
    assert list(t["status"]) == ["done", "done", "done", "invalid"]
    assert list(t["label"][:3]) == ["billing", "technical", "other"] and pd.isna(t["label"][3])
    assert "input_label" in t.columns  # the row's column kept beside the field
    assert str(t["urgency"].dtype) == "Int64" and t["urgency"].tolist()[:3] == [3, 5, 1]
    assert str(t["confidence"].dtype) == "float64"
    assert str(t["refund"].dtype) == "boolean"
    assert str(t["summary"].dtype) == "string"
    assert str(t["when"].dtype).startswith("datetime64")
    assert str(t["label"].dtype) == "category" and str(t["level"].dtype) == "category"
    assert t["tags"][0] == ["billing"]  # lists stay objects
    assert t["errors"][:3].isna().all() and "not a JSON object" in t["errors"][3]
    # --expect label compares the field, not the JSON text.
    assert res.scores == [1.0, 1.0, 1.0, None]
    assert len(srv.requests) == 5  # 3 valid + the invalid one and its retry


def test_score_gets_the_instance(srv: ScriptedOpenAI) -> None:
    seen: list[Any] = []

    def urgent(answer: Any) -> bool:
        seen.append(answer)
        return answer.urgency >= 3

    res = batch("Classify: {item}", TEXTS[:3], kind="chat", output=Ticket, score=urgent,
                store=None)
    assert all(isinstance(a, Ticket) for a in seen)
    assert res.scores == [1.0, 1.0, 0.0]


def judge_model(verdicts: list[str]) -> Any:
    """Items answer typed; judge requests get ``verdicts`` in turn."""
    queue = list(verdicts)

    def answer(body: dict[str, Any]) -> Any:
        last = body["messages"][-1]["content"]
        if "strict judge" in last or "does not match" in last:
            return text(queue.pop(0) if queue else '{"score": 3, "reason": "ok"}')
        return typed_model().pick(body)

    return answer


def test_the_judge_scores_each_answer_and_is_counted(srv: ScriptedOpenAI) -> None:
    srv.default = judge_model(['{"score": 4, "reason": "clear"}'] * 3)
    res = batch("Classify: {item}", TEXTS[:3], kind="chat", output=Ticket,
                judge="The summary names the problem.", concurrency=1, store=None)
    t = res.results
    assert t["judge_score"].tolist() == [4, 4, 4] and t["judge_reason"].tolist()[0] == "clear"
    j = res.view["judge"]
    assert j["mean"] == 4 and j["judged"] == 3 and j["calls"] == 3 and j["cost"] > 0
    judge_bodies = [b for b in srv.requests if "strict judge" in b["messages"][-1]["content"]]
    assert len(judge_bodies) == 3
    assert judge_bodies[0]["response_format"]["json_schema"]["name"] == "Verdict"
    assert "The summary names the problem." in judge_bodies[0]["messages"][-1]["content"]
    assert res.view["cost"] >= j["cost"]
    assert "Judge (" in res.bundle()["text/markdown"]


def test_an_off_scale_judge_is_retried_then_left_without_a_score(srv: ScriptedOpenAI) -> None:
    srv.default = judge_model(['{"score": 11, "reason": "great"}', '{"score": 5, "reason": "fixed"}',
                               '{"score": 0, "reason": "x"}', '{"score": 99, "reason": "x"}',
                               '{"score": -3, "reason": "x"}'])
    res = batch("Classify: {item}", TEXTS[:2], kind="chat", output=Ticket,
                judge="Correct label.", concurrency=1, store=None)
    t = res.results
    assert t["judge_score"].tolist()[0] == 5
    assert pd.isna(t["judge_score"].tolist()[1]) and "judge:" in t["judge_reason"][1]
    assert res.view["judge"]["invalid"] == 1 and res.view["judge"]["calls"] == 5
    retry = [b for b in srv.requests if "does not match" in b["messages"][-1]["content"]]
    assert retry and f"less than or equal to {SCALE}" in retry[0]["messages"][-1]["content"]
    # The card's results table shows each row's judge score; one the judge never gave is "–".
    assert [r["judge"] for r in res.view["preview"]] == [5, None]
    md = res.bundle()["text/markdown"]
    assert "| row | model | status | answer | judge |" in md
    assert [line.rsplit("|", 2)[1].strip() for line in md.splitlines()
            if line.startswith(("| 1 |", "| 2 |"))] == ["5", "–"]
    assert "(judge 5)" in res.bundle()["text/plain"]


def test_a_batch_without_a_judge_has_no_judge_column(srv: ScriptedOpenAI) -> None:
    srv.default = judge_model([])
    res = batch("Classify: {item}", TEXTS[:1], kind="chat", output=Ticket, store=None)
    assert "judge" not in res.view["preview"][0]
    assert "judge |" not in res.bundle()["text/markdown"]


def test_two_models_are_compared_as_a_win_rate(srv: ScriptedOpenAI) -> None:
    def answer(body: dict[str, Any]) -> Any:
        last = body["messages"][-1]["content"]
        if "Which answer better" in last:
            return text('{"better": "A", "reason": "more precise"}')
        if "strict judge" in last:
            return text('{"score": 3, "reason": "fine"}')
        return text("an answer from " + body["model"])

    srv.default = answer
    res = batch("Say: {item}", ["a", "b", "c"], kind="chat", model="gpt-4.1-mini,gpt-4.1",
                judge="Precise.", store=None)
    pw = res.view["judge"]["pairwise"]
    # A judge that always says "A": every other row shows the answers the other way round,
    # so its bias for the first answer splits between the models.
    assert pw == {**pw, "a": "gpt-4.1-mini", "b": "gpt-4.1", "wins_a": 2, "wins_b": 1,
                  "compared": 3}
    assert pw["win_rate_a"] == pytest.approx(2 / 3)
    assert res.view["judge"]["calls"] == 6 + 3
    assert "win rate 67%" in res.bundle()["text/plain"]
    pair_prompts = [b["messages"][-1]["content"] for b in srv.requests
                    if "Which answer better" in b["messages"][-1]["content"]]
    firsts = {re.split(r"<answer_a-[0-9a-f]{16}>\n", p)[1].split("\n")[0] for p in pair_prompts}
    assert firsts == {"an answer from gpt-4.1-mini", "an answer from gpt-4.1"}


def test_judge_model_picks_the_judges_model(srv: ScriptedOpenAI) -> None:
    srv.default = judge_model([])
    batch("Classify: {item}", TEXTS[:1], kind="chat", judge="x", judge_model="gpt-4.1",
          store=None)
    models = {b["model"] for b in srv.requests
              if "strict judge" in b["messages"][-1]["content"]}
    assert models == {"gpt-4.1"}


def test_a_rerun_with_the_cache_sends_nothing(srv: ScriptedOpenAI) -> None:
    first = batch("Classify: {item}", TEXTS[:3], kind="chat", output=Ticket, cache=True)
    sent = len(srv.requests)
    again = batch("Classify: {item}", TEXTS[:3], kind="chat", output=Ticket, cache=True,
                  rerun=True)
    assert len(srv.requests) == sent
    assert again.results["urgency"].tolist() == first.results["urgency"].tolist()
    assert float(again.results["cost"].sum()) == 0.0
    assert again.view["cached"] == 3 and first.view["cached"] == 0
    assert "3 answers from the cache, not sent (saved" in again.bundle()["text/plain"]


@pytest.fixture
def shell(ip: InteractiveShell, srv: ScriptedOpenAI) -> Iterator[InteractiveShell]:
    ip.run_cell("%config AgentMagics.widgets = False")
    ip.user_ns.update(rows=pd.DataFrame({"text": TEXTS[:3]}), Ticket=Ticket)
    yield ip
    for name in ("rows", "Ticket", "table", "_agent_batch"):
        ip.user_ns.pop(name, None)
    ip.run_cell("%config AgentMagics.widgets = True")


def _cell(shell: InteractiveShell, source: str) -> None:
    with capture_output():
        result = shell.run_cell(source)
    assert result.success, result.error_in_exec


@pytest.mark.parametrize("magic", ["chat", "toolloop"])
def test_over_with_schema_judge_and_cache_through_the_magics(shell: InteractiveShell,
                                                             srv: ScriptedOpenAI,
                                                             magic: str) -> None:
    srv.default = judge_model([])
    _cell(shell, f"%%{magic} --over rows --schema Ticket --schema-retries 0 --cache "
                 "--judge 'Names the problem.' --judge-model gpt-4.1 --out table\n"
                 "Classify: {text}")
    table = shell.user_ns["table"]
    assert str(table["urgency"].dtype) == "Int64" and "judge_score" in table.columns
    assert all("response_format" in b for b in srv.requests)
    sent = len(srv.requests)
    _cell(shell, f"%%{magic} --over rows --schema Ticket --cache --rerun --out table\n"
                 "Classify: {text}")
    assert len(srv.requests) == sent  # every item from the cache


# Each flag this feature adds, under --over: the flagged cell differs from its control in what
# the row looks at (tests/adversarial/test_flag_effects.py does the same for plain cells).
def _columns(t: Any, srv: ScriptedOpenAI) -> Any:
    return sorted(t.columns)


def _requests(t: Any, srv: ScriptedOpenAI) -> Any:
    return len(srv.requests)


def _judge_models(t: Any, srv: ScriptedOpenAI) -> Any:
    return sorted({b["model"] for b in srv.requests
                   if "strict judge" in b["messages"][-1]["content"]})


OVER_CASES = [
    ("--schema", "", "--schema Ticket", _columns),
    ("--schema-retries", "--schema Ticket --rerun", "--schema Ticket --rerun --schema-retries 0",
     _requests),
    ("--cache", "--rerun", "--rerun --cache", _requests),
    ("--judge", "", "--judge 'Names the problem.'", _columns),
    ("--judge-model", "--judge x", "--judge x --judge-model gpt-4.1", _judge_models),
]


@pytest.mark.parametrize("flag,base,flagged,key", OVER_CASES, ids=[c[0] for c in OVER_CASES])
def test_each_new_flag_changes_a_batch(shell: InteractiveShell, srv: ScriptedOpenAI, flag: str,
                                       base: str, flagged: str, key: Any) -> None:
    shell.user_ns["rows"] = pd.DataFrame({"text": ["My invoice is wrong", "Broken stuff"]})

    def run(flags: str) -> Any:
        srv.reset()
        srv.default = judge_model([])
        _cell(shell, f"%%chat --over rows {flags} --out table\nClassify: {{text}}")
        return key(shell.user_ns["table"], srv)

    if flag == "--cache":
        _cell(shell, "%%chat --over rows --cache --out table\nClassify: {text}")  # fills it
    first, second = run(base), run(base)
    assert first == second, f"{flag}: the control runs differ"
    assert run(flagged) != first, f"{flag} changed nothing under --over"


@pytest.mark.parametrize("line,message", [
    ("%%chat --schema Nope", "--schema: no variable named 'Nope'."),
    ("%%chat --schema-retries 1", "--schema-retries needs --schema NAME."),
    ("%%chat --schema rows", "--schema: a pydantic model class or a JSON schema dict is needed"),
    ("%%chat --judge x", "--judge needs --over VAR (a batch)."),
    ("%%chat --over rows --judge-model gpt-4.1", "--judge-model needs --judge"),
])
def test_mistakes_are_one_line_before_any_request(shell: InteractiveShell, srv: ScriptedOpenAI,
                                                  line: str, message: str) -> None:
    with capture_output():
        result = shell.run_cell(f"{line}\nClassify this.")
    assert message in str(result.error_in_exec)
    assert srv.requests == []


def test_config_cache_turns_it_on_for_every_cell(shell: InteractiveShell,
                                                 srv: ScriptedOpenAI) -> None:
    srv.default = text("ok")
    try:
        _cell(shell, "%config AgentMagics.cache = True")
        for _ in range(2):
            _cell(shell, "%%chat --no-history\nSame question.")
        assert len(srv.requests) == 1
        assert shell.user_ns["_agent_run"].view["footer"]["cached"] == 1
    finally:
        _cell(shell, "%config AgentMagics.cache = False")
    _cell(shell, "%%chat --no-history\nSame question.")
    assert len(srv.requests) == 2


def test_a_polars_input_gives_polars_typed_columns(srv: ScriptedOpenAI) -> None:
    pl = pytest.importorskip("polars")
    res = batch("Classify: {text}", pl.DataFrame({"text": TEXTS[:2]}), kind="chat",
                output=Ticket, store=None)
    t = res.results
    assert isinstance(t, pl.DataFrame)
    assert t["urgency"].to_list() == [3, 5] and t["label"].to_list() == ["billing", "technical"]
