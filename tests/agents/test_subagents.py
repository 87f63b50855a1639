"""Sub-agents as tools and the one-call model helper tool: answers, raw values, and usage and
cost that add up into the calling run."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from jupyter_agent import Agent, Run, agent_tool, last_run, model_tool, toolloop
from jupyter_agent.base.events import RunFinished, UsageRecorded
from jupyter_agent.llm.pricing import PriceTier
from jupyter_agent.llm.profiles import BUILTIN_PROFILES, ModelProfile, register_profile
from jupyter_agent.llm.types import Usage
from jupyter_agent.tools.registry import AnyTool, Tool
from tests.fakes.openai_server import ScriptedOpenAI, call, error, text, tool_calls

pytestmark = pytest.mark.timeout(60)

PARENT = ModelProfile(name="priced", model="parent-model",
                      price_tiers=[PriceTier(input_price=1.0, output_price=2.0)])
SUB = ModelProfile(name="priced-sub", model="sub-model",
                   price_tiers=[PriceTier(input_price=3.0, output_price=5.0)])


def usage(prompt: int, completion: int) -> dict[str, int]:
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion}


def cost(profile: ModelProfile, prompt: int, completion: int) -> float:
    return profile.cost(Usage(input_tokens=prompt, output_tokens=completion))


def tool_results(server: ScriptedOpenAI, i: int) -> list[str]:
    return [m["content"] for m in server.requests[i]["messages"] if m["role"] == "tool"]


def noop_tool() -> AnyTool:
    def noop() -> str:
        """Do nothing."""
        return "ok"

    return Tool(noop)


def usage_events(run: Run) -> list[tuple[str, str, int, int]]:
    return [(e.module, e.model, e.input_tokens, e.output_tokens) for e in run.events
            if isinstance(e, UsageRecorded)]


@pytest.fixture(autouse=True)
def profiles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    from jupyter_agent.runtime import agents

    monkeypatch.chdir(tmp_path)  # the agents' default workspace
    saved = dict(BUILTIN_PROFILES)
    register_profile(PARENT)
    register_profile(SUB)
    agents.AGENTS.clear()
    yield
    agents.AGENTS.clear()
    BUILTIN_PROFILES.clear()
    BUILTIN_PROFILES.update(saved)


def test_an_agent_as_a_tool_adds_its_tokens_and_cost_to_the_parent(server: ScriptedOpenAI) -> None:
    researcher = Agent("researcher", instructions="You research facts.", tools=[],
                       model="priced-sub")
    server.enqueue(
        tool_calls([call("researcher", {"task": "Find the capital of France."}, id="call_r")],
                   usage=usage(100, 10)),
        text("Paris.", usage=usage(40, 3)),                     # the sub-agent answers
        text("The capital is Paris.", usage=usage(150, 8)),
    )
    run = toolloop("What is the capital of France?", model="priced",
                   tools=[researcher.as_tool(requires_approval=False)])

    assert (run.status, run.answer) == ("done", "The capital is Paris.")
    # The sub-agent got its own instructions and the task, nothing of the parent's conversation.
    sub_request = server.requests[1]
    assert sub_request["model"] == "sub-model"
    assert sub_request["messages"] == [
        {"role": "system", "content": "You research facts."},
        {"role": "user", "content": "Find the capital of France."}]
    assert "tools" not in sub_request
    assert tool_results(server, 2) == ["Paris."]
    sub = run.tool_values["call_r"]
    assert isinstance(sub, Run) and sub.status == "done" and sub.answer == "Paris."
    assert (sub.input_tokens, sub.output_tokens, sub.cost) == (40, 3, cost(SUB, 40, 3))
    assert sub.session is None

    # Exact sums: the parent's own two calls plus the sub-agent's call, each at its own price.
    assert (run.input_tokens, run.output_tokens) == (100 + 40 + 150, 10 + 3 + 8)
    assert run.cost == sum([cost(PARENT, 100, 10), cost(SUB, 40, 3), cost(PARENT, 150, 8)])
    footer = run.events[-1]
    assert isinstance(footer, RunFinished)
    assert (footer.input_tokens, footer.output_tokens, footer.cost) == (
        run.input_tokens, run.output_tokens, run.cost)
    assert usage_events(run) == [("agent_call", "parent-model", 100, 10),
                                 ("researcher:agent_call", "sub-model", 40, 3),
                                 ("agent_call", "parent-model", 150, 8)]
    assert last_run() is run  # the sub-run does not replace the user's last run


def test_the_sub_agent_is_not_saved_and_its_tools_cannot_ask(server: ScriptedOpenAI) -> None:
    from jupyter_agent.session import default_store

    ran: list[str] = []

    def lookup(city: str) -> str:
        """Look up a city's population."""
        ran.append("lookup")
        return f"{city}: 2.1 million"

    def delete_all() -> str:
        """Delete everything."""
        ran.append("delete_all")
        return "deleted"

    analyst = Agent("analyst", instructions="You look things up.", model="priced-sub",
                    tools=[lookup, Tool(delete_all, requires_approval=True)])
    server.enqueue(
        tool_calls([call("analyst", {"task": "Population of Paris?"})], usage=usage(90, 9)),
        tool_calls([call("lookup", {"city": "Paris"}), call("delete_all", {})],
                   usage=usage(30, 4)),
        text("About 2.1 million.", usage=usage(60, 5)),
        text("Paris has about 2.1 million people.", usage=usage(120, 9)),
    )
    run = toolloop("How many people live in Paris?", model="priced",
                   tools=[agent_tool(analyst, requires_approval=False)])

    assert run.status == "done" and ran == ["lookup"]
    assert tool_results(server, 2) == [
        "Paris: 2.1 million",
        "Permission denied by policy (a sub-agent cannot ask for approval): delete_all was not "
        "run."]
    assert [t["function"]["name"] for t in server.requests[1]["tools"]] == ["lookup",
                                                                           "delete_all"]
    assert tool_results(server, 3) == ["About 2.1 million."]
    (sub,) = run.tool_values.values()
    assert [r["name"] for r in sub.tool_calls] == ["lookup", "delete_all"]
    assert (run.input_tokens, run.output_tokens) == (90 + 30 + 60 + 120, 9 + 4 + 5 + 9)
    assert run.cost == sum([cost(PARENT, 90, 9), cost(SUB, 30, 4), cost(SUB, 60, 5),
                            cost(PARENT, 120, 9)])
    saved = {r.run_id for r in default_store().list_runs()}
    assert run.run_id in saved and sub.run_id not in saved


