"""Permissions in the tool runner: approval cards suspend the run, the answer resumes it."""

from __future__ import annotations

from pathlib import Path

import pytest

from jupyter_agent.agents.held import HELD
from jupyter_agent.agents.resume import Answer, resume
from jupyter_agent.agents.toolloop import toolloop
from jupyter_agent.base.errors import ResumeError
from jupyter_agent.runtime.agents import Agent
from jupyter_agent.runtime.grants import GRANTS
from jupyter_agent.session import default_store
from jupyter_agent.tools.registry import tool
from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls
from tests.stored import stored_messages

DENIED = "Permission denied by the user: bash was not run."


def _tool_results(request: dict) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in request["messages"] if m["role"] == "tool"}


def test_bash_asks_and_deny_tells_the_model(server: ScriptedOpenAI, workspace: Path) -> None:
    server.enqueue(tool_calls([call("bash", {"command": "touch made.txt"}, id="c1")]),
                   text("I could not run it."))
    run = toolloop("Create made.txt", tools=["bash"])

    assert run.status == "ask"
    ask = run.view["ask"]
    assert ask["kind"] == "approval"
    assert ask["options"] == ["Allow once", "Allow for this session", "Deny"]
    assert ask["detail"]["command"] == "touch made.txt"
    assert ask["detail"]["cwd"] == str(workspace)
    assert len(server.requests) == 1  # suspended: no further model request

    done = resume(run.run_id, Answer("option", option_index=3), run=run)
    assert done.status == "done" and done.answer == "I could not run it."
    assert _tool_results(server.requests[1]) == {"c1": DENIED}
    assert not (workspace / "made.txt").exists()
    history = stored_messages(default_store(), "default")
    assert [m["role"] for m in history] == ["user", "assistant", "tool", "assistant"]
    assert history[2]["content"] == DENIED


def test_allow_once_runs_the_tool_and_sends_its_real_result(server: ScriptedOpenAI,
                                                            workspace: Path) -> None:
    server.enqueue(tool_calls([call("bash", {"command": "echo hi > made.txt; echo wrote"},
                                    id="c1")]),
                   text("Done."))
    run = toolloop("Create made.txt", tools=["bash"])
    resume(run.run_id, Answer("option", option_index=1), run=run)

    assert run.status == "done"
    assert (workspace / "made.txt").read_text() == "hi\n"
    assert _tool_results(server.requests[1]) == {"c1": "wrote\n[exit code 0]"}
    card = next(i for i in run.view["items"] if i["kind"] == "tool" and i["call_id"] == "c1")
    assert card["output"] == "wrote\n[exit code 0]" and card["state"] == "done"
    # "Allow once" is not remembered: the next call asks again.
    assert GRANTS.listing() == []


def test_allow_for_the_session_is_remembered_in_later_cells(server: ScriptedOpenAI,
                                                            workspace: Path) -> None:
    server.enqueue(tool_calls([call("bash", {"command": "echo one"}, id="c1")]), text("1"),
                   tool_calls([call("bash", {"command": "echo two"}, id="c2")]), text("2"))
    first = toolloop("first", tools=["bash"], session="s")
    resume(first.run_id, Answer("option", option_index=2), run=first)
    assert first.status == "done"
    assert [(g.session, g.identity, g.decision) for g in GRANTS.listing()] == [
        ("s", "builtin:bash", "allow")]

    second = toolloop("second", tools=["bash"], session="s")
    assert second.status == "done" and second.answer == "2"  # no card this time
    assert _tool_results(server.requests[3])["c2"] == "two\n[exit code 0]"
    # Another session still asks.
    server.enqueue(tool_calls([call("bash", {"command": "echo three"}, id="c3")]))
    assert toolloop("third", tools=["bash"], session="other").status == "ask"


def test_other_calls_of_the_round_get_results_and_each_waiting_call_gets_a_card(
        server: ScriptedOpenAI, workspace: Path) -> None:
    (workspace / "a.txt").write_text("alpha")
    server.enqueue(tool_calls([call("bash", {"command": "echo first"}, id="b1"),
                               call("read_file", {"path": "a.txt"}, id="r1"),
                               call("write_file", {"path": "w.txt", "content": "x"}, id="w1")]),
                   text("finished"))
    run = toolloop("do three things", tools=["bash", "read_file", "write_file"])
    assert run.status == "ask" and run.view["ask"]["call_id"] == "b1"
    read = next(i for i in run.view["items"] if i["kind"] == "tool" and i["call_id"] == "r1")
    assert "alpha" in read["output"]  # the allowed call of the round already ran

    resume(run.run_id, Answer("option", option_index=1), run=run)
    assert run.status == "ask" and run.view["ask"]["call_id"] == "w1"  # the next card
    assert len(server.requests) == 1
    resume(run.run_id, Answer("option", option_index=3), run=run)

    assert run.status == "done" and run.answer == "finished"
    results = _tool_results(server.requests[1])
    assert results["b1"] == "first\n[exit code 0]"
    assert "alpha" in results["r1"]
    assert results["w1"] == "Permission denied by the user: write_file was not run."
    assert not (workspace / "w.txt").exists()


