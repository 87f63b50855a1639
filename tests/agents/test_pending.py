"""A suspended run's saved state (``agents/pending.py``): typed, versioned JSON.

Round trips of both kinds and both card kinds; records written before versions existed (the
exact dict shapes ``%%toolloop`` and ``%%plan`` saved until then) load and resume in a "new
kernel"; a record from a newer version, or a damaged one, is refused with one line and stays
waiting.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.agents.held import HELD
from jupyter_agent.agents.pending import (
    SCHEMA_VERSION,
    ApprovalCard,
    PlanPending,
    QuestionCard,
    ToolloopPending,
    card_of,
    load_pending,
)
from jupyter_agent.agents.plan import plan
from jupyter_agent.agents.resume import Answer, resume
from jupyter_agent.agents.toolloop import toolloop
from jupyter_agent.base.errors import ResumeError
from jupyter_agent.session import default_store
from jupyter_agent.tools.registry import tool
from tests.agents.plan.plan_scripts import OPTIONS, ask
from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls


def _results(request: dict[str, Any]) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in request["messages"] if m["role"] == "tool"}


# --------------------------------------------------------------- the shapes saved before versions
# Built key for key as ``agents/approvals.py`` and ``agents/plan/agent.py`` built them.
def _old_turn_state(new: Any) -> dict[str, Any]:
    """``TurnSetup.state()`` as it was: a plain dict, the intent dumped with ``model_dump()``."""
    return {"agent": new.agent, "agent_source": new.agent_source, "workspace": new.workspace,
            "read_only": new.read_only, "overrides": dict(new.overrides),
            "auto_approve": new.auto_approve, "tools": list(new.tools),
            "intent": None if new.intent is None else new.intent.model_dump(),
            "mode": new.mode}


def _old_toolloop(p: ToolloopPending) -> dict[str, Any]:
    user = p.turn_messages[0]
    return {
        "kind": "toolloop",
        "call_id": p.approvals[0].call_id,
        "ask": p.approvals[0].card.model_dump(mode="json"),
        "approvals": [{"call_id": w.call_id, "name": w.name, "arguments": w.arguments,
                       "ask": w.card.model_dump(mode="json")} for w in p.approvals],
        "messages": p.messages,
        "model": p.model,
        "tools": list(p.tools),
        "options": {"parallel": p.options.parallel, "max_rounds": p.options.max_rounds,
                    "temperature": p.options.temperature, "max_tokens": p.options.max_tokens,
                    "stream": p.options.stream},
        "state": _old_turn_state(p.turn),
        "user_message": user,
        "persist": list(p.turn_messages),
        "rounds": p.rounds,
        "round": p.rounds,
        "persisted": p.persisted,
    }


@dataclass
class _LoopOptions:  # the plan's saved options, as they were (a dataclass, then asdict)
    system: str | None
    temperature: float | None
    max_tokens: int | None
    stream: bool
    max_rounds: int


def _old_plan(p: PlanPending) -> dict[str, Any]:
    o = p.options
    lo = _LoopOptions(system="Answer briefly.", temperature=o.temperature, max_tokens=o.max_tokens,
                      stream=o.stream, max_rounds=o.max_rounds)
    old: dict[str, Any] = {
        "kind": "plan",
        "call_id": p.call_id,
        "ask": p.card.model_dump(mode="json"),
        "messages": p.messages,
        "model": p.model,
        "tools": list(p.tools),
        "options": {**asdict(lo), "rounds": p.rounds},
        "state": p.plan_state.model_dump(mode="json"),
        "user_message": p.turn_messages[0],
        "rounds": p.rounds,
        "produced": list(p.turn_messages[1:]),
        "persisted": p.persisted,
    }
    if p.turn is not None:
        old["runtime"] = _old_turn_state(p.turn)
    return old


def _rewrite(run_id: str, record: dict[str, Any]) -> None:
    """Put ``record`` in the store as the run's saved state (what an old version wrote)."""
    default_store().suspend(run_id, json.loads(json.dumps(record)))


