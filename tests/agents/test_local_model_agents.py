"""The embedded model for real: a streamed %%chat and a 2-round %%toolloop with a forced tool.

Asserts on structure, not wording (a 135M model says odd things).
"""

from __future__ import annotations

import json

import pytest

from jupyter_agent.clients.embedded import local_available

pytestmark = [
    pytest.mark.local_model,
    pytest.mark.skipif(not local_available(), reason="the `local` extra is not installed"),
]


def test_chat_streams_an_answer_from_the_embedded_model() -> None:
    from jupyter_agent import chat

    run = chat("Say hello.", model="local", max_tokens=24)
    deltas = [e for e in run.events if e.type == "text_delta"]
    assert run.status == "done"
    assert len(deltas) >= 2, "the answer should arrive in several streamed pieces"
    assert run.answer.strip() == "".join(d.text for d in deltas).strip()
    assert run.input_tokens > 0 and run.output_tokens > 0


def test_toolloop_forced_tool_call_is_valid_and_fed_back() -> None:
    from jupyter_agent import tool, toolloop

    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    run = toolloop("What is 17 + 25? Use the add tool.", model="local", tool_choice="add",
                   max_rounds=2, max_tokens=64)
    assert run.status in ("done", "max_rounds")
    # What was asked of the model, not what the small model chose: the first request forces
    # `add` (the grammar then makes the call), later ones are `auto`.
    choices = [e.tool_choice for e in run.events if e.type == "round_started"]
    assert choices[0] == "add" and set(choices[1:]) <= {"auto", "none"}
    first = run.tool_records[0]
    assert first["name"] == "add" and first["error"] is None
    args = json.loads(first["arguments"])
    assert set(args) == {"a", "b"} and all(isinstance(v, int) for v in args.values())
    assert first["value"] == args["a"] + args["b"]
    # the result went back to the model as the call's tool message
    tool_msgs = [m for m in run.messages if m.get("role") == "tool"]
    assert tool_msgs and tool_msgs[0]["content"] == str(first["value"])
    assert any(e.type == "round_started" and e.round == 2 for e in run.events)


def test_with_no_key_the_embedded_model_is_the_default_and_says_so_once() -> None:
    from jupyter_agent import chat
    from jupyter_agent.clients import factory

    factory._local_notice_shown = False
    assert factory.resolve_model() == factory.ModelChoice("local", "embedded")
    first = chat("Say hi.", max_tokens=8)
    second = chat("Say hi again.", max_tokens=8)
    notices = [e.message for e in first.events if e.type == "warning"]
    assert first.model == "local" and len(notices) == 1
    assert "embedded local model" in notices[0] and "OPENAI_API_KEY" in notices[0]
    assert not [e for e in second.events if e.type == "warning"]


def test_an_explicit_model_without_a_key_is_an_error_even_with_the_local_model(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from jupyter_agent import MissingKeyError, chat
    from jupyter_agent.clients.factory import resolve_model

    monkeypatch.setenv("JUPYTER_AGENT_MODEL", "gpt-4.1-mini")
    assert resolve_model().name == "gpt-4.1-mini"
    with pytest.raises(MissingKeyError, match="OPENAI_API_KEY"):
        chat("hi")


def test_a_key_makes_the_hosted_default_win(monkeypatch: pytest.MonkeyPatch) -> None:
    from jupyter_agent.clients.factory import resolve_model

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789")
    assert resolve_model().name == "gpt-4.1-mini"


def test_a_simple_tool_question_gets_the_right_answer() -> None:
    # The embedded profile declares it cannot judge when to stop: after the add tool's result
    # the next request allows only an answer (it used to call add with invented numbers for
    # five more rounds and answer "246").
    from jupyter_agent import tool, toolloop

    calls: list[tuple[int, int]] = []

    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        calls.append((a, b))
        return a + b

    run = toolloop("What is 17 + 25? Use the add tool.", tools=[add], model="local")
    assert calls == [(17, 25)]
    assert run.status == "done" and "42" in run.answer
    assert [e.tool_choice for e in run.events if e.type == "round_started"] == ["auto", "none"]


def test_plan_on_the_embedded_model_refuses_in_one_line_before_any_request() -> None:
    from jupyter_agent import ConfigError, plan
    from jupyter_agent.session import default_store

    with pytest.raises(ConfigError) as info:
        plan("Plan a short weekend trip to Lyon.", model="local", auto_answer="first")
    message = str(info.value)
    assert "\n" not in message and "'local' cannot run the planning agent" in message
    assert "OPENAI_API_KEY" in message and "03-planning-with-ask.ipynb" in message
    assert default_store().list_runs() == []


def test_the_plan_magic_on_the_embedded_model_is_one_usage_line() -> None:
    from IPython import get_ipython
    from IPython.core.error import UsageError
    from IPython.testing.globalipapp import start_ipython
    from IPython.utils.capture import capture_output

    shell = start_ipython() or get_ipython()
    assert shell is not None and shell.run_cell("%load_ext jupyter_agent").success
    with capture_output() as cap:
        result = shell.run_cell("%%plan --model local\nPlan a short weekend trip to Lyon.")
    assert isinstance(result.error_in_exec, UsageError)
    lines = [line for line in cap.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "cannot run the planning agent" in lines[0], cap.stderr
