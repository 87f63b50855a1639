"""A model whose profile declares it cannot judge when to stop calling tools, or cannot plan
(the embedded model's declared capabilities), on the scripted server: after a round whose calls
all succeeded the next request forbids tools; ``plan`` refuses it in one line before any
request. The real embedded model is in ``test_local_model_agents.py``."""

from __future__ import annotations

import json
from typing import Any

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from jupyter_agent import plan, tool, toolloop
from jupyter_agent.base.errors import ConfigError
from jupyter_agent.llm.profiles import Capabilities, ModelProfile, register_profile
from jupyter_agent.session import default_store
from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls

pytestmark = pytest.mark.timeout(60)

SMALL = Capabilities(stops_after_tool_result=False)
"""What a small native-tools model declares."""
EMBEDDED_LIKE = Capabilities(tools=False, stream_usage=False, stops_after_tool_result=False,
                             planning=False)
"""The embedded model's declarations: the constrained tool protocol, no stop judgement, no
planning."""


def _profile(server: ScriptedOpenAI, name: str, caps: Capabilities) -> str:
    register_profile(ModelProfile(name=name, model=name, base_url=server.base_url,
                                  capabilities=caps))
    return name


def _adder(calls: list[tuple[int, int]]) -> Any:
    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        calls.append((a, b))
        return a + b

    return add


def _constrained_call(name: str, args: dict[str, Any]) -> str:
    return json.dumps({"tool": name, "arguments": args})


def test_after_a_successful_round_the_next_request_forbids_tools(server: ScriptedOpenAI) -> None:
    calls: list[tuple[int, int]] = []
    add = _adder(calls)
    server.enqueue(tool_calls([call("add", {"a": 17, "b": 25}, id="c1")]), text("42"))
    run = toolloop("What is 17 + 25? Use the add tool.", tools=[add],
                   model=_profile(server, "small", SMALL))
    assert run.status == "done" and run.answer == "42"
    assert calls == [(17, 25)]
    first, second = server.requests
    assert first["tool_choice"] == "auto"
    assert second["tool_choice"] == "none"
    assert [e.tool_choice for e in run.events if e.type == "round_started"] == ["auto", "none"]


def test_a_model_that_judges_for_itself_keeps_tools_offered(server: ScriptedOpenAI) -> None:
    calls: list[tuple[int, int]] = []
    add = _adder(calls)
    server.enqueue(tool_calls([call("add", {"a": 1, "b": 2}, id="c1")]),
                   tool_calls([call("add", {"a": 3, "b": 3}, id="c2")]), text("6"))
    run = toolloop("Add 1 and 2, then the result and 3.", tools=[add],
                   model=_profile(server, "capable", Capabilities()))
    assert run.status == "done" and calls == [(1, 2), (3, 3)]
    assert [r["tool_choice"] for r in server.requests] == ["auto", "auto", "auto"]


def test_after_a_failed_call_tools_stay_allowed_so_the_model_can_correct_it(
        server: ScriptedOpenAI) -> None:
    calls: list[tuple[int, int]] = []
    add = _adder(calls)
    server.enqueue(tool_calls([call("sum", {"a": 17, "b": 25}, id="c1")]),
                   tool_calls([call("add", {"a": 17, "b": 25}, id="c2")]), text("42"))
    run = toolloop("What is 17 + 25?", tools=[add], model=_profile(server, "small", SMALL))
    assert run.status == "done" and calls == [(17, 25)]
    assert [r["tool_choice"] for r in server.requests] == ["auto", "auto", "none"]
    assert 'Unknown tool "sum"' in run.tool_records[0]["output"]


def test_constrained_model_calling_a_tool_when_forbidden_runs_nothing(
        server: ScriptedOpenAI) -> None:
    # Hostile: a server that ignores the answer-only schema, so the "model" writes another
    # call after it got the result. It is never run; it becomes the (visibly wrong) answer.
    calls: list[tuple[int, int]] = []
    add = _adder(calls)
    server.enqueue(text(_constrained_call("add", {"a": 17, "b": 25})),
                   text(_constrained_call("add", {"a": 100, "b": 146})))
    run = toolloop("What is 17 + 25? Use the add tool.", tools=[add],
                   model=_profile(server, "tiny", EMBEDDED_LIKE))
    assert calls == [(17, 25)]
    assert run.status == "done" and len(run.tool_records) == 1
    assert run.answer.startswith("Tool call error:") and '"tool": "add"' in run.answer
    first, second = server.requests
    # the constrained protocol: no native tools; the second schema allows only an answer
    assert "tools" not in first and "tools" not in second
    assert "anyOf" in first["response_format"]["schema"]
    assert second["response_format"]["schema"]["required"] == ["answer"]
    assert [e.tool_choice for e in run.events if e.type == "round_started"] == ["auto", "none"]
    assert not [e for e in run.events if e.type == "tool_called" and e.round == 2]


def test_constrained_model_answers_from_the_result(server: ScriptedOpenAI) -> None:
    calls: list[tuple[int, int]] = []
    add = _adder(calls)
    server.enqueue(text(_constrained_call("add", {"a": 17, "b": 25})),
                   text(json.dumps({"answer": "17 + 25 = 42"})))
    run = toolloop("What is 17 + 25? Use the add tool.", tools=[add],
                   model=_profile(server, "tiny", EMBEDDED_LIKE))
    assert run.status == "done" and run.answer == "17 + 25 = 42" and calls == [(17, 25)]
    # the result reached the model as the constrained protocol's user message
    assert server.requests[1]["messages"][-1]["content"] == "<ToolResponse>\n42\n</ToolResponse>"


# ------------------------------------------------------------------------------ %%plan


def test_plan_refuses_a_model_that_cannot_plan_before_any_request(
        server: ScriptedOpenAI) -> None:
    name = _profile(server, "tiny", EMBEDDED_LIKE)
    with pytest.raises(ConfigError) as info:
        plan("Plan a short weekend trip to Lyon.", model=name, auto_answer="first")
    message = str(info.value)
    assert "\n" not in message and "'tiny' cannot run the planning agent" in message
    assert "OPENAI_API_KEY" in message and "--model NAME" in message
    assert "03-planning-with-ask.ipynb" in message
    assert server.requests == []
    assert default_store().list_runs() == []  # nothing recorded


def test_plan_runs_on_a_model_that_can(server: ScriptedOpenAI) -> None:
    server.enqueue(text("Hi! How can I help?"))
    run = plan("hello there", model=_profile(server, "small", SMALL), tools=[])
    assert run.status == "done" and len(server.requests) == 1


def test_the_plan_magic_refuses_in_one_line(ip: InteractiveShell, server: ScriptedOpenAI) -> None:
    name = _profile(server, "tiny", EMBEDDED_LIKE)
    with capture_output() as cap:
        result = ip.run_cell(f"%%plan --model {name}\nPlan a short weekend trip to Lyon.")
    assert isinstance(result.error_in_exec, UsageError)
    lines = [line for line in cap.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in cap.stderr + cap.stdout, cap.stderr
    assert "cannot run the planning agent" in lines[0] and "--model NAME" in lines[0]
    assert server.requests == []