# --------------------------------------------------------------- round trips
def test_a_toolloop_approval_round_trips_through_json(server: ScriptedOpenAI, workspace: Path) -> None:
    server.enqueue(tool_calls([call("bash", {"command": "echo a"}, id="c1"),
                               call("bash", {"command": "echo b"}, id="c2")]))
    run = toolloop("two commands", tools=["bash"], max_rounds=7, parallel=True)
    pending = run.pending
    assert isinstance(pending, ToolloopPending) and pending.version == SCHEMA_VERSION
    assert isinstance(pending.card, ApprovalCard) and pending.card.tool == "bash"
    assert [w.call_id for w in pending.approvals] == ["c1", "c2"]
    assert pending.options.max_rounds == 7 and pending.options.parallel is True
    assert pending.turn.tools == ["bash"] and pending.turn.workspace == str(workspace)
    stored = default_store().get_run(run.run_id).pending
    assert stored == pending.to_json() and stored["version"] == SCHEMA_VERSION
    assert json.loads(json.dumps(stored)) == stored  # plain JSON, nothing else
    assert load_pending(stored) == pending


def test_a_plan_question_and_a_plan_approval_round_trip(server: ScriptedOpenAI, workspace: Path) -> None:
    server.enqueue(tool_calls([call("ask_agent", ask(), id="a1")]))
    asked = plan("go", tools=[])
    question = asked.pending
    assert isinstance(question, PlanPending) and isinstance(question.card, QuestionCard)
    assert question.card.options == OPTIONS and question.card.allow_other is True
    assert load_pending(question.to_json()) == question
    # A record saved while the options still carried ``system`` (never read) loads the same.
    saved = json.loads(json.dumps(question.to_json()))
    saved["options"]["system"] = "Answer briefly."
    assert load_pending(saved) == question

    server.enqueue(tool_calls([call("bash", {"command": "echo hi"}, id="b1")]))
    approving = plan("run it", tools=["bash"])
    approval = approving.pending
    assert isinstance(approval, PlanPending) and isinstance(approval.card, ApprovalCard)
    assert approval.turn is not None and approval.turn.tools == ["bash"]
    assert load_pending(default_store().get_run(approving.run_id).pending) == approval


# --------------------------------------------------------------- records saved before versions
def test_an_old_toolloop_record_with_two_approvals_resumes_in_a_new_kernel(
        server: ScriptedOpenAI, workspace: Path) -> None:
    server.enqueue(tool_calls([call("bash", {"command": "echo one > one.txt; echo 1"}, id="c1"),
                               call("bash", {"command": "echo 2"}, id="c2")]),
                   text("both done"))
    run = toolloop("two commands", tools=["bash"])
    old = _old_toolloop(run.pending)
    assert "version" not in old and old["approvals"][1]["ask"]["kind"] == "approval"
    _rewrite(run.run_id, old)
    HELD.clear()  # a new kernel: nothing but the store

    migrated = load_pending(default_store().get_run(run.run_id).pending)
    assert isinstance(migrated, ToolloopPending) and migrated.version == SCHEMA_VERSION
    assert migrated.turn_messages == old["persist"] and migrated.rounds == 1

    waiting = resume(run.run_id, Answer("option", option_index=1), expected_call_id="c1")
    assert waiting.status == "ask" and waiting.pending.call_id == "c2"  # the second card
    done = resume(run.run_id, Answer("option", option_index=3), expected_call_id="c2")
    assert done.status == "done" and done.answer == "both done"
    assert (workspace / "one.txt").read_text() == "one\n"
    assert _results(server.requests[-1]) == {
        "c1": "1\n[exit code 0]", "c2": "Permission denied by the user: bash was not run."}


def test_an_old_plan_question_record_resumes(server: ScriptedOpenAI, workspace: Path) -> None:
    server.enqueue(tool_calls([call("ask_agent", ask(), id="a1")]), text("Going with B."))
    run = plan("go", tools=[])
    old = _old_plan(run.pending)
    assert old["options"]["rounds"] == 1 and "runtime" in old
    _rewrite(run.run_id, old)
    HELD.clear()

    done = resume(run.run_id, Answer("option", option_index=2))
    assert done.status == "done" and done.answer == "Going with B."
    assert server.requests[-1]["messages"][-1]["content"] == (
        "The user chose option 2 of 3: Option B")


