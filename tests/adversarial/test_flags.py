"""Every flag of every magic refuses a value it cannot honour, in one line, before any request.

``--max-rounds 0`` once ran 51 rounds and ``--model ''`` silently used the default model. The
sweep below covers every flag of ``%%chat``, ``%%toolloop``, ``%%plan`` and every ``%agent``
subcommand with negative, zero, empty and wrong-type values, through a real IPython shell: each
gives exactly one ``UsageError`` line naming the flag, no traceback, no model request, and
changes nothing (no session switched, no variable written). The plain-Python entry points
refuse the same values with a ``ValueError`` naming the *parameter*.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def shell(ip: InteractiveShell) -> Iterator[InteractiveShell]:
    ip.user_ns["docs"] = ["Refunds are possible within 30 days."]
    yield ip
    for name in ("docs", "answer", "_agent_run", "probe"):
        ip.user_ns.pop(name, None)


def _state(shell: InteractiveShell) -> dict[str, Any]:
    """What a refused command must leave as it was."""
    from jupyter_agent.base import config
    from jupyter_agent.runtime.sessions import current_session
    from jupyter_agent.session import default_store

    return {"active_model": config.settings.active_model,
            "session": current_session(),
            "sessions": sorted(s.name for s in default_store().list_sessions(None)),
            "ns": sorted(k for k in shell.user_ns if not k.startswith("_")),
            "run": shell.user_ns.get("_agent_run")}


def _refused(shell: InteractiveShell, server: ScriptedOpenAI, source: str) -> str:
    """Run ``source``; assert one UsageError line, no traceback, no request, nothing changed."""
    server.enqueue(text("This answer must never be requested."))
    before = _state(shell)
    with capture_output() as cap:
        result = shell.run_cell(source)
    assert isinstance(result.error_in_exec, UsageError), (source, result.error_in_exec)
    assert "Traceback" not in cap.stderr + cap.stdout, source
    lines = [line for line in cap.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("UsageError: "), (source, cap.stderr)
    assert cap.stdout.strip() == "" and not cap.outputs, (source, cap.stdout)
    assert server.requests == [], source
    assert _state(shell) == before, source
    return lines[0]


# (flag as written, bad value, words the one line must contain)
SHARED = [
    ("--model", "''", "must not be empty"),
    ("--model", '"   "', "must not be empty"),
    ("-m", "''", "must not be empty"),
    ("--system", "''", "must not be empty"),
    ("--out", "''", "Python variable name"),
    ("--out", "1st", "Python variable name"),
    ("--out", "class", "Python variable name"),
    ("--out", "a.b", "Python variable name"),
    ("--session", "''", "must not be empty"),
    ("--history", "-1", "0 or more"),
    ("--history", "many", "0 or more"),
    ("--history", "1.5", "0 or more"),
    ("--temperature", "-0.1", "from 0 to 2"),
    ("--temperature", "2.5", "from 0 to 2"),
    ("--temperature", "nan", "from 0 to 2"),
    ("--temperature", "inf", "from 0 to 2"),
    ("--temperature", "hot", "from 0 to 2"),
    ("--max-tokens", "0", "1 or more"),
    ("--max-tokens", "-5", "1 or more"),
    ("--max-tokens", "lots", "1 or more"),
    ("-k", "''", "must not be empty"),
    ("--knowledge", "''", "must not be empty"),
    ("--quote-role", "assistant", "invalid choice"),
    ("--quote-role", "''", "must not be empty"),
    ("--quote-prompt", "''", "Python variable name"),
    ("--quote-prompt", "1st", "Python variable name"),
    ("--quote-template", "a.b", "Python variable name"),
    ("--with", "''", "at least one variable"),
    ("--with", "','", "at least one variable"),
    ("--with", "1x", "notebook variable names"),
    ("--with", "a,class", "notebook variable names"),
    ("--with", "missing_variable", "missing_variable"),
    ("--with", "API_KEY", "secret"),
]
TOOLS = [
    ("--tools", "''", "at least one tool"),
    ("-t", "','", "at least one tool"),
    ("--max-rounds", "0", "1 or more"),
    ("--max-rounds", "-3", "1 or more"),
    ("--max-rounds", "ten", "1 or more"),
    ("--max-rounds", "2.5", "1 or more"),
    ("--agent", "''", "must not be empty"),
]
TOOLLOOP = [("--tool-choice", "''", "must not be empty")]
PLAN = [
    ("--answer", "''", "must not be empty"),
    ("--option", "0", "1 or more"),
    ("--option", "-1", "1 or more"),
    ("--option", "first", "1 or more"),
    ("--auto-answer", "''", "must not be empty"),
    ("--auto-answer", "second", "invalid choice"),
]
BATCH = [  # --over and its companions (docs/behaviour.md, "Batches")
    ("--over", "''", "Python variable name"),
    ("--over", "1rows", "Python variable name"),
    ("--concurrency", "0", "from 1 to 256"),
    ("--concurrency", "257", "from 1 to 256"),
    ("--concurrency", "many", "from 1 to 256"),
    ("--expect", "''", "must not be empty"),
    ("--match", "fuzzy", "invalid choice"),
    ("--score", "''", "Python variable name"),
    ("--score", "a.b", "Python variable name"),
    ("--max-cost", "0", "above 0"),
    ("--max-cost", "-1", "above 0"),
    ("--max-cost", "nan", "above 0"),
    ("--max-cost", "inf", "above 0"),
    ("--max-cost", "lots", "above 0"),
    ("--max-items", "0", "1 or more"),
    ("--max-items", "-2", "1 or more"),
    ("--engine", "spark", "invalid choice"),
    ("--engine", "''", "must not be empty"),
]
CELL_CASES = (
    [(m, *c) for m in ("chat", "toolloop", "plan") for c in BATCH]
    + [("chat", *c) for c in SHARED]
    + [(m, *c) for m in ("toolloop", "plan") for c in SHARED + TOOLS]
    + [("toolloop", *c) for c in TOOLLOOP]
    + [("plan", *c) for c in PLAN]
)


@pytest.mark.parametrize(("magic", "flag", "value", "words"), CELL_CASES,
                         ids=[f"{m}{f}={v}" for m, f, v, _ in CELL_CASES])
def test_a_bad_cell_flag_is_one_line(shell: InteractiveShell, server: ScriptedOpenAI,
                                     magic: str, flag: str, value: str, words: str) -> None:
    line = _refused(shell, server, f"%%{magic} {flag} {value}\nSay hi.")
    assert words in line
    # The line names the flag (argparse shows "-m/--model" for the short form too).
    assert flag in line or flag.lstrip("-") in line, line


@pytest.mark.parametrize("magic", ["chat", "toolloop", "plan"])
def test_a_flag_without_its_value_is_one_line(shell: InteractiveShell, server: ScriptedOpenAI,
                                              magic: str) -> None:
    line = _refused(shell, server, f"%%{magic} --model\nSay hi.")
    assert "--model" in line and "expected one argument" in line


AGENT_CASES = [
    ("resume ''", "run_id", "must not be empty"),
    ("resume --option 0", "--option", "1 or more"),
    ("resume --option -2", "--option", "1 or more"),
    ("resume --option one", "--option", "1 or more"),
    ("resume --answer ''", "--answer", "must not be empty"),
    ("pending --session ''", "--session", "must not be empty"),
    ("model ''", "name", "must not be empty"),
    ("model '  '", "name", "must not be empty"),
    ("sessions --group ''", "--group", "must not be empty"),
    ("session ''", "name", "must not be empty"),
    ("session other --group ''", "--group", "must not be empty"),
    ("session other --agent ''", "--agent", "must not be empty"),
    ("session other --model ''", "--model", "must not be empty"),
    ("new ''", "name", "must not be empty"),
    ("new fresh --group ''", "--group", "must not be empty"),
    ("reset ''", "name", "must not be empty"),
    ("usage ''", "name", "must not be empty"),
    ("history ''", "name", "must not be empty"),
    ("history -n 0", "--last", "1 or more"),
    ("history -n -2", "--last", "1 or more"),
    ("history --last all", "--last", "1 or more"),
    ("export ''", "path", "must not be empty"),
    ("export out.ipynb --session ''", "--session", "must not be empty"),
    ("record ''", "path", "must not be empty"),
    ("record --model ''", "--model", "must not be empty"),
    ("replay ''", "path", "must not be empty"),
    ("replay --model ''", "--model", "must not be empty"),
    ("replay --timing ''", "--timing", "must not be empty"),
    ("replay --timing slow", "--timing", "invalid choice"),
    ("show ''", "run_id", "must not be empty"),
    ("show", "run_id", "required"),
]


@pytest.mark.parametrize(("command", "flag", "words"), AGENT_CASES,
                         ids=[c for c, _, _ in AGENT_CASES])
def test_a_bad_agent_flag_is_one_line(shell: InteractiveShell, server: ScriptedOpenAI,
                                      command: str, flag: str, words: str) -> None:
    line = _refused(shell, server, f"%agent {command}")
    assert flag in line and words in line, line
    assert "%agent help" in line  # and where to look


# ------------------------------------------------------------------- the boundaries still work
def test_the_lowest_allowed_values_reach_the_model(shell: InteractiveShell,
                                                   server: ScriptedOpenAI) -> None:
    """``--max-rounds 1`` makes one tool round and the final answer: 2 requests, not 51."""
    assert shell.run_cell("from jupyter_agent import tool\n\n"
                          "@tool\n"
                          "def probe() -> str:\n"
                          "    '''Look.'''\n"
                          "    return 'seen'\n").success
    # A model that would go on calling the tool: only --max-rounds stops it.
    server.enqueue(tool_calls([call("probe", {})]), text("Done looking."),
                   *[tool_calls([call("probe", {})]) for _ in range(3)])
    with capture_output():
        result = shell.run_cell("%%toolloop --max-rounds 1 --history 0 --temperature 0 "
                                "--max-tokens 1 --model 'gpt-4.1' -t probe --out answer\n"
                                "Look around.")
    assert result.success, result.error_in_exec
    assert len(server.requests) == 2 and server.pending == 3
    first = server.requests[0]
    assert first["model"] == "gpt-4.1"  # the quotes are not part of the name
    assert first["max_tokens"] == 1
    assert server.requests[1]["tool_choice"] == "none"  # the final-answer round
    assert shell.user_ns["answer"] == "Done looking."


def test_the_highest_temperature_is_allowed(shell: InteractiveShell,
                                            server: ScriptedOpenAI) -> None:
    server.enqueue(text("Warm."))
    with capture_output():
        result = shell.run_cell("%%chat --temperature 2 --no-history\nSay hi.")
    assert result.success, result.error_in_exec
    assert len(server.requests) == 1 and server.requests[0]["temperature"] == 2


# ------------------------------------------------------------------------ plain Python callers
def _entry(name: str) -> Any:
    import jupyter_agent

    return getattr(jupyter_agent, name)


PARAMETER_CASES = [
    ("chat", {"model": ""}, "model"),
    ("chat", {"model": "   "}, "model"),
    ("chat", {"max_tokens": 0}, "max_tokens"),
    ("chat", {"history": -1}, "history"),
    ("toolloop", {"max_rounds": 0}, "max_rounds"),
    ("toolloop", {"max_rounds": -1}, "max_rounds"),
    ("toolloop", {"max_rounds": "5"}, "max_rounds"),
    ("toolloop", {"max_rounds": True}, "max_rounds"),
    ("toolloop", {"model": ""}, "model"),
    ("plan", {"max_rounds": 0}, "max_rounds"),
    ("plan", {"model": ""}, "model"),
    ("plan", {"option": 0}, "option"),
]


@pytest.mark.parametrize(("entry", "kwargs", "parameter"), PARAMETER_CASES,
                         ids=[f"{e}-{k}" for e, k, _ in PARAMETER_CASES])
def test_plain_python_names_the_parameter(server: ScriptedOpenAI, entry: str,
                                          kwargs: dict[str, Any], parameter: str) -> None:
    from jupyter_agent.session import default_store

    server.enqueue(text("This answer must never be requested."))
    with pytest.raises(ValueError) as info:
        _entry(entry)("Say hi.", **kwargs)
    message = str(info.value)
    assert message.startswith(parameter) and "--" not in message  # a parameter, not a flag
    assert len(message.splitlines()) == 1
    assert server.requests == []
    assert default_store().list_sessions(None) == []  # nothing was recorded
