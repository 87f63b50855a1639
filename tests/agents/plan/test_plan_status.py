"""``plan_status``: when an ``update_plan`` call appears in the stream (before it runs) the run
says whether the plan is being generated or updated (docs/behaviour.md §6.4); the view keeps it
until the call returns."""

from __future__ import annotations

from typing import Any

import pytest

from jupyter_agent.agents.plan import plan
from jupyter_agent.session import Store
from tests.agents.plan.plan_scripts import events_of, set_plan, step_done
from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls

pytestmark = [pytest.mark.usefixtures("plan_env"), pytest.mark.timeout(60)]


def test_generating_then_updating_each_right_after_its_call(srv: ScriptedOpenAI, client: Any,
                                                            store: Store) -> None:
    seen: list[tuple[str, Any]] = []

    def watch(event: Any) -> None:  # what a live display sees, in its order
        if event.type in ("tool_called", "plan_status", "tool_returned"):
            seen.append((event.type, getattr(event, "status", None) or event.call_id))

    srv.enqueue(tool_calls([call("update_plan", set_plan("1"), id="p1")]),
                tool_calls([call("update_plan", step_done("1"), id="p2")]),
                text("Done."))
    run = plan("Do it.", client=client, store=store, tools=[], listeners=[watch])

    assert run.status == "done"
    statuses = events_of(run, "plan_status")
    assert [(e.status, e.call_id, e.round) for e in statuses] == [
        ("generating", "p1", 1), ("updating", "p2", 2)]
    types = [e.type for e in run.events]
    for e in statuses:  # right after its call was announced, before the call returned
        i = types.index("plan_status", [j for j, x in enumerate(run.events) if x is e][0])
        assert run.events[i - 1].type == "tool_called" and run.events[i - 1].call_id == e.call_id
    assert seen == [("tool_called", "p1"), ("plan_status", "generating"),
                    ("tool_returned", "p1"), ("tool_called", "p2"),
                    ("plan_status", "updating"), ("tool_returned", "p2")]
    assert run.view["plan_status"] is None  # nothing is on its way any more
    stored = [e["status"] for e in store.get_events(run.run_id) if e["type"] == "plan_status"]
    assert stored == ["generating", "updating"]


def test_a_failed_update_leaves_the_next_one_generating(srv: ScriptedOpenAI, client: Any,
                                                       store: Store) -> None:
    """Hostile: broken update_plan arguments adopt no plan, so the next call still generates."""
    views: list[Any] = []

    def watch(event: Any) -> None:
        if event.type == "plan_status":
            from jupyter_agent.agents.run import last_run

            views.append(last_run().view["plan_status"])  # type: ignore[union-attr]

    srv.enqueue(tool_calls([call("update_plan", {"updates": "garbage"}, id="bad")]),
                tool_calls([call("update_plan", set_plan("1"), id="p1")]),
                tool_calls([call("update_plan", step_done("1"), id="p2")]),
                text("Done."))
    run = plan("Do it.", client=client, store=store, tools=[], listeners=[watch])

    assert [e.status for e in events_of(run, "plan_status")] == [
        "generating", "generating", "updating"]
    assert views == ["generating", "generating", "updating"]  # the view shows it meanwhile
    assert run.view["plan_status"] is None