def test_an_agent_tool_asks_for_approval_by_default(server: ScriptedOpenAI) -> None:
    helper = Agent("helper", model="priced-sub", tools=[])
    server.enqueue(tool_calls([call("helper", {"task": "Do it."})]))
    run = toolloop("Delegate it.", model="priced", tools=[helper.as_tool()])
    assert run.status == "ask" and len(server.requests) == 1  # nothing ran yet
    assert run.pending is not None
    assert run.pending.card.question == "Allow the tool helper to run?"


def test_a_failed_sub_agent_is_a_tool_error_and_its_paid_calls_still_count(
        server: ScriptedOpenAI) -> None:
    worker = Agent("worker", model="priced-sub", tools=[noop_tool()])
    server.enqueue(
        tool_calls([call("worker", {"task": "Work."})], usage=usage(50, 5)),
        tool_calls([call("noop", {})], usage=usage(20, 2)),     # paid
        error(400, "the sub-agent's model refused"),             # failed: not billed
        text("The worker failed.", usage=usage(70, 4)),
    )
    run = toolloop("Get it done.", model="priced",
                   tools=[worker.as_tool(name="worker", requires_approval=False)])
    assert run.status == "done"
    (result,) = tool_results(server, 3)
    assert result.startswith("Tool error: ToolError: The sub-agent worker failed: ")
    assert "the sub-agent's model refused" in result
    assert (run.input_tokens, run.output_tokens) == (50 + 20 + 70, 5 + 2 + 4)
    assert run.cost == sum([cost(PARENT, 50, 5), cost(SUB, 20, 2), cost(PARENT, 70, 4)])


def test_model_tool_one_call_with_its_own_system_prompt(server: ScriptedOpenAI) -> None:
    poet = model_tool("poet", system="You write haiku.", model="priced-sub")
    assert [p for p in poet.parameters["properties"]] == ["task"]
    server.enqueue(
        tool_calls([call("poet", {"task": "A haiku about rain."}, id="call_p")],
                   usage=usage(80, 6)),
        text("Rain taps the window", usage=usage(25, 7)),
        text("Here is your haiku: Rain taps the window", usage=usage(110, 12)),
    )
    run = toolloop("Write me a haiku about rain.", model="priced", tools=[poet])
    assert server.requests[1]["messages"] == [
        {"role": "system", "content": "You write haiku."},
        {"role": "user", "content": "A haiku about rain."}]
    assert server.requests[1]["model"] == "sub-model" and "tools" not in server.requests[1]
    assert tool_results(server, 2) == ["Rain taps the window"]
    assert run.tool_values == {"call_p": "Rain taps the window"}
    assert (run.input_tokens, run.output_tokens) == (80 + 25 + 110, 6 + 7 + 12)
    assert run.cost == sum([cost(PARENT, 80, 6), cost(SUB, 25, 7), cost(PARENT, 110, 12)])
    assert [m for m, *_ in usage_events(run)] == ["agent_call", "poet", "agent_call"]


