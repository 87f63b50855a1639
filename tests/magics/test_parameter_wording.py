"""Below the magics, errors name parameters (``max_rounds``); the magics show the same line
with the flag (``--max-rounds``). Both audiences get one clear line, and nothing runs."""

from __future__ import annotations

from typing import Any

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from jupyter_agent.agents.plan import plan
from jupyter_agent.agents.toolloop import toolloop
from jupyter_agent.base.errors import ParameterError, ResumeError
from jupyter_agent.base.flags import usage_message
from tests.agents.plan.plan_scripts import ask
from tests.fakes.openai_server import ScriptedOpenAI, call, tool_calls

pytestmark = pytest.mark.timeout(60)


def _one_error(shell: InteractiveShell, source: str) -> str:
    with capture_output() as cap:
        result = shell.run_cell(source)
    assert isinstance(result.error_in_exec, UsageError), result.error_in_exec
    lines = [line for line in cap.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in cap.stderr + cap.stdout, cap.stderr
    return lines[0].removeprefix("UsageError: ")


@pytest.mark.parametrize(("call_", "message"), [
    (lambda: toolloop("go", max_rounds=0), "max_rounds must be an integer of 1 or more, not 0."),
    (lambda: plan("go", answer="a", option=1), "Give either answer or option, not both."),
    (lambda: plan("go", auto_answer="all"), "auto_answer must be 'first', not 'all'."),
    (lambda: toolloop("  \n "), "prompt is empty: give the task."),
])
def test_python_callers_read_parameter_names(server: ScriptedOpenAI, call_: Any,
                                             message: str) -> None:
    with pytest.raises(ParameterError) as info:
        call_()
    assert str(info.value) == message and "--" not in str(info.value)
    assert server.requests == []  # refused before any model request


def test_the_magics_name_the_flags(ip: InteractiveShell, server: ScriptedOpenAI) -> None:
    assert _one_error(ip, "%%plan --answer a --option 1\ngo") == (
        "Give either --answer or --option, not both.")
    ip.user_ns["blank"] = ""
    try:
        assert _one_error(ip, "%%toolloop\n{blank}") == (
            "The cell is empty: write the task below %%toolloop.")
    finally:
        ip.user_ns.pop("blank", None)  # the shared test shell: leave no variable behind
    assert server.requests == []


def test_an_option_out_of_range_names_the_flag_at_the_magic(ip: InteractiveShell,
                                                            server: ScriptedOpenAI) -> None:
    server.enqueue(tool_calls([call("ask_agent", ask(), id="a1")]))
    run = plan("go", tools=[])
    assert run.status == "ask"
    with pytest.raises(ResumeError) as info:  # a script: the parameter
        from jupyter_agent.agents.resume import Answer, resume

        resume(run.run_id, Answer("option", option_index=9))
    assert str(info.value) == "option must be between 1 and 3; nothing changed."
    line = _one_error(ip, f"%agent resume {run.run_id} --option 9")  # a cell: the flag
    assert line == "--option must be between 1 and 3; nothing changed."
    from jupyter_agent.session import default_store

    assert default_store().get_run(run.run_id).status == "ask"  # nothing changed
    assert len(server.requests) == 1


def test_only_whole_parameter_names_become_flags() -> None:
    exc = ParameterError("model must be a model or profile name, not an empty string "
                         "(pass None for the default model).", parameters=("model",))
    assert usage_message(exc) == ("--model must be a model or profile name, not an empty "
                                  "string (pass None for the default model).")
    exc = ParameterError("max_tokens must be an integer of 1 or more, not 0.",
                         parameters=("max_tokens",))
    assert usage_message(exc) == "--max-tokens must be an integer of 1 or more, not 0."
    assert usage_message(ResumeError("Run x is not waiting.")) == "Run x is not waiting."
