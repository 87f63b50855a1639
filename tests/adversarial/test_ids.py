"""Tool-call ids are the loop's own: a model's duplicate, empty or reused ids never merge two
calls, their approvals or their results (docs/architecture.md, "Tool-call ids").

Everything runs for real: the scripted OpenAI-compatible server over HTTP, the ``openai``
client, the SQLite store, ``bash`` in its sandbox (harmless ``echo`` into files of a temporary
workspace: which files exist proves which command ran), and clicks through the same handler a
widget click reaches (``magics._on_click``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.agents.held import HELD
from jupyter_agent.agents.resume import Answer, resume
from jupyter_agent.agents.toolloop import toolloop
from jupyter_agent.base.errors import ResumeError
from jupyter_agent.edge.magics import _on_click
from jupyter_agent.llm._stream import StreamAssembler
from jupyter_agent.session import default_store
from jupyter_agent.tools.registry import tool
from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls
from tests.stored import stored_messages

DENIED = "Permission denied by the user: bash was not run."
MODES = ["stream", "json", "llama"]  # streamed, one JSON completion, llama.cpp-style chunks


@pytest.fixture(autouse=True)
def _no_live_tools() -> Iterator[None]:
    yield
    HELD.clear()


# ------------------------------------------------------------------ helpers
def _bash(cmd: str, id: str | None) -> Any:
    return call("bash", {"command": cmd}, id=id)


def _round(calls: list[Any], mode: str) -> Any:
    return tool_calls(calls, repeat_id_and_name=mode == "llama")


def _click(run: Any, call_id: Any, option: int) -> None:
    """What a click on a card sends (``{type: "answer", call_id, how, option_index}``)."""
    msg = {"type": "answer", "how": "option", "option_index": option, "answer": ""}
    if call_id is not None:
        msg["call_id"] = call_id
    _on_click(run, msg)


def _warnings(run: Any) -> list[str]:
    return [i["message"] for i in run.view["items"] if i["kind"] == "warning"]


def _results(request: dict[str, Any]) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in request["messages"] if m["role"] == "tool"}


def _assert_wire_valid(request: dict[str, Any]) -> list[str]:
    """Every assistant tool call has exactly one tool message answering it, after it and before
    the next assistant message, and every tool message answers exactly one call. Returns the
    call ids in order."""
    all_ids: list[str] = []
    open_ids: list[str] = []
    for m in request["messages"]:
        if m["role"] == "assistant":
            assert not open_ids, f"calls {open_ids} have no result before the next message"
            ids = [c["id"] for c in m.get("tool_calls") or []]
            assert all(isinstance(i, str) and i for i in ids), ids
            all_ids += ids
            open_ids = list(ids)
        elif m["role"] == "tool":
            assert m["tool_call_id"] in open_ids, f"{m['tool_call_id']} answers no open call"
            open_ids.remove(m["tool_call_id"])
        else:
            assert not open_ids, f"calls {open_ids} have no result before a {m['role']} message"
    assert not open_ids
    assert len(all_ids) == len(set(all_ids)), f"duplicate ids on the wire: {all_ids}"
    return all_ids


def _tool_cards(run: Any) -> list[dict[str, Any]]:
    return [i for i in run.view["items"] if i["kind"] == "tool"]


# ------------------------------------------------------------------ (1) and (2): one id, two calls
@pytest.mark.parametrize("mode", MODES)
def test_two_calls_with_one_id_get_two_cards_and_a_second_click_runs_nothing(
        server: ScriptedOpenAI, workspace: Path, mode: str) -> None:
    server.enqueue(_round([_bash("echo 1 > first.txt; echo ran-first", "dup"),
                           _bash("echo 2 > second.txt; echo ran-second", "dup")], mode),
                   text("Both handled."))
    run = toolloop("two commands", tools=["bash"], stream=mode != "json")

    assert run.status == "ask"
    waiting = run.pending.approvals
    ids = [w.call_id for w in waiting]
    assert ids[0] == "dup" and ids[1] != "dup" and len(set(ids)) == 2  # the first keeps its id
    assert [w.card.call_id for w in waiting] == ids
    assert ["first" in w.arguments for w in waiting] == [True, False]
    cards = _tool_cards(run)
    assert [c["call_id"] for c in cards] == ids  # two cards, never merged into one
    assert "first.txt" in cards[0]["arguments"] and "second.txt" in cards[1]["arguments"]
    assert run.view["ask"]["call_id"] == "dup"
    assert run.view["ask"]["detail"]["command"].startswith("echo 1 > first.txt")

    _click(run, "dup", 1)  # Allow once, on the first card
    assert (workspace / "first.txt").exists() and not (workspace / "second.txt").exists()
    assert run.status == "ask" and run.view["ask"]["call_id"] == ids[1]
    assert run.view["ask"]["detail"]["command"].startswith("echo 2 > second.txt")

    sent = len(server.requests)
    _click(run, "dup", 1)  # the same card clicked again: changes nothing
    assert not (workspace / "second.txt").exists()  # the second call never ran without its approval
    assert run.status == "ask" and len(server.requests) == sent
    assert any("call dup) is no longer waiting" in w and ids[1] in w for w in _warnings(run))
    record = default_store().get_run(run.run_id)
    assert record.status == "ask" and record.pending_call_id == ids[1]

    _click(run, ids[1], 3)  # its own card: Deny
    assert run.status == "done" and run.answer == "Both handled."
    assert not (workspace / "second.txt").exists()
    final = server.requests[-1]
    assert _assert_wire_valid(final) == ids
    assert _results(final) == {"dup": "ran-first\n[exit code 0]", ids[1]: DENIED}
    assert set(run.tool_values) == set(ids)  # one value per call
    records = {r["call_id"]: r for r in run.tool_records}
    assert records["dup"]["output"] == "ran-first\n[exit code 0]"
    assert records[ids[1]]["output"] == DENIED and len(run.tool_records) == 2
    # The session keeps both calls with their own results.
    history = stored_messages(default_store(), "default")
    assert {m["tool_call_id"]: m["content"] for m in history if m["role"] == "tool"} == \
        _results(final)


@pytest.mark.parametrize("mode", ["stream", "json"])
def test_deny_the_first_and_allow_the_second(server: ScriptedOpenAI, workspace: Path,
                                            mode: str) -> None:
    server.enqueue(_round([_bash("echo 1 > first.txt; echo ran-first", "dup"),
                           _bash("echo 2 > second.txt; echo ran-second", "dup")], mode),
                   text("ok"))
    run = toolloop("two commands", tools=["bash"], stream=mode == "stream")
    ids = [w.call_id for w in run.pending.approvals]

    _click(run, ids[0], 3)  # Deny on the first card
    assert not (workspace / "first.txt").exists() and not (workspace / "second.txt").exists()
    assert run.status == "ask" and run.view["ask"]["call_id"] == ids[1]
    _click(run, ids[1], 1)  # Allow once on the second card

    assert run.status == "done"
    assert not (workspace / "first.txt").exists() and (workspace / "second.txt").read_text() == "2\n"
    assert _results(server.requests[-1]) == {ids[0]: DENIED,
                                             ids[1]: "ran-second\n[exit code 0]"}
    _assert_wire_valid(server.requests[-1])
    assert len(run.tool_values) == 2


def test_answering_the_second_card_first_is_refused(server: ScriptedOpenAI, workspace: Path) -> None:
    """A card not yet shown (the second call's) cannot be answered ahead of the first."""
    server.enqueue(tool_calls([_bash("echo 1 > first.txt", "dup"),
                               _bash("echo 2 > second.txt", "dup")]), text("ok"))
    run = toolloop("two commands", tools=["bash"])
    second = run.pending.approvals[1].call_id
    with pytest.raises(ResumeError, match="no longer waiting"):
        resume(run.run_id, Answer("option", option_index=1), run=run, expected_call_id=second)
    assert not (workspace / "first.txt").exists() and not (workspace / "second.txt").exists()
    assert default_store().get_run(run.run_id).pending_call_id == "dup"


# ------------------------------------------------------------------ (3) empty and missing ids
@pytest.mark.parametrize("mode", MODES)
def test_empty_and_missing_ids_become_distinct_calls(server: ScriptedOpenAI, workspace: Path,
                                                     mode: str) -> None:
    server.enqueue(_round([_bash("echo a > a.txt; echo A", ""),
                           _bash("echo b > b.txt; echo B", None),
                           _bash("echo c > c.txt; echo C", "")], mode),
                   text("ok"))
    run = toolloop("three commands", tools=["bash"], stream=mode != "json")
    ids = [w.call_id for w in run.pending.approvals]
    assert len(ids) == 3 and len(set(ids)) == 3 and all(ids)
    assert [c["call_id"] for c in _tool_cards(run)] == ids

    _click(run, ids[0], 1)
    _click(run, ids[0], 1)  # clicked twice: the second click reaches nothing
    assert [p.name for p in sorted(workspace.iterdir())] == ["a.txt"]
    _click(run, ids[1], 3)
    _click(run, ids[2], 1)
    assert run.status == "done"
    assert sorted(p.name for p in workspace.iterdir()) == ["a.txt", "c.txt"]
    assert _assert_wire_valid(server.requests[-1]) == ids
    assert _results(server.requests[-1]) == {ids[0]: "A\n[exit code 0]", ids[1]: DENIED,
                                             ids[2]: "C\n[exit code 0]"}


def test_a_click_that_names_no_card_answers_nothing(server: ScriptedOpenAI, workspace: Path) -> None:
    server.enqueue(tool_calls([_bash("echo 1 > first.txt", "c1")]), text("ok"))
    run = toolloop("one command", tools=["bash"])
    for call_id in (None, ""):
        _click(run, call_id, 1)
    assert not (workspace / "first.txt").exists() and run.status == "ask"
    assert _warnings(run) == ["The click named no card (no call id); nothing changed."] * 2
    assert default_store().get_run(run.run_id).status == "ask"


# ------------------------------------------------------------------ (4) ids reused across rounds
@pytest.mark.parametrize("mode", MODES)
def test_an_id_reused_in_the_next_round_gets_its_own_card_and_result(
        server: ScriptedOpenAI, workspace: Path, mode: str) -> None:
    server.enqueue(_round([_bash("echo 1 > round1.txt; echo R1", "same")], mode),
                   _round([_bash("echo 2 > round2.txt; echo R2", "same")], mode),
                   text("done"))
    run = toolloop("two rounds", tools=["bash"], stream=mode != "json")
    _click(run, "same", 1)
    assert (workspace / "round1.txt").exists()

    assert run.status == "ask"  # round 2 asks again, under an id of its own
    second = run.pending.call_id
    assert second != "same" and run.view["ask"]["call_id"] == second
    _click(run, "same", 1)  # round 1's card clicked again
    assert not (workspace / "round2.txt").exists() and run.status == "ask"
    _click(run, second, 1)

    assert run.status == "done" and (workspace / "round2.txt").exists()
    final = server.requests[-1]
    assert _assert_wire_valid(final) == ["same", second]
    assert _results(final) == {"same": "R1\n[exit code 0]", second: "R2\n[exit code 0]"}
    _assert_wire_valid(server.requests[1])
    assert set(run.tool_values) == {"same", second}
    assert [r["output"] for r in run.tool_records] == ["R1\n[exit code 0]", "R2\n[exit code 0]"]


def test_reused_ids_keep_their_values_and_the_session_history_stays_valid(
        server: ScriptedOpenAI, workspace: Path) -> None:
    seen: list[str] = []

    @tool
    def note(word: str) -> str:
        """Write a word down."""
        seen.append(word)
        return word.upper()

    # Round 1 and round 2 use the same id, in one turn; the next turn reuses it once more.
    server.enqueue(tool_calls([call("note", {"word": "one"}, id="n")]),
                   tool_calls([call("note", {"word": "two"}, id="n"),
                               call("note", {"word": "three"}, id="n")]),
                   text("noted"),
                   tool_calls([call("note", {"word": "four"}, id="n")]),
                   text("noted again"))
    run = toolloop("note words", tools=["note"], parallel=True)
    # Round 2's two calls ran in parallel: in either order, but each once.
    assert run.status == "done" and seen[0] == "one" and sorted(seen[1:]) == ["three", "two"]
    assert len(run.tool_values) == 3 and sorted(run.tool_values.values()) == ["ONE", "THREE",
                                                                              "TWO"]
    ids = _assert_wire_valid(server.requests[2])
    assert ids[0] == "n" and len(set(ids)) == 3
    assert [_results(server.requests[2])[i] for i in ids] == ["ONE", "TWO", "THREE"]

    later = toolloop("one more", tools=["note"])  # the history carries the first turn's calls
    assert later.status == "done" and seen[-1] == "four"
    ids_later = _assert_wire_valid(server.requests[4])
    assert ids_later[:3] == ids and ids_later[3] not in ids
    assert list(later.tool_values) == [ids_later[3]]


def test_a_resumed_run_never_reuses_an_id_of_its_earlier_part(server: ScriptedOpenAI,
                                                             workspace: Path) -> None:
    """Round 1 suspends; after the resume (in a new kernel: nothing but the store survives)
    the model repeats round 1's id: the new call gets a new id and its own card."""
    server.enqueue(tool_calls([_bash("echo 1 > one.txt", "k")]),
                   tool_calls([_bash("echo 2 > two.txt", "k")]), text("ok"))
    run = toolloop("go", tools=["bash"])
    HELD.clear()
    resumed = resume(run.run_id, Answer("option", option_index=1), expected_call_id="k")
    assert resumed.status == "ask" and resumed.pending.call_id != "k"
    with pytest.raises(ResumeError, match="no longer waiting"):
        resume(run.run_id, Answer("option", option_index=1), expected_call_id="k")
    assert (workspace / "one.txt").exists() and not (workspace / "two.txt").exists()
    done = resume(run.run_id, Answer("option", option_index=1),
                  expected_call_id=resumed.pending.call_id)
    assert done.status == "done" and (workspace / "two.txt").exists()
    _assert_wire_valid(server.requests[-1])


# ------------------------------------------------------------------ (6) stale answers
def test_a_stale_answer_is_refused_and_changes_nothing(server: ScriptedOpenAI, workspace: Path) -> None:
    server.enqueue(tool_calls([_bash("echo 1 > first.txt", "c1")]), text("ok"))
    run = toolloop("one command", tools=["bash"])
    with pytest.raises(ResumeError) as info:
        resume(run.run_id, Answer("option", option_index=1), run=run,
               expected_call_id="call_that_never_was")
    assert str(info.value) == (f"That card (call call_that_never_was) is no longer waiting: "
                               f"run {run.run_id} now waits on call c1; nothing changed.")
    assert not (workspace / "first.txt").exists() and len(server.requests) == 1
    assert default_store().get_run(run.run_id).status == "ask"

    resume(run.run_id, Answer("option", option_index=1), run=run, expected_call_id="c1")
    assert run.status == "done" and (workspace / "first.txt").exists()
    with pytest.raises(ResumeError, match=r"not waiting for an answer any more \(done\)"):
        resume(run.run_id, Answer("option", option_index=3), run=run, expected_call_id="c1")


def test_plan_two_calls_with_one_id_the_replaced_card_runs_nothing(server: ScriptedOpenAI,
                                                                   workspace: Path) -> None:
    """``%%plan`` keeps one card per round (the last one wins): the first card's click must not
    answer the second call's card, as it did when both had the same id."""
    from jupyter_agent.agents.plan.agent import plan

    server.enqueue(tool_calls([_bash("echo 1 > first.txt", "dup"),
                               _bash("echo 2 > second.txt; echo ran-second", "dup")]),
                   text("ok"))
    run = plan("two commands", tools=["bash"])
    assert run.status == "ask"
    pending = run.pending.call_id
    assert pending != "dup" and run.view["ask"]["call_id"] == pending
    _click(run, "dup", 1)
    assert not (workspace / "first.txt").exists() and not (workspace / "second.txt").exists()
    assert run.status == "ask"
    _click(run, pending, 1)
    assert run.status == "done"
    assert (workspace / "second.txt").exists() and not (workspace / "first.txt").exists()
    assert _results(server.requests[-1])[pending] == "ran-second\n[exit code 0]"
    _assert_wire_valid(server.requests[-1])


# ------------------------------------------------------------------ the stream assembler
def _feed(deltas: list[dict[str, Any]]) -> tuple[list[Any], list[tuple[str, dict[str, Any]]]]:
    seen: list[tuple[str, dict[str, Any]]] = []
    asm = StreamAssembler(lambda kind, data: seen.append((kind, data)))
    for d in deltas:
        asm.add_chunk({"id": "x", "choices": [{"delta": {"tool_calls": [d]}}]})
    asm.finish()
    return asm.tool_calls(), seen


def test_a_server_that_omits_the_index_never_merges_two_calls() -> None:
    calls, seen = _feed([
        {"id": "a", "function": {"name": "bash", "arguments": '{"command":'}},
        {"function": {"arguments": ' "echo a"}'}},
        {"id": "b", "function": {"name": "bash", "arguments": '{"command": "echo b"}'}},
        {"id": "b", "function": {"arguments": ""}},  # the id repeated: the same call
    ])
    assert [(c.id, json.loads(c.arguments)) for c in calls] == [
        ("a", {"command": "echo a"}), ("b", {"command": "echo b"})]
    assert [d["id"] for k, d in seen if k == "tool_call"] == ["a", "b"]


def test_one_id_at_two_indexes_is_two_calls_and_arguments_before_the_name_are_kept() -> None:
    calls, seen = _feed([
        {"index": 0, "id": "same", "function": {"name": "bash", "arguments": '{"c": 1}'}},
        {"index": 1, "id": "same", "function": {"arguments": '{"c": '}},  # no name yet
        {"index": 1, "id": "same", "function": {"name": "bash", "arguments": "2}"}},
    ])
    assert [json.loads(c.arguments) for c in calls] == [{"c": 1}, {"c": 2}]
    assert calls[0].id == "same" and calls[1].id not in ("same", "")
    announced = [d["id"] for k, d in seen if k == "tool_call"]
    assert announced == [c.id for c in calls]
    args = {}
    for k, d in seen:
        if k == "tool_args":
            args[d["id"]] = args.get(d["id"], "") + d["delta"]
    assert args == {c.id: c.arguments for c in calls}  # every delta once, under its own call
