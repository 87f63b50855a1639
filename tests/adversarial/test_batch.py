"""Batches against hostile inputs and users: a field a row lacks, NaN, duplicate ids, 10,000
rows at concurrency 64, things that are not tables, enormous or secret-bearing answers, and
kernel interrupts (real SIGINTs) in the middle of a batch."""

from __future__ import annotations

import math
import os
import signal
import sys
import threading
import time
from typing import Any

import pandas as pd
import pytest

from jupyter_agent import batch
from jupyter_agent.base.errors import ParameterError
from jupyter_agent.session import default_store
from tests.batch.conftest import classifier, srv, user_texts  # noqa: F401 - the fixture
from tests.fakes.openai_server import ScriptedOpenAI, call, hang, text, tool_calls

pytestmark = pytest.mark.timeout(180)


def _nothing_happened(server: ScriptedOpenAI) -> None:
    assert server.requests == []
    assert default_store().list_batches() == [] and default_store().list_runs() == []


def test_a_field_missing_from_one_row_is_one_line_before_anything_runs(
        srv: ScriptedOpenAI) -> None:  # noqa: F811
    rows = [{"text": "an invoice", "id": 1}, {"id": 2}, {"text": "a crash", "id": 3}]
    with pytest.raises(ParameterError) as info:
        batch("Classify {id}: {text}", rows, kind="chat")
    assert str(info.value) == "Row 2 has no field {text} (its fields: id)."
    with pytest.raises(ParameterError, match=r"Unknown field \{txt\}.*fields text, id"):
        batch("Classify: {txt}", rows[:1], kind="chat", namespace={})
    _nothing_happened(srv)


@pytest.mark.parametrize("over", [42, "a string", {"text": "a dict"}, None, 3.5, b"bytes"],
                         ids=["int", "str", "dict", "None", "float", "bytes"])
def test_something_that_is_not_a_table_is_refused(srv: ScriptedOpenAI,  # noqa: F811
                                                  over: Any) -> None:
    with pytest.raises(ParameterError, match="must be a DataFrame, a list of dicts or a list "
                                             "of values, not a"):
        batch("Classify: {item}", over, kind="chat")
    _nothing_happened(srv)


def test_listeners_that_are_not_a_list_stop_the_batch_in_one_line(
        srv: ScriptedOpenAI) -> None:  # noqa: F811
    # One function where a list belongs: every item would fail alike. It used to end each
    # item with "TypeError: 'function' object is not iterable"; now the batch stops, naming
    # the parameter, before any request.
    def listener(event: object) -> None:
        pass

    with pytest.raises(ParameterError, match="listeners must be a list of functions, not a "
                                             "function"):
        batch("Classify: {item}", ["an invoice", "a crash"], kind="chat", listeners=listener)
    assert srv.requests == []
    seen: list[str] = []
    res = batch("Classify: {item}", ["an invoice"], kind="chat", rerun=True,
                listeners=[lambda e: seen.append(e.type)])
    assert list(res.results["answer"]) == ["billing"] and "run_started" in seen


def test_rows_mixing_dicts_and_values_are_refused(srv: ScriptedOpenAI) -> None:  # noqa: F811
    with pytest.raises(ParameterError, match="row 2 is not a dict but row 1 is a dict"):
        batch("Classify: {item}", [{"item": 1}, 2], kind="chat")
    _nothing_happened(srv)


def test_nan_in_a_used_field_fails_that_item_only(srv: ScriptedOpenAI) -> None:  # noqa: F811
    df = pd.DataFrame({"text": ["an invoice", float("nan"), None, "a crash"],
                       "note": [float("nan"), "x", "y", float("nan")]})
    res = batch("Classify: {text}", df, kind="chat", concurrency=2)
    out = res.results
    assert list(out["status"]) == ["done", "error", "error", "done"]
    assert list(out["answer"]) == ["billing", "", "", "technical"]
    assert "Row 2: the field {text} has no value" in out["error"][1]
    assert pd.isna(out["run_id"][1])  # no run, no request
    assert math.isnan(out["note"][0])  # NaN elsewhere is data, kept as is
    assert sorted(user_texts(srv)) == ["Classify: a crash", "Classify: an invoice"]
    # A re-run tries the failed rows again (and fails them again, still without a request).
    batch("Classify: {text}", df, kind="chat")
    assert len(srv.requests) == 2


