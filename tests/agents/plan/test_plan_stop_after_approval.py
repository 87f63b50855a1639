"""``%%plan``: an approved tool that raises the stop signal ends the resumed run with no further
request (docs/behaviour.md §2.7), as ``%%toolloop`` does and as the tool would without a card."""

from __future__ import annotations

from typing import Any

import pytest

from jupyter_agent import StopRun
from jupyter_agent.agents.plan import plan
from jupyter_agent.agents.resume import Answer, resume
from jupyter_agent.session import Store
from jupyter_agent.tools.registry import tool
from tests.agents.plan.plan_scripts import set_plan, step_done
from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls

pytestmark = [pytest.mark.usefixtures("plan_env"), pytest.mark.timeout(60)]


def _deploy(calls: list[str]) -> None:
    @tool(requires_approval=True)
    def deploy(target: str) -> str:
        """Deploy, then stop the run."""
        calls.append(target)
        raise StopRun(f"deployed {target}; stopping")


def _suspended(srv: ScriptedOpenAI, client: Any, store: Store, calls: list[str]) -> Any:
    _deploy(calls)
    srv.enqueue(tool_calls([call("update_plan", set_plan("1"), id="p1")]),
                tool_calls([call("deploy", {"target": "prod"}, id="d1")]))
    run = plan("Ship it.", client=client, store=store, tools=["deploy"])
    assert run.status == "ask" and calls == []
    return run


def test_an_approved_stop_ends_the_resumed_plan(srv: ScriptedOpenAI, client: Any,
                                                store: Store) -> None:
    calls: list[str] = []
    run = _suspended(srv, client, store, calls)
    sent = len(srv.requests)
    srv.enqueue(text("This request must never be made."))

    done = resume(run.run_id, Answer("option", option_index=1), run=run, store=store,
                  client=client)

    assert calls == ["prod"]
    assert done.status == "done"
    assert len(srv.requests) == sent and srv.pending == 1  # the model was not asked again
    assert store.get_run(run.run_id).status == "done"
    # The saved history ends with the call's real result: no dangling call.
    saved = store.history_messages("default", 6)
    assert saved[-1]["role"] == "tool" and saved[-1]["content"] == "deployed prod; stopping"


def test_a_denied_stop_tool_lets_the_plan_continue(srv: ScriptedOpenAI, client: Any,
                                                   store: Store) -> None:
    calls: list[str] = []
    run = _suspended(srv, client, store, calls)
    srv.enqueue(tool_calls([call("update_plan", step_done("1"), id="p2")]),
                text("Not deployed."))

    done = resume(run.run_id, Answer("option", option_index=3), run=run, store=store,
                  client=client)

    assert calls == []  # denied: never ran, and the model was asked again
    assert done.status == "done" and done.answer == "Not deployed."
    assert srv.pending == 0
