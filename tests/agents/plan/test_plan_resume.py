"""Asks suspend a ``%%plan`` run as data; answers resume it (docs/behaviour.md §6.11).

Also: resuming from a rebuilt Run (a kernel restart), a tool missing at resume, idempotent and
concurrent resumes, and the up-front answers of headless runs.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.agents.held import HELD
from jupyter_agent.agents.pending import PlanPending, load_pending
from jupyter_agent.agents.plan import plan, resume_hint
from jupyter_agent.agents.resume import Answer, resume
from jupyter_agent.base.errors import ResumeError
from jupyter_agent.session import Store
from jupyter_agent.tools.registry import REGISTRY, tool
from tests.agents.plan.plan_scripts import OPTIONS, ask, events_of, set_plan, step_done
from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls
from tests.stored import stored_messages

pytestmark = pytest.mark.usefixtures("plan_env")

PROMPT = "Please create a plan for migrating the DB"


def _ask_call(cid: str, question: str = "Which one?") -> dict[str, Any]:
    return {"id": cid, "type": "function",
            "function": {"name": "ask_agent", "arguments": json.dumps(ask(question))}}


def _suspend_in_turn_two(srv: ScriptedOpenAI, client: Any, store: Store, **kw: Any) -> Any:
    srv.enqueue(tool_calls([call("update_plan", set_plan("1"), id="p1")]),
                tool_calls([call("ask_agent", ask(), id="a1")]))
    return plan(PROMPT, client=client, store=store, tools=kw.pop("tools", []), **kw)


def test_simplest_ask_suspends_and_an_answer_resumes(srv: ScriptedOpenAI, client: Any,
                                                      store: Store):
    srv.enqueue(tool_calls([call("ask_agent", ask(), id="a1")]))
    run = plan("go", client=client, store=store, tools=[])
    assert run.status == "ask"

    srv.enqueue(text("Going with B."))
    run = resume(run.run_id, Answer("option", option_index=2), run=run, store=store,
                 client=client)
    assert run.status == "done" and run.answer == "Going with B."


def test_valid_ask_in_turn_two_suspends_with_the_saved_context(
        srv: ScriptedOpenAI, client: Any, store: Store):
    # §14.29.
    run = _suspend_in_turn_two(srv, client, store)

    assert run.status == "ask" and run.error is None and run.answer == ""
    assert resume_hint(run) == (
        "Waiting for your answer. Click an option, or run "
        f"`%agent resume {run.run_id} --option N` / `--answer \"...\"` / `--dismiss`.")
    assert not events_of(run, "warning")
    pending = run.pending
    assert pending is not None
    assert isinstance(pending, PlanPending) and pending.version == 1
    assert pending.kind == "plan" and pending.call_id == "a1"
    assert pending.messages[:-1] == srv.requests[1]["messages"]  # the round's snapshot
    assert pending.messages[-1] == {"role": "assistant", "content": "",
                                    "tool_calls": [_ask_call("a1")]}
    assert pending.card.question == "Which one?" and pending.card.options == OPTIONS
    assert pending.card.call_id == "a1" and pending.card.kind == "ask"
    assert pending.model == "gpt-4.1-mini" and pending.tools == []
    assert pending.rounds == 2
    assert pending.options.max_rounds == 100
    assert pending.plan_state.require_plan is True
    assert pending.plan_state.active_plan is not None
    assert pending.plan_state.active_plan.steps[0].id == "1"
    assert pending.turn_messages[0] == {"role": "user", "content": PROMPT}
    record = store.get_run(run.run_id)
    assert record.status == "ask" and load_pending(record.pending) == pending
    assert record.pending == pending.to_json()
    assert run.view["status"] == "ask" and run.view["ask"]["options"] == OPTIONS
    assert run.plan is not None and run.plan["steps"][0]["status"] == "pending"
    # Suspended, not finished: the rounds finished before the ask are in the session already
    # (written round by round), the ask round is not; the resume knows how many are there.
    saved = stored_messages(store, "default")
    assert saved[0] == {"role": "user", "content": PROMPT}
    assert saved[1:] == pending.turn_messages[1:len(saved)]
    assert pending.persisted == len(saved)
    assert not any(m.get("tool_calls") and m["tool_calls"][0]["id"] == "a1" for m in saved)


def test_resume_sends_saved_messages_plus_the_answer(srv: ScriptedOpenAI, client: Any,
                                                     store: Store):
    # §14.30: no new system prompt, state restored, rounds numbered on.
    run = _suspend_in_turn_two(srv, client, store)
    saved = run.pending.messages

    srv.enqueue(tool_calls([call("update_plan", step_done("1"), id="p2")]), text("Migrated."))
    same = resume(run.run_id, Answer("option", option_index=2), run=run, store=store,
                  client=client)

    assert same is run and run.status == "done" and run.answer == "Migrated."
    first = srv.requests[2]
    assert first["messages"] == [*saved, {"role": "tool", "tool_call_id": "a1",
                                          "content": "The user chose option 2 of 3: Option B"}]
    assert sum(m["role"] == "system" for m in first["messages"]) == 1
    # The restored plan is there (update_step on it succeeds), so the last request is forced.
    assert [r["tool_choice"] for r in srv.requests[2:]] == ["auto", "none"]
    assert srv.requests[3]["messages"][-1]["content"].startswith("Applied 1 plan update.")
    assert [e.round for e in events_of(run, "round_started")] == [1, 2, 3, 4]
    assert run.rounds == 4
    assert run.plan["steps"][0]["status"] == "done"
    (answered,) = events_of(run, "ask_answered")
    assert answered.how == "option" and answered.answer == "Option B"
    assert [e.status for e in events_of(run, "run_finished")] == ["ask", "done"]
    record = store.get_run(run.run_id)
    assert record.status == "done" and record.pending is None
    saved_history = stored_messages(store, "default")
    assert [m["role"] for m in saved_history] == [
        "user", "assistant", "tool", "assistant", "tool", "assistant", "tool", "assistant"]
    assert saved_history[3] == {"role": "assistant", "content": "",
                                "tool_calls": [_ask_call("a1")]}
    assert saved_history[4]["content"] == "The user chose option 2 of 3: Option B"
    assert saved_history[-1] == {"role": "assistant", "content": "Migrated."}
    assert [i["kind"] for i in run.view["items"]].count("ask") == 1


def test_other_text_and_dismissal_are_told_apart(srv: ScriptedOpenAI, client: Any,
                                                 store: Store):
    srv.enqueue(tool_calls([call("ask_agent", ask(), id="a1")]))
    run = plan("go", client=client, store=store, tools=[])
    srv.enqueue(tool_calls([call("ask_agent", ask("Sure?"), id="a2")]))
    resume(run.run_id, Answer("other", text="use D"), run=run, store=store, client=client)
    assert srv.requests[1]["messages"][-1]["content"] == (
        "The user chose none of the options and wrote instead: use D")
    assert run.status == "ask" and run.pending.call_id == "a2"

    srv.enqueue(text("ok"))
    resume(run.run_id, Answer("dismissed"), run=run, store=store, client=client)
    assert srv.requests[2]["messages"][-1]["content"].startswith(
        "The user dismissed the question without answering.")
    assert run.status == "done"
    # Both parts of the run are in the history, in order, each ask with its answer.
    roles = [(m["role"], m.get("tool_call_id")) for m in stored_messages(store, "default")]
    assert roles == [("user", None), ("assistant", None), ("tool", "a1"), ("assistant", None),
                     ("tool", "a2"), ("assistant", None)]


def test_two_asks_in_one_turn_last_wins(srv: ScriptedOpenAI, client: Any, store: Store):
    # §6.11: both asks answer "Waiting for user answer.", the runtime tool still runs,
    # and the saved context keeps only the winning ask call (no runtime tool result).
    ran: list[str] = []

    @tool(register=False)
    def lookup(key: str) -> str:
        """Look a key up."""
        ran.append(key)
        return "v"

    srv.enqueue(tool_calls([call("lookup", {"key": "k"}, id="c1"),
                            call("ask_agent", ask("First?"), id="a1"),
                            call("ask_agent", ask("Second?"), id="a2")]))
    run = plan("go", client=client, store=store, tools=[lookup])

    assert run.status == "ask" and ran == ["k"]
    assert run.pending.call_id == "a2" and run.pending.card.question == "Second?"
    saved = run.pending.messages
    assert saved[-1] == {"role": "assistant", "content": "", "tool_calls": [_ask_call("a2",
                                                                                      "Second?")]}
    assert saved[:-1] == srv.requests[0]["messages"]
    assert not any(m["role"] == "tool" for m in saved)
    outputs = {r["call_id"]: r["output"] for r in run.tool_records}
    assert outputs["a1"] == outputs["a2"] == "Waiting for user answer."
    assert run.view["ask"]["question"] == "Second?"

    srv.enqueue(text("ok"))
    resume(run.run_id, Answer("option", option_index=1), run=run, store=store, client=client)
    assert srv.requests[1]["messages"] == [
        *saved, {"role": "tool", "tool_call_id": "a2",
                 "content": "The user chose option 1 of 3: Option A"}]
    history = stored_messages(store, "default")
    assert [m.get("tool_call_id") for m in history if m["role"] == "tool"] == ["a2"]


def test_resume_from_a_rebuilt_run_after_a_restart(
        srv: ScriptedOpenAI, client: Any, store: Store, store_path: Path,
        monkeypatch: pytest.MonkeyPatch):
    @tool
    def lookup(key: str) -> str:
        """Look a key up."""
        return f"value of {key}"

    run = _suspend_in_turn_two(srv, client, store, tools=["lookup"])
    run_id, before = run.run_id, len(store.get_events(run.run_id))
    # "New kernel": a new Store object on the same file, the model client resolved again from
    # the saved profile name, the tool found again by name in the registry.
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
    srv.enqueue(tool_calls([call("lookup", {"key": "x"}, id="c1")]),
                tool_calls([call("update_plan", step_done("1"), id="p2")]), text("Done."))
    with Store(store_path) as fresh:
        rebuilt = resume(run_id, Answer("option", option_index=2), store=fresh)

        assert rebuilt is not run and rebuilt.run_id == run_id
        assert rebuilt.status == "done" and rebuilt.answer == "Done."
        assert rebuilt.tool_values["c1"] == "value of x"
        assert rebuilt.rounds == 5
        assert [e.type for e in rebuilt.events[:before]] == [
            d["type"] for d in fresh.get_events(run_id)[:before]]
        assert rebuilt.view["answer"] == "Done."
        assert fresh.get_run(run_id).status == "done"
    assert srv.requests[2]["messages"][-1]["content"] == "The user chose option 2 of 3: Option B"
    assert [e.round for e in rebuilt.events if e.type == "round_started"] == [1, 2, 3, 4, 5]


def test_a_tool_missing_at_resume_fails_clearly_and_keeps_the_question(
        srv: ScriptedOpenAI, client: Any, store: Store, store_path: Path):
    @tool
    def lookup(key: str) -> str:
        """Look a key up."""
        return "v"

    run = _suspend_in_turn_two(srv, client, store, tools=["lookup"])
    pending = run.pending
    REGISTRY.unregister("lookup")  # the new kernel has not run the cell defining it yet
    HELD.clear()  # ... and keeps nothing of the old one but the store
    sent = len(srv.requests)

    with Store(store_path) as fresh:
        failed = resume(run.run_id, Answer("option", option_index=1), store=fresh, client=client)
    assert failed.status == "error"
    assert '"lookup"' in failed.error and "not found" in failed.error
    assert len(srv.requests) == sent  # no model request was made
    record = store.get_run(run.run_id)
    assert record.status == "ask" and load_pending(record.pending) == pending
    assert failed.view["ask"] is not None and failed.view["ask"]["answered"] is None

    tool(lookup.fn)  # the cell defining it is run again: now the answer goes through
    srv.enqueue(tool_calls([call("update_plan", step_done("1"), id="p2")]), text("ok"))
    done = resume(run.run_id, Answer("option", option_index=1), store=store, client=client)
    assert done.status == "done" and store.get_run(run.run_id).status == "done"


def test_a_second_resume_changes_nothing(srv: ScriptedOpenAI, client: Any, store: Store):
    srv.enqueue(tool_calls([call("ask_agent", ask(), id="a1")]), text("ok"))
    run = plan("go", client=client, store=store, tools=[])
    resume(run.run_id, Answer("option", option_index=1), run=run, store=store, client=client)
    events, sent, history = (len(store.get_events(run.run_id)), len(srv.requests),
                             stored_messages(store, "default"))

    with pytest.raises(ResumeError, match="not waiting for an answer"):
        resume(run.run_id, Answer("option", option_index=2), run=run, store=store, client=client)
    assert run.status == "done" and run.answer == "ok"
    assert store.get_run(run.run_id).status == "done"
    assert len(store.get_events(run.run_id)) == events
    assert len(srv.requests) == sent and stored_messages(store, "default") == history


def test_two_concurrent_resumes_exactly_one_continues(srv: ScriptedOpenAI, client: Any,
                                                      store: Store):
    srv.enqueue(tool_calls([call("ask_agent", ask(), id="a1")]))
    run = plan("go", client=client, store=store, tools=[])
    srv.enqueue(text("ok"))
    start = threading.Barrier(2, timeout=5)
    outcomes: list[Any] = []
    lock = threading.Lock()

    def click(n: int) -> None:
        start.wait()
        try:
            result: Any = resume(run.run_id, Answer("option", option_index=n), store=store,
                                 client=client, expected_call_id="a1")
        except ResumeError as exc:
            result = exc
        with lock:
            outcomes.append(result)

    threads = [threading.Thread(target=click, args=(n,)) for n in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)

    errors = [o for o in outcomes if isinstance(o, ResumeError)]
    runs = [o for o in outcomes if not isinstance(o, ResumeError)]
    assert len(errors) == 1 and len(runs) == 1
    assert runs[0].status == "done" and len(srv.requests) == 2
    assert store.get_run(run.run_id).status == "done"


def test_auto_answer_first_answers_every_ask_with_option_one(
        srv: ScriptedOpenAI, client: Any, store: Store):
    srv.enqueue(tool_calls([call("ask_agent", ask("One?"), id="a1")]),
                tool_calls([call("ask_agent", ask("Two?"), id="a2")]), text("done"))
    run = plan("go", client=client, store=store, tools=[], auto_answer="first")

    assert run.status == "done" and run.answer == "done"
    assert [r["messages"][-1]["content"] for r in srv.requests[1:]] == [
        "The user chose option 1 of 3: Option A"] * 2
    assert [e.option_index for e in events_of(run, "ask_answered")] == [1, 1]
    assert store.get_run(run.run_id).status == "done" and run.rounds == 3


def test_answer_up_front_covers_only_the_first_ask(srv: ScriptedOpenAI, client: Any,
                                                   store: Store):
    srv.enqueue(tool_calls([call("ask_agent", ask("One?"), id="a1")]),
                tool_calls([call("ask_agent", ask("Two?"), id="a2")]))
    run = plan("go", client=client, store=store, tools=[], answer="option b")

    assert srv.requests[1]["messages"][-1]["content"] == "The user chose option 2 of 3: Option B"
    assert run.status == "ask" and run.pending.call_id == "a2"
    assert resume_hint(run).startswith("Waiting for your answer.")
    assert not events_of(run, "warning") and run.error is None
    assert store.get_run(run.run_id).status == "ask"


def test_free_text_answer_up_front(srv: ScriptedOpenAI, client: Any, store: Store):
    srv.enqueue(tool_calls([call("ask_agent", ask(), id="a1")]), text("ok"))
    run = plan("go", client=client, store=store, tools=[], answer="none of these")

    assert srv.requests[1]["messages"][-1]["content"] == (
        "The user chose none of the options and wrote instead: none of these")
    assert run.status == "done"


def test_option_up_front_without_a_store(srv: ScriptedOpenAI, client: Any):
    srv.enqueue(tool_calls([call("ask_agent", ask(), id="a1")]), text("ok"))
    run = plan("go", client=client, store=None, tools=[], option=3)

    assert run.status == "done" and run.answer == "ok"
    assert srv.requests[1]["messages"][-1]["content"] == "The user chose option 3 of 3: Option C"
    assert [e.type for e in run.events].count("run_finished") == 2
    assert run.pending is None


def test_an_option_that_does_not_fit_leaves_the_run_waiting(
        srv: ScriptedOpenAI, client: Any, store: Store):
    srv.enqueue(tool_calls([call("ask_agent", ask(), id="a1")]))
    run = plan("go", client=client, store=store, tools=[], option=7)

    assert run.status == "ask" and len(srv.requests) == 1
    (warning,) = events_of(run, "warning")
    assert "--option 7" in warning.message and "3 options" in warning.message
    assert store.get_run(run.run_id).status == "ask"


def test_a_typed_run_stays_typed_after_its_question(srv: ScriptedOpenAI, client: Any,
                                                   store: Store, store_path: Path):
    from pydantic import BaseModel

    class Pick(BaseModel):
        choice: str
        why: str

    srv.enqueue(tool_calls([call("ask_agent", ask(), id="a1")]))
    run = plan("go", client=client, store=store, tools=[], output=Pick)
    assert run.status == "ask"
    assert load_pending(store.get_run(run.run_id).pending, run.run_id).output["title"] == "Pick"
    srv.enqueue(text("B, obviously"), text('{"choice": "B", "why": "cheaper"}'))
    run = resume(run.run_id, Answer("option", option_index=2), run=run, store=store,
                 client=client)
    assert run.status == "done" and isinstance(run.output, Pick) and run.output.choice == "B"
    assert srv.requests[-1]["response_format"]["json_schema"]["name"] == "Pick"
    # In a new kernel (no model class kept), the saved schema still types the answer.
    srv.enqueue(tool_calls([call("ask_agent", ask(), id="a2")]))
    run2 = plan("again", client=client, store=store, tools=[], output=Pick)
    HELD.take(run2.run_id)
    srv.enqueue(text('{"choice": "A", "why": "first"}'))
    with Store(store_path) as fresh:
        rebuilt = resume(run2.run_id, Answer("option", option_index=1), store=fresh,
                         client=client)
    assert rebuilt.status == "done" and rebuilt.output == {"choice": "A", "why": "first"}


def test_an_abort_stops_the_run_at_its_next_step_after_an_answer_given_up_front(
        srv: ScriptedOpenAI, client: Any):
    """A batch's stop (the caller's abort check) holds in every resumed part: on main the
    resumed parts had no abort check and went on asking (52 requests after a batch's stop)."""
    for n in range(20):
        srv.enqueue(tool_calls([call("ask_agent", ask(f"Q{n}?"), id=f"a{n}")]))
    stop = {"now": False}

    def on_event(event: Any) -> None:
        if event.type == "ask_answered":  # the first auto-answer: the batch is stopped then
            stop["now"] = True

    run = plan("go", client=client, store=None, tools=[], auto_answer="first",
               is_aborted=lambda: stop["now"], listeners=[on_event])

    assert run.status == "aborted"
    assert len(srv.requests) == 1  # nothing asked after the stop


def test_a_typed_run_answered_up_front_without_a_store_stays_typed(srv: ScriptedOpenAI,
                                                                   client: Any):
    """On main the no-store resume built its own turn and lost the schema (output None)."""
    from pydantic import BaseModel

    class Pick(BaseModel):
        choice: str

    srv.enqueue(tool_calls([call("ask_agent", ask(), id="a1")]), text('{"choice": "C"}'))
    run = plan("go", client=client, store=None, tools=[], output=Pick, option=3)

    assert run.status == "done" and isinstance(run.output, Pick) and run.output.choice == "C"
    assert srv.requests[-1]["response_format"]["json_schema"]["name"] == "Pick"


def test_on_end_is_told_every_part_of_the_run(srv: ScriptedOpenAI, client: Any, store: Store):
    """The first part (waiting) and the resumed one (a later resume call) both end through
    the turn's on_end: what a cell's --out is filled with."""
    ends: list[tuple[str, str]] = []
    srv.enqueue(tool_calls([call("ask_agent", ask(), id="a1")]), text("picked"))
    run = plan("go", client=client, store=store, tools=[],
               on_end=lambda r: ends.append((r.status, r.answer)))
    assert ends == [("ask", "")]
    resume(run.run_id, Answer("option", option_index=1), store=store, client=client)
    assert ends == [("ask", ""), ("done", "picked")]