def test_an_old_plan_approval_record_runs_the_tool_when_allowed(server: ScriptedOpenAI,
                                                                workspace: Path) -> None:
    calls: list[str] = []

    @tool(requires_approval=True)
    def deploy(target: str) -> str:
        """Deploy somewhere."""
        calls.append(target)
        return f"deployed {target}"

    server.enqueue(tool_calls([call("deploy", {"target": "prod"}, id="d1")]), text("Shipped."))
    run = plan("ship it", tools=["deploy"])
    assert run.status == "ask" and calls == []
    old = _old_plan(run.pending)
    assert old["ask"]["kind"] == "approval" and old["ask"]["detail"]["tool"] == "deploy"
    _rewrite(run.run_id, old)
    HELD.clear()

    done = resume(run.run_id, Answer("option", option_index=1))
    assert done.status == "done" and calls == ["prod"]
    assert _results(server.requests[-1])["d1"] == "deployed prod"


# --------------------------------------------------------------- refused, and nothing changes
def _suspended(server: ScriptedOpenAI) -> Any:
    server.enqueue(tool_calls([call("ask_agent", ask(), id="a1")]))
    return plan("go", tools=[])


@pytest.mark.parametrize("version", [2, 99])
def test_a_record_from_a_newer_version_is_refused_and_stays_waiting(
        server: ScriptedOpenAI, workspace: Path, version: int) -> None:
    run = _suspended(server)
    newer = dict(run.pending.to_json(), version=version, some_new_field={"x": 1})
    _rewrite(run.run_id, newer)
    sent = len(server.requests)

    with pytest.raises(ResumeError) as info:
        resume(run.run_id, Answer("option", option_index=1))
    message = str(info.value)
    assert "\n" not in message and "saved by a newer jupyter-agent" in message
    assert f"version {version}" in message and run.run_id in message
    record = default_store().get_run(run.run_id)
    assert record.status == "ask" and record.pending == newer  # untouched, still waiting
    assert len(server.requests) == sent
    assert card_of(record.pending) is None  # listings say they cannot read it


@pytest.mark.parametrize("damage", [
    {"card": {"kind": "approval"}},                 # a card without its fields
    {"kind": "shell"},                              # a kind nobody knows
    {"messages": "not a list"},
    {"version": "1"},                               # a version that is not a number
    {"version": True},
])
def test_a_damaged_record_is_refused_with_one_line(server: ScriptedOpenAI, workspace: Path,
                                                   damage: dict[str, Any]) -> None:
    run = _suspended(server)
    broken = {**run.pending.to_json(), **damage}
    _rewrite(run.run_id, broken)

    with pytest.raises(ResumeError) as info:
        resume(run.run_id, Answer("option", option_index=1))
    assert "\n" not in str(info.value) and "cannot be resumed" in str(info.value)
    record = default_store().get_run(run.run_id)
    assert record.status == "ask" and record.pending == broken


def test_an_old_record_of_an_unknown_shape_is_damaged_not_a_crash() -> None:
    with pytest.raises(ResumeError, match="damaged"):
        load_pending({"kind": "toolloop", "call_id": "c1"})  # no card, no messages
    with pytest.raises(ResumeError, match="damaged"):
        load_pending({"kind": "plan", "ask": "not a card", "messages": []})


@pytest.mark.parametrize("card", ["not a card", 7, ["x"], None])
def test_a_damaged_acp_card_is_unreadable_not_a_crash(card: object) -> None:
    """An ACP agent's saved permission whose card is not an object: ``%agent pending`` says it
    cannot read it (``card_of`` gives ``None``) instead of raising ValueError/TypeError from
    ``dict(card)`` (the typed ``Mapping[str, object]`` showed the card was never checked)."""
    assert card_of({"kind": "acp", "card": card}) is None