def test_duplicate_index_labels_are_kept_and_each_row_runs_once(
        srv: ScriptedOpenAI) -> None:  # noqa: F811
    df = pd.DataFrame({"text": ["an invoice", "a crash", "hello"]}, index=[7, 7, 7])
    out = batch("Classify: {text}", df, kind="chat").results
    assert list(out.index) == [7, 7, 7]
    assert list(out["answer"]) == ["billing", "technical", "other"]
    assert len(srv.requests) == 3


def test_an_input_column_named_like_a_result_column_is_kept_renamed(
        srv: ScriptedOpenAI) -> None:  # noqa: F811
    df = pd.DataFrame({"text": ["an invoice"], "answer": ["billing"], "status": ["open"]})
    out = batch("Classify: {text}", df, kind="chat", expect="answer").results
    assert list(out["input_answer"]) == ["billing"] and list(out["input_status"]) == ["open"]
    assert out["answer"][0] == "billing" and out["status"][0] == "done"
    assert out["score"][0] == 1.0  # expect read the row's own field


def test_ten_thousand_rows_at_concurrency_64_stay_bounded(srv: ScriptedOpenAI) -> None:  # noqa: F811
    srv.latency = 0.02
    df = pd.DataFrame({"text": [f"ticket {n} about an invoice" for n in range(10_000)]})
    peak = {"threads": 0, "running": 0}

    before = {t.ident for t in threading.enumerate()}

    def workers() -> int:  # this batch's worker threads
        return sum(t.name.startswith("jupyter-agent-batch") and t.ident not in before
                   for t in threading.enumerate())

    def watch(view: dict[str, Any]) -> None:
        peak["threads"] = max(peak["threads"], workers())
        peak["running"] = max(peak["running"], view["counts"]["running"])

    res = batch("Classify: {text}", df, kind="chat", concurrency=64, max_items=640,
                on_progress=watch)
    out = res.results
    assert len(out) == 10_000
    assert (out["status"] == "done").sum() == 640 and (out["status"] == "skipped").sum() == 9_360
    assert len(srv.requests) == 640
    assert peak["running"] <= 64 and 0 < peak["threads"] <= 64  # a thread per running item
    assert res.view["counts"]["running"] == 0 and res.view["counts"]["waiting"] == 0
    end = time.monotonic() + 5
    while workers() and time.monotonic() < end:
        time.sleep(0.05)
    assert workers() == 0  # and they are gone once the batch ended


def test_concurrency_beyond_the_limit_is_refused(srv: ScriptedOpenAI) -> None:  # noqa: F811
    for value in (0, -1, 257, 10_000, True, 2.5):
        with pytest.raises(ParameterError, match="concurrency must be an integer from 1 to 256"):
            batch("Classify: {item}", ["x"], kind="chat", concurrency=value)
    _nothing_happened(srv)


def test_an_enormous_or_secret_answer_stays_out_of_the_card(srv: ScriptedOpenAI) -> None:  # noqa: F811
    key = os.environ["OPENAI_API_KEY"]
    srv.default = text(f"leaked {key} " + "x" * 200_000)
    res = batch("Echo: {item}", ["one"], kind="chat")
    assert len(res.results["answer"][0]) > 200_000  # the table has the whole answer
    bundle = res.bundle()
    for part in (bundle["text/plain"], bundle["text/markdown"], str(bundle)):
        assert key not in part and len(part) < 20_000
    stored = default_store().batch_items(default_store().list_batches()[0].spec_key)
    assert all(key not in r.answer and "[redacted]" in r.answer for r in stored.values())