def test_a_session_choice_settles_the_rest_of_the_round(server: ScriptedOpenAI,
                                                        workspace: Path) -> None:
    server.enqueue(tool_calls([call("bash", {"command": "echo a"}, id="b1"),
                               call("bash", {"command": "echo b"}, id="b2")]),
                   text("ok"))
    run = toolloop("two commands", tools=["bash"])
    resume(run.run_id, Answer("option", option_index=2), run=run)
    assert run.status == "done"  # the second bash call needed no second card
    assert _tool_results(server.requests[1]) == {"b1": "a\n[exit code 0]", "b2": "b\n[exit code 0]"}


def test_resume_from_the_store_in_a_new_kernel(server: ScriptedOpenAI, workspace: Path) -> None:
    server.enqueue(tool_calls([call("bash", {"command": "pwd"}, id="c1")]), text("here"))
    run = toolloop("where am I", tools=["bash"])
    HELD.clear()  # nothing of the first kernel survives but the store
    resumed = resume(run.run_id, Answer("option", option_index=1))
    assert resumed is not run and resumed.status == "done" and resumed.answer == "here"
    assert _tool_results(server.requests[1]) == {"c1": f"{workspace}\n[exit code 0]"}
    with pytest.raises(ResumeError, match="not waiting"):
        resume(run.run_id, Answer("option", option_index=1))  # a second click changes nothing


def test_the_agent_command_resumes_with_an_option(server: ScriptedOpenAI, workspace: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from jupyter_agent.edge.commands import run_command

    server.enqueue(tool_calls([call("bash", {"command": "echo x"}, id="c1")]), text("no"))
    run = toolloop("go", tools=["bash"])
    run_command("pending", {})
    assert run.run_id in capsys.readouterr().out
    ns: dict = {}
    run_command(f"resume {run.run_id} --option 3", ns)
    assert ns["_agent_run"].status == "done"
    assert _tool_results(server.requests[1]) == {"c1": DENIED}


def test_auto_approve_runs_without_a_card_but_denies_still_apply(server: ScriptedOpenAI,
                                                                 workspace: Path) -> None:
    server.enqueue(tool_calls([call("bash", {"command": "echo auto"}, id="c1")]), text("ok"))
    assert toolloop("go", tools=["bash"], auto_approve=True).status == "done"
    assert _tool_results(server.requests[1]) == {"c1": "auto\n[exit code 0]"}

    Agent("careful", tools=["bash"], permissions={"bash": "deny"})
    server.enqueue(tool_calls([call("bash", {"command": "echo no"}, id="c2")]), text("ok"))
    assert toolloop("go", agent="careful", auto_approve=True).status == "done"
    assert _tool_results(server.requests[3])["c2"].startswith("Permission denied by policy")


def test_user_tools_run_unless_they_require_approval(server: ScriptedOpenAI,
                                                     workspace: Path) -> None:
    ran: list[str] = []

    @tool
    def note(text: str) -> str:
        """Write a note."""
        ran.append(text)
        return "noted"

    @tool(requires_approval=True)
    def pay(amount: int) -> str:
        """Pay an amount."""
        ran.append(f"paid {amount}")
        return "paid"

    server.enqueue(tool_calls([call("note", {"text": "hi"}, id="n1"),
                               call("pay", {"amount": 5}, id="p1")]), text("ok"))
    run = toolloop("note and pay")
    assert run.status == "ask" and run.view["ask"]["detail"]["tool"] == "pay"
    assert ran == ["hi"]
    resume(run.run_id, Answer("option", option_index=1), run=run)
    assert ran == ["hi", "paid 5"] and run.status == "done"


def test_agent_overrides_and_a_read_only_workspace(server: ScriptedOpenAI, workspace: Path
                                                   ) -> None:
    Agent("trusted", tools=["bash"], permissions={"bash": "allow"})
    server.enqueue(tool_calls([call("bash", {"command": "echo ok"}, id="c1")]), text("ok"))
    assert toolloop("go", agent="trusted").status == "done"

    Agent("reader", tools=["write_file", "read_file"], read_only=True,
          permissions={"*": "allow"})
    server.enqueue(tool_calls([call("write_file", {"path": "x.txt", "content": "x"}, id="w")]),
                   text("ok"))
    assert toolloop("write", agent="reader").status == "done"
    assert _tool_results(server.requests[3])["w"] == (
        "Permission denied by policy (workspace is read-only): write_file was not run.")
    assert not (workspace / "x.txt").exists()


def test_an_approval_inside_plan_suspends_like_an_ask(server: ScriptedOpenAI,
                                                      workspace: Path) -> None:
    from jupyter_agent.agents.plan.agent import plan

    server.enqueue(tool_calls([call("bash", {"command": "echo planned"}, id="c1")]),
                   text("The command printed planned."))
    run = plan("Run echo planned", tools=["bash"])
    assert run.status == "ask" and run.view["ask"]["kind"] == "approval"
    HELD.clear()
    done = resume(run.run_id, Answer("option", option_index=1), run=run)
    assert done.status == "done"
    assert _tool_results(server.requests[1])["c1"] == "planned\n[exit code 0]"

    server.enqueue(tool_calls([call("bash", {"command": "echo again"}, id="c2")]),
                   text("Not allowed."))
    second = plan("Run echo again", tools=["bash"])
    resume(second.run_id, Answer("option", option_index=3), run=second)
    assert second.status == "done"
    assert _tool_results(server.requests[3])["c2"] == DENIED