def test_helpers_inside_a_tool_count_into_the_toolloop_cell(server: ScriptedOpenAI) -> None:
    from IPython import get_ipython
    from IPython.testing.globalipapp import start_ipython
    from IPython.utils.capture import capture_output

    shell = start_ipython() or get_ipython()
    assert shell.run_cell("%load_ext jupyter_agent").success
    shell.run_cell("%config AgentMagics.widgets = False")
    setup = shell.run_cell(
        "from jupyter_agent import tool, classify, extract\n"
        "@tool\n"
        "def triage(message: str) -> dict:\n"
        "    '''Route a customer message and pull out the order number.'''\n"
        "    route = classify(message, {'billing': 'payments', 'tech': 'bugs'}, model='priced')\n"
        "    order = extract(message, {'order': 'the order number'}, model='priced')\n"
        "    return {'route': route.category, 'order': order.data['order']}\n")
    assert setup.success
    server.enqueue(
        tool_calls([call("triage", {"message": "Order 77 was charged twice"})],
                   usage=usage(100, 10)),
        text("billing", usage=usage(30, 1)),                     # classify
        text('{"order": "77"}', usage=usage(40, 6)),             # extract
        text("Billing will look at order 77.", usage=usage(130, 9)),
    )
    try:
        with capture_output():
            result = shell.run_cell("%%toolloop --model priced\nPlease route this message.")
        assert result.success, result.error_in_exec
        run = shell.user_ns["_agent_run"]
    finally:
        shell.user_ns.pop("triage", None)
        shell.run_cell("%config AgentMagics.widgets = True")
    assert run.tool_calls[0]["value"] == {"route": "billing", "order": "77"}
    assert (run.input_tokens, run.output_tokens) == (100 + 30 + 40 + 130, 10 + 1 + 6 + 9)
    assert run.cost == sum([cost(PARENT, 100, 10), cost(PARENT, 30, 1), cost(PARENT, 40, 6),
                            cost(PARENT, 130, 9)])
    assert [m for m, *_ in usage_events(run)] == ["agent_call", "classify", "extract",
                                                  "agent_call"]


def test_a_sub_agent_in_a_plan_run_counts_into_it(server: ScriptedOpenAI) -> None:
    from jupyter_agent import plan

    researcher = Agent("researcher", instructions="You research facts.", tools=[],
                       model="priced-sub")
    server.enqueue(
        tool_calls([call("researcher", {"task": "Capital of Peru?"}, id="call_r")],
                   usage=usage(200, 12)),
        text("Lima.", usage=usage(35, 2)),
        text("The capital of Peru is Lima.", usage=usage(260, 10)),
    )
    run = plan("What is the capital of Peru?", model="priced",
               tools=[researcher.as_tool(requires_approval=False)])
    assert (run.status, run.answer) == ("done", "The capital of Peru is Lima.")
    assert run.tool_values["call_r"].answer == "Lima."
    assert (run.input_tokens, run.output_tokens) == (200 + 35 + 260, 12 + 2 + 10)
    assert run.cost == sum([cost(PARENT, 200, 12), cost(SUB, 35, 2), cost(PARENT, 260, 10)])
    assert [m for m, *_ in usage_events(run)] == ["agent_call", "researcher:agent_call",
                                                  "agent_call"]


def test_a_sub_agent_at_its_round_limit_says_so(server: ScriptedOpenAI) -> None:
    worker = Agent("worker", model="priced-sub", tools=[noop_tool()])
    server.enqueue(
        tool_calls([call("worker", {"task": "Work."})]),
        tool_calls([call("noop", {})]),          # the sub-agent's only round
        text("Partial result."),                 # its final-answer request (no tools)
        text("Done."),
    )
    run = toolloop("Go.", model="priced", tools=[worker.as_tool(max_rounds=1,
                                                                requires_approval=False)])
    assert server.requests[2]["tool_choice"] == "none"
    assert tool_results(server, 3) == [
        "[The sub-agent stopped at its round limit; it may not be done.]\nPartial result."]
    assert run.answer == "Done."
