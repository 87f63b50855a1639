"""No flag parses and does nothing: every flag of ``%%chat``, ``%%toolloop`` and ``%%plan``
changes the request body or the result.

Table-driven through a real IPython shell and the scripted server: each cell runs twice
without the flag (the two must agree: the control) and once with it (it must differ in what
the case looks at). A flag added to a magic without a row here fails
``test_every_flag_has_a_row``; ``%agent help`` and the README must list every flag.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from IPython import get_ipython
from IPython.core.interactiveshell import InteractiveShell
from IPython.testing.globalipapp import start_ipython
from IPython.utils.capture import capture_output

from tests.agents.plan.plan_scripts import ask
from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls

pytestmark = pytest.mark.timeout(300)

MAGICS = ("chat", "toolloop", "plan")
_seq = itertools.count()


@pytest.fixture(scope="module")
def ip() -> InteractiveShell:
    shell = start_ipython() or get_ipython()
    assert shell is not None
    assert shell.run_cell("%load_ext jupyter_agent").success
    return shell


@dataclass
class Case:
    magic: str
    flag: str
    """The option as the parser knows it (the row covers every spelling of it)."""
    base: str
    """Flags of the two control runs (``{s}``: a session of this row alone)."""
    flagged: str
    script: Callable[[ScriptedOpenAI], None] = lambda srv: setattr(srv, "default", text("ok"))
    key: Callable[[dict[str, Any]], Any] = lambda o: (o["bodies"], o["status"], o["answer"])
    prep: list[str] = field(default_factory=list)
    """Cells run once before the row (``{s}`` filled)."""

    @property
    def id(self) -> str:
        return f"{self.magic}{self.flag}"


def _messages_count(o: dict[str, Any]) -> Any:
    return len(o["bodies"][0]["messages"])


def _out(o: dict[str, Any]) -> Any:
    return o["out"]


def _requests(o: dict[str, Any]) -> Any:
    return (len(o["bodies"]), o["status"])


def _shared(magic: str) -> list[Case]:
    base = "--session {s} --no-history"
    prep7 = [f"%%chat --session {{s}}\nround {i}" for i in range(7)]
    return [
        Case(magic, "--model", base, base + " --model gpt-4.1"),
        Case(magic, "--system", base, base + " --system 'Answer in French.'"),
        Case(magic, "--out", base, base + " --out ans", key=_out),
        Case(magic, "--session", "--session {s} --history 1", "--session {s}x --history 1",
             prep=["%%chat --session {s}\nearlier"], key=_messages_count),
        Case(magic, "--history", "--session {s}", "--session {s} --history 1", prep=prep7,
             key=_messages_count),
        Case(magic, "--no-history", "--session {s}", "--session {s} --no-history", prep=prep7,
             key=_messages_count),
        Case(magic, "--temperature", base, base + " --temperature 0.3"),
        Case(magic, "--max-tokens", base, base + " --max-tokens 77"),
        Case(magic, "--knowledge", base, base + " -k docs"),
        Case(magic, "--quote-role", base + " -k docs", base + " -k docs --quote-role user"),
        Case(magic, "--quote-prompt", base + " -k docs", base + " -k docs --quote-prompt qp"),
        Case(magic, "--quote-template", base + " -k docs",
             base + " -k docs --quote-template qt"),
        Case(magic, "--no-stream", base, base + " --no-stream"),
        Case(magic, "--record", base, base + " --record", key=lambda o: o["recorded"]),
        Case(magic, "--replay", base, base + " --replay", key=_requests,
             prep=[f"%%{magic} --session {{s}}r --no-history --record\nSay hi."]),
        Case(magic, "--with", base, base + " --with docs"),
        Case(magic, "--schema", base, base + " --schema Tk --out ans", script=_typed, key=_typed_key),
        Case(magic, "--schema-retries", base + " --schema Tk", base + " --schema Tk --schema-retries 0",
             key=_requests),
        Case(magic, "--cache", base, base + " --cache", key=_requests,
             prep=[f"%%{magic} {base} --cache\nSay hi."]),
    ]


def _typed(srv: ScriptedOpenAI) -> None:
    srv.default = text('{"word": "hi"}')


def _typed_key(o: dict[str, Any]) -> Any:
    return ([b.get("response_format") for b in o["bodies"]], type(o["out"]).__name__)


def _probe_twice(srv: ScriptedOpenAI) -> None:
    srv.enqueue(tool_calls([call("probe", {}), call("probe", {})]), text("done"))
    srv.default = text("ok")


def _probe_rounds(srv: ScriptedOpenAI) -> None:
    srv.enqueue(tool_calls([call("probe", {})]), tool_calls([call("probe", {})]), text("done"))
    srv.default = text("ok")


def _asks(srv: ScriptedOpenAI) -> None:
    srv.enqueue(tool_calls([call("ask_agent", ask())]))
    srv.default = text("ok")


def _tooled(magic: str) -> list[Case]:
    base = "--session {s} --no-history"
    return [
        Case(magic, "--tools", base, base + " --tools probe"),
        Case(magic, "--max-rounds", base, base + " --max-rounds 1", script=_probe_rounds,
             key=_requests),
        Case(magic, "--agent", base, base + " --agent terse"),
        Case(magic, "--notebook", base, base + " --notebook"),
    ]


CASES: list[Case] = (
    [c for m in MAGICS for c in _shared(m)]
    + [c for m in ("toolloop", "plan") for c in _tooled(m)]
    + [Case("toolloop", "--parallel", "--session {s} --no-history",
            "--session {s} --no-history --parallel", script=_probe_twice,
            key=lambda o: [m["content"] for m in o["bodies"][-1]["messages"]
                           if m["role"] == "tool"]),
       Case("toolloop", "--tool-choice", "--session {s} --no-history",
            "--session {s} --no-history --tool-choice probe")]
    + [Case("plan", flag, "--session {s} --no-history", "--session {s} --no-history " + value,
            script=_asks, key=_requests)
       for flag, value in (("--answer", "--answer 'Option B'"), ("--option", "--option 2"),
                           ("--auto-answer", "--auto-answer first"))]
)


@pytest.fixture
def shell(ip: InteractiveShell, server: ScriptedOpenAI, tmp_path: Path
          ) -> Iterator[InteractiveShell]:
    from jupyter_agent import config

    config.settings.cassette_path = str(tmp_path / "cells.cassette.json")
    setup = (
        "from jupyter_agent import tool\n"
        "from jupyter_agent.runtime.agents import Agent\n"
        "import threading\n"
        "@tool\n"
        "def probe() -> str:\n"
        "    '''Look.'''\n"
        "    return threading.current_thread().name.split('_')[0]\n"
        "@tool\n"
        "def other() -> str:\n"
        "    '''Other.'''\n"
        "    return 'other'\n"
        "terse = Agent(name='terse', instructions='Be terse.')\n"
        "docs = [{'q': 'Refunds', 'a': 'within 30 days', 'source': 'policy.md'}]\n"
        "qp = 'Facts: {{quote}}'\n"
        "qt = '[{{source}}] {{a}}'\n"
        "from pydantic import BaseModel\n"
        "class Tk(BaseModel):\n"
        "    word: str\n")
    assert ip.run_cell(setup).success
    yield ip
    for name in ("docs", "qp", "qt", "ans", "probe", "other", "terse", "_agent_run", "Tk", "BaseModel"):
        ip.user_ns.pop(name, None)


def _run(shell: InteractiveShell, server: ScriptedOpenAI, case: Case, flags: str,
         session: str) -> dict[str, Any]:
    from jupyter_agent.clients.cassettes import active_cassette

    server.reset()
    case.script(server)
    shell.user_ns.pop("ans", None)
    before = len(active_cassette().interactions)
    with capture_output():
        result = shell.run_cell(f"%%{case.magic} {flags.format(s=session)}\nSay hi.")
    assert result.error_in_exec is None, (case.id, flags, result.error_in_exec)
    run = shell.user_ns["_agent_run"]
    return {"bodies": list(server.requests), "status": run.status, "answer": run.answer,
            "out": shell.user_ns.get("ans"),
            "recorded": len(active_cassette().interactions) - before}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_the_flag_changes_the_request_or_the_result(shell: InteractiveShell,
                                                     server: ScriptedOpenAI,
                                                     case: Case) -> None:
    session = f"fx{next(_seq)}"
    for cell in case.prep:
        server.reset()
        server.default = text("ok")
        with capture_output():
            assert shell.run_cell(cell.format(s=session)).success, cell
    first = _run(shell, server, case, case.base, session)
    second = _run(shell, server, case, case.base, session)
    assert case.key(first) == case.key(second), f"{case.id}: the control runs differ"
    flagged = _run(shell, server, case, case.flagged, session)
    assert case.key(flagged) != case.key(first), f"{case.id} changed nothing"


def _parser_flags(magic: str) -> set[str]:
    from jupyter_agent.magics import AgentMagics

    parser = getattr(AgentMagics, magic).parser
    return {max(a.option_strings, key=len) for a in parser._actions
            if a.option_strings and a.dest != "help"}


# The flags of a batch (``--over``) change a table of many runs, not one request: tests/batch
# proves each one's effect through the magics or the same parameter of ``jupyter_agent.batch``.
BATCH_FLAGS = {"--over": "over", "--concurrency": "concurrency", "--expect": "expect",
               "--match": "match", "--score": "score", "--max-cost": "max_cost",
               "--max-items": "max_items", "--rerun": "rerun", "--engine": "engine",
               "--judge": "judge", "--judge-model": "judge_model"}


@pytest.mark.parametrize("magic", MAGICS)
def test_every_flag_has_a_row(magic: str) -> None:
    assert _parser_flags(magic) - set(BATCH_FLAGS) == {c.flag for c in CASES if c.magic == magic}


def test_every_batch_flag_is_exercised_by_the_batch_tests() -> None:
    batch_tests = "".join(p.read_text() for p in
                          (Path(__file__).resolve().parents[1] / "batch").glob("test_*.py"))
    for magic in MAGICS:
        assert set(BATCH_FLAGS) <= _parser_flags(magic)
    for flag, parameter in BATCH_FLAGS.items():
        assert flag in batch_tests or f"{parameter}=" in batch_tests, flag


def test_help_and_readme_list_every_flag(ip: InteractiveShell) -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    with capture_output() as cap:
        ip.run_cell("%agent help")
    shown = cap.stdout + "".join(str(o.data) for o in cap.outputs)
    for magic in MAGICS:
        assert f"%%{magic}" in shown and f"%%{magic}" in readme
        for flag in _parser_flags(magic):
            assert flag in shown, (magic, flag)
            assert flag in readme, (magic, flag)