def test_unknown_options_and_kinds_are_refused(srv: ScriptedOpenAI) -> None:  # noqa: F811
    with pytest.raises(ParameterError, match="tools is not an option of a chat batch"):
        batch("Classify: {item}", ["x"], kind="chat", tools=[])
    with pytest.raises(ParameterError, match="kind must be chat, toolloop or plan"):
        batch("Classify: {item}", ["x"], kind="helper")
    with pytest.raises(ParameterError, match="max_cost must be a number above 0"):
        batch("Classify: {item}", ["x"], kind="chat", max_cost=float("nan"))
    with pytest.raises(ParameterError, match="Empty {}"):
        batch("Classify: {}", ["x"], kind="chat")
    _nothing_happened(srv)


# ---------------------------------------------------------------------------- interrupts
def _interrupt_when(predicate: Any, times: int = 1) -> threading.Thread:
    """Send this process SIGINT ``times`` times once ``predicate()`` holds (as the kernel's
    interrupt button does), from a helper thread."""
    def run() -> None:
        end = time.monotonic() + 30
        while not predicate() and time.monotonic() < end:
            time.sleep(0.01)
        for _ in range(times):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.1)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to self is POSIX")
def test_one_interrupt_lets_running_items_finish(srv: ScriptedOpenAI) -> None:  # noqa: F811
    srv.default = hang(0.5, then=text("billing"))
    t = _interrupt_when(lambda: len(srv.requests) == 4)
    res = batch("Classify: {item}", [f"t{n}" for n in range(12)], kind="chat", concurrency=4)
    t.join()
    assert list(res.results["status"]) == ["done"] * 4 + ["skipped"] * 8
    assert res.status == "stopped" and res.stop_reason.startswith("Interrupted")


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to self is POSIX")
def test_a_second_interrupt_aborts_running_items(srv: ScriptedOpenAI) -> None:  # noqa: F811
    def answer(body: dict[str, Any]) -> Any:
        if body["messages"][-1]["role"] == "tool":
            return text("never asked")
        return hang(0.8, then=tool_calls([call("noop", {})]))

    def noop() -> str:
        """Nothing."""
        return "ok"

    srv.default = answer
    t = _interrupt_when(lambda: len(srv.requests) == 4, times=2)
    res = batch("Task {item}", list(range(8)), concurrency=4, tools=[noop])
    t.join()
    assert list(res.results["status"]) == ["aborted"] * 4 + ["skipped"] * 4
    assert len(srv.requests) == 4 and "aborted" in res.stop_reason


def test_entry_point_parameters_are_checked_before_anything_runs(
        srv: ScriptedOpenAI) -> None:  # noqa: F811
    with pytest.raises(ParameterError, match="max_rounds must be an integer of 1 or more"):
        batch("Do {item}", ["x"], max_rounds=0)
    with pytest.raises(ParameterError, match="option must be an integer of 1 or more"):
        batch("Do {item}", ["x"], kind="plan", option=0)
    with pytest.raises(ParameterError, match="engine 'dask' makes live model calls only"):
        batch("Do {item}", ["x"], kind="chat", engine="dask", clients={"m": object()})
    _nothing_happened(srv)


def test_large_knowledge_is_stored_as_a_hash_and_still_tells_batches_apart(
        srv: ScriptedOpenAI) -> None:  # noqa: F811
    docs = [f"Document {n}: " + "policy text " * 500 for n in range(200)]
    batch("Classify: {item}", ["an invoice"], kind="chat", knowledge=docs)
    (record,) = default_store().list_batches()
    assert len(str(record.options)) < 500  # not the 1.2 MB of documents
    batch("Classify: {item}", ["an invoice"], kind="chat", knowledge=docs)
    assert len(srv.requests) == 1  # the same documents: the same work
    batch("Classify: {item}", ["an invoice"], kind="chat", knowledge=docs[:-1])
    assert len(srv.requests) == 2  # other documents: other work
