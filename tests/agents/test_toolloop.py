"""``toolloop()``: the model calls ``@tool`` functions until it answers (docs/behaviour.md §5)."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from jupyter_agent import StopRun, tool, toolloop
from jupyter_agent.agents.context import TOOL_SEPARATOR
from jupyter_agent.base.errors import MissingKeyError, ToolError
from jupyter_agent.loop.kernel import FINAL_ANSWER_PROMPT
from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls

pytestmark = pytest.mark.timeout(60)


def tool_results(server: ScriptedOpenAI, i: int = -1) -> list[str]:
    return [m["content"] for m in server.requests[i]["messages"] if m["role"] == "tool"]


def offered(server: ScriptedOpenAI, i: int = 0) -> list[str]:
    return [t["function"]["name"] for t in server.requests[i].get("tools", [])]


def test_simplest_toolloop(server: ScriptedOpenAI) -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    server.enqueue(tool_calls([call("add", {"a": 17, "b": 25}, id="call_add")]),
                   text("17 + 25 = 42."))
    run = toolloop("What is 17 + 25? Use the tools.")
    assert run.status == "done"
    assert run.answer == "17 + 25 = 42."
    assert offered(server) == ["add"]
    assert server.requests[0]["tool_choice"] == "auto"
    assert tool_results(server) == ["42"]
    assert run.tool_values == {"call_add": 42}
    (record,) = run.tool_calls
    assert (record["name"], record["arguments"], record["output"], record["value"]) == (
        "add", '{"a": 17, "b": 25}', "42", 42)
    assert run.rounds == 2
    cards = [i for i in run.view["items"] if i["kind"] == "tool"]
    assert [(c["name"], c["state"], c["output"]) for c in cards] == [("add", "done", "42")]


def test_tools_offered_all_by_default_or_by_name(server: ScriptedOpenAI) -> None:
    @tool
    def a() -> str:
        """A."""
        return "a"

    @tool
    def b() -> str:
        """B."""
        return "b"

    server.default = text("ok")
    toolloop("x")
    assert offered(server, 0) == ["a", "b"]
    toolloop("x", tools=["b"])
    assert offered(server, 1) == ["b"]
    with pytest.raises(ToolError, match="Unknown tool 'c'") as info:
        toolloop("x", tools=["c"])
    assert "a, b" in str(info.value)  # the message lists what does exist
    assert len(server.requests) == 2


def test_plain_functions_can_be_passed(server: ScriptedOpenAI) -> None:
    def shout(word: str) -> str:
        """Upper-case a word."""
        return word.upper()

    server.enqueue(tool_calls([call("shout", {"word": "hi"})]), text("HI"))
    run = toolloop("shout hi", tools=[shout])
    assert tool_results(server) == ["HI"] and run.answer == "HI"


def test_system_prompt_uses_the_tool_separator(server: ScriptedOpenAI) -> None:
    from jupyter_agent.llm.profiles import BUILTIN_PROFILES, ModelProfile, register_profile

    saved = dict(BUILTIN_PROFILES)
    try:
        register_profile(ModelProfile(name="dflt", model="dflt", default_system_prompt="X"))
        server.enqueue(text("ok"))
        toolloop("q", model="dflt", system="Y")
    finally:
        BUILTIN_PROFILES.clear()
        BUILTIN_PROFILES.update(saved)
    assert server.requests[0]["messages"][0] == {"role": "system",
                                                 "content": f"X{TOOL_SEPARATOR}Y"}


def test_tools_run_one_at_a_time_by_default(server: ScriptedOpenAI) -> None:
    active, peak = [0], [0]
    lock = threading.Lock()

    @tool
    def work(n: int) -> int:
        """Work."""
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        with lock:
            active[0] -= 1
        return n

    server.enqueue(tool_calls([call("work", {"n": i}) for i in range(4)]), text("done"))
    toolloop("go")
    assert peak[0] == 1
    assert tool_results(server) == ["0", "1", "2", "3"]
    assert server.requests[0]["parallel_tool_calls"] is True


def test_parallel_runs_batchable_tools_together(server: ScriptedOpenAI) -> None:
    together = threading.Barrier(3, timeout=10)
    alone: list[int] = []

    @tool
    def fetch(n: int) -> int:
        """Fetch n."""
        together.wait()  # raises unless three calls run at the same time
        return n * 10

    @tool(batchable=False)
    def write(n: int) -> int:
        """Write n (never in parallel)."""
        alone.append(threading.active_count())
        return n

    server.enqueue(tool_calls([call("fetch", {"n": 1}), call("fetch", {"n": 2}),
                               call("fetch", {"n": 3}), call("write", {"n": 4})]), text("done"))
    run = toolloop("go", parallel=True)
    assert tool_results(server) == ["10", "20", "30", "4"]  # call order, whatever finished first
    assert run.status == "done"
    assert len(alone) == 1


def test_unknown_tool_goes_back_to_the_model(server: ScriptedOpenAI) -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    @tool
    def mul(a: int, b: int) -> int:
        """Multiply."""
        return a * b

    server.enqueue(tool_calls([call("subtract", {"a": 1})]), text("Sorry."))
    run = toolloop("go")
    assert tool_results(server) == ['Unknown tool "subtract". Available tools: add, mul']
    assert run.status == "done" and run.answer == "Sorry."
    assert run.view["items"][-2]["state"] == "error"


def test_raising_tool_is_reported_with_its_type(server: ScriptedOpenAI) -> None:
    @tool
    def parse(value: str) -> int:
        """Parse an integer."""
        return int(value)

    server.enqueue(tool_calls([call("parse", {"value": "x"})]),
                   tool_calls([call("parse", {"value": "7"})]), text("It is 7."))
    run = toolloop("go")
    assert tool_results(server, 1) == [
        "Tool error: ValueError: invalid literal for int() with base 10: 'x'"]
    assert tool_results(server, 2)[-1] == "7"
    assert run.status == "done" and run.answer == "It is 7."
    assert run.tool_calls[0]["error"].startswith("Tool error: ValueError")


def test_bad_arguments_are_reported_field_by_field(server: ScriptedOpenAI) -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    server.enqueue(tool_calls([call("add", '{"a": "one"')]),  # truncated JSON
                   tool_calls([call("add", {"a": "one"})]), text("gave up"))
    toolloop("go")
    assert tool_results(server, 1)[0].startswith("Arguments are not valid JSON")
    second = tool_results(server, 2)[1]
    assert second.startswith("Invalid arguments:\n- a: ") and "- b: Field required" in second


def test_tool_timeout_is_reported_and_the_loop_goes_on(server: ScriptedOpenAI) -> None:
    release = threading.Event()

    @tool(timeout=0.05)
    def slow() -> str:
        """Slow."""
        release.wait(10)
        return "late"

    server.enqueue(tool_calls([call("slow", {})]), text("Timed out, sorry."))
    try:
        run = toolloop("go")
    finally:
        release.set()
    assert tool_results(server) == [
        "Tool error: timed out after 0.05 s (slow did not finish and was interrupted; "
        "raise @tool(timeout=...) or JUPYTER_AGENT_TOOL_TIMEOUT)"]
    assert run.status == "done"


def test_stop_run_ends_after_the_round(server: ScriptedOpenAI) -> None:
    @tool
    def finish(summary: str) -> None:
        """Finish."""
        raise StopRun(summary)

    server.enqueue(tool_calls([call("finish", {"summary": "all done"})]), text("never"))
    run = toolloop("go")
    assert len(server.requests) == 1
    assert run.status == "done"
    assert run.tool_calls[0]["output"] == "all done"


def test_max_rounds_ends_with_a_final_answer(server: ScriptedOpenAI) -> None:
    @tool
    def look() -> str:
        """Look around."""
        return "nothing"

    server.enqueue(tool_calls([call("look", {})]), tool_calls([call("look", {})]),
                   text("Nothing found."))
    run = toolloop("go", max_rounds=2)
    assert len(server.requests) == 3
    assert server.requests[2]["tool_choice"] == "none"
    assert server.requests[2]["messages"][-1]["content"] == FINAL_ANSWER_PROMPT
    assert run.status == "max_rounds"
    assert run.answer == "Nothing found."
    with pytest.raises(ValueError, match="max_rounds"):
        toolloop("go", max_rounds=0)


def test_history_carries_tool_rounds_into_the_next_turn(server: ScriptedOpenAI) -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    server.enqueue(tool_calls([call("add", {"a": 1, "b": 2}, id="c1")]), text("3"), text("yes"))
    toolloop("1+2?")
    toolloop("Sure?")
    roles = [(m["role"], m.get("tool_call_id")) for m in server.requests[-1]["messages"]]
    assert roles == [("user", None), ("assistant", None), ("tool", "c1"), ("assistant", None),
                     ("user", None)]


def test_interrupt_in_a_tool_then_the_next_turn_works(server: ScriptedOpenAI) -> None:
    @tool
    def stuck() -> str:
        """Interrupted by the user."""
        raise KeyboardInterrupt

    @tool
    def fine() -> str:
        """Fine."""
        return "fine"

    server.enqueue(tool_calls([call("stuck", {}, id="s1"), call("fine", {}, id="f1")]))
    run = toolloop("go")
    assert run.status == "aborted"
    server.enqueue(text("Recovered."))
    again = toolloop("again")
    assert again.status == "done" and again.answer == "Recovered."
    history = server.requests[-1]["messages"]
    i = next(i for i, m in enumerate(history) if m.get("tool_calls"))
    assert [m.get("tool_call_id") for m in history[i + 1:i + 3]] == ["s1", "f1"]


def test_missing_key_names_the_variable() -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    with pytest.raises(MissingKeyError, match="OPENAI_API_KEY"):
        toolloop("1+1", model="gpt-4.1-mini")


def test_results_longer_than_the_window_allows_are_shortened(server: ScriptedOpenAI) -> None:
    from jupyter_agent.llm.profiles import BUILTIN_PROFILES, ModelProfile, register_profile

    @tool
    def dump() -> dict[str, Any]:
        """A big, pretty result."""
        return {"rows": [{"id": i, "name": f"item {i}"} for i in range(400)]}

    saved = dict(BUILTIN_PROFILES)
    try:
        register_profile(ModelProfile(name="small", model="small", max_context=8_000))
        server.enqueue(tool_calls([call("dump", {})]), text("ok"))
        run = toolloop("go", model="small")
    finally:
        BUILTIN_PROFILES.clear()
        BUILTIN_PROFILES.update(saved)
    sent = tool_results(server)[0]
    assert len(sent) < len(json.dumps(dump.fn()))
    assert len(run.tool_values) == 1
    assert next(iter(run.tool_values.values()))["rows"][399]["id"] == 399  # raw value kept whole
