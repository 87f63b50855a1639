"""No flag parses and does nothing, on a plain cell or under ``--over``.

The cases are GENERATED from the magics' own argument parsers: every flag of ``%%chat``,
``%%toolloop`` and ``%%plan`` gets one test on a plain cell and one under ``--over``. Each
looks its flag up in :data:`EFFECTS` (what the flag changes) or :data:`BATCH_FLAGS` (a batch's
own flags). A flag with no entry fails with a message saying where to add one: a new flag
cannot be forgotten.

Adding a flag: add an :class:`Effect` to :data:`EFFECTS` under its longest spelling. The cell
runs twice without the flag (the control: the two runs must agree in what ``key`` looks at)
and once with it (it must differ). ``over=None`` runs the same check with ``--over`` (the
batch must carry the flag to its item); ``over="refused"`` expects the ``--over`` cell to
refuse the flag by name in one line.

Through a real IPython shell and the scripted server; the cell is ``Say {item}.`` with
``item = "hi"`` in the notebook and ``rows = ["hi"]`` for ``--over``, so both modes send the
same prompt.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from tests.agents.plan.plan_scripts import ask
from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls

pytestmark = pytest.mark.timeout(300)

MAGICS = ("chat", "toolloop", "plan")
Mode = Literal["plain", "over"]
_seq = itertools.count()
MODE_FLAGS = {"plain": "--session {s} --no-history", "over": "--over rows --rerun"}
"""What ``{m}`` stands for in a line: a private session on a plain cell; the batch itself
(``--rerun``: each run makes its own request, nothing is taken from the store)."""


def _ok(srv: ScriptedOpenAI) -> None:
    srv.default = text("ok")


def _bodies(o: dict[str, Any]) -> Any:
    return (o["bodies"], o["status"], o["answer"])


def _messages_count(o: dict[str, Any]) -> Any:
    return len(o["bodies"][0]["messages"])


def _out(o: dict[str, Any]) -> Any:
    return o["out"] is not None


def _requests(o: dict[str, Any]) -> Any:
    return (len(o["bodies"]), o["status"])


def _recorded(o: dict[str, Any]) -> Any:
    return o["recorded"]


def _tool_results(o: dict[str, Any]) -> Any:
    return [m["content"] for m in o["bodies"][-1]["messages"] if m["role"] == "tool"]


def _meet_twice(srv: ScriptedOpenAI) -> None:
    srv.enqueue(tool_calls([call("meet", {}), call("meet", {})]), text("done"))
    srv.default = text("ok")


def _typed(srv: ScriptedOpenAI) -> None:
    srv.default = text('{"word": "hi"}')


def _typed_key(o: dict[str, Any]) -> Any:
    return ([b.get("response_format") for b in o["bodies"]], type(o["out"]).__name__)


def _probe_rounds(srv: ScriptedOpenAI) -> None:
    srv.enqueue(tool_calls([call("probe", {})]), tool_calls([call("probe", {})]), text("done"))
    srv.default = text("ok")


def _guarded(srv: ScriptedOpenAI) -> None:
    srv.enqueue(tool_calls([call("guarded", {})]), text("done"))
    srv.default = text("ok")


def _asks(srv: ScriptedOpenAI) -> None:
    srv.enqueue(tool_calls([call("ask_agent", ask())]))
    srv.default = text("ok")


@dataclass
class Effect:
    """What one flag changes (see the module doc)."""

    flagged: str
    """The line of the flagged run (``{m}``: the mode's flags, ``{s}``: a private session)."""
    base: str = "{m}"
    """The line of the two control runs."""
    key: Callable[[dict[str, Any]], Any] = _bodies
    script: Callable[[ScriptedOpenAI], None] = _ok
    prep: list[str] = field(default_factory=list)
    """Cells run once before the runs (``{magic}``, ``{m}``, ``{s}`` filled)."""
    over: Literal["refused"] | None = None
    """``None``: the same check under ``--over``; ``"refused"``: the batch refuses it."""
    alone: str | None = None
    """The flag as written on a refused ``--over`` line (default: ``flagged`` without
    ``{m}``)."""


_PREP7 = [f"%%chat --session {{s}}\nround {i}" for i in range(7)]

EFFECTS: dict[str, Effect] = {
    "--model": Effect("{m} --model gpt-4.1"),
    "--system": Effect("{m} --system 'Answer in French.'"),
    "--out": Effect("{m} --out ans", key=_out),
    "--session": Effect("--session {s}x --history 1", base="--session {s} --history 1",
                        prep=["%%chat --session {s}\nearlier"], key=_messages_count,
                        over="refused", alone="--session x"),
    "--history": Effect("--session {s} --history 1", base="--session {s}", prep=_PREP7,
                        key=_messages_count, over="refused", alone="--history 1"),
    "--no-history": Effect("--session {s} --no-history", base="--session {s}", prep=_PREP7,
                           key=_messages_count, over="refused", alone="--no-history"),
    "--temperature": Effect("{m} --temperature 0.3"),
    "--max-tokens": Effect("{m} --max-tokens 77"),
    "--knowledge": Effect("{m} -k docs"),
    "--quote-role": Effect("{m} -k docs --quote-role user", base="{m} -k docs"),
    "--quote-prompt": Effect("{m} -k docs --quote-prompt qp", base="{m} -k docs"),
    "--quote-template": Effect("{m} -k docs --quote-template qt", base="{m} -k docs"),
    "--no-stream": Effect("{m} --no-stream", over="refused"),
    "--record": Effect("{m} --record", key=_recorded),
    "--replay": Effect("{m} --replay", key=_requests,
                       prep=["%%{magic} {m} --record\nSay {item}."]),
    "--with": Effect("{m} --with docs"),
    "--schema": Effect("{m} --schema Tk --out ans", script=_typed, key=_typed_key),
    "--schema-retries": Effect("{m} --schema Tk --schema-retries 0", base="{m} --schema Tk",
                               key=_requests),
    "--cache": Effect("{m} --cache", key=_requests, prep=["%%{magic} {m} --cache\nSay {item}."]),
    # %%toolloop and %%plan
    "--tools": Effect("{m} --tools probe"),
    "--max-rounds": Effect("{m} --max-rounds 1", script=_probe_rounds, key=_requests),
    "--agent": Effect("{m} --agent terse"),
    "--notebook": Effect("{m} --notebook", over="refused"),
    "--skills": Effect("{m} --skills skills"),
    "--approve": Effect("{m} --tools guarded --approve guarded", base="{m} --tools guarded",
                        script=_guarded, key=_requests),
    # %%toolloop
    # Two calls of ``meet`` pass its barrier only when they run at the same time.
    "--parallel": Effect("{m} --parallel", script=_meet_twice, key=_tool_results),
    "--tool-choice": Effect("{m} --tool-choice probe"),
    # %%plan
    "--answer": Effect("{m} --answer 'Option B'", script=_asks, key=_requests),
    "--option": Effect("{m} --option 2", script=_asks, key=_requests),
    "--auto-answer": Effect("{m} --auto-answer first", script=_asks, key=_requests),
}

BATCH_FLAGS = {"--over": "over", "--concurrency": "concurrency", "--expect": "expect",
               "--match": "match", "--score": "score", "--max-cost": "max_cost",
               "--max-items": "max_items", "--rerun": "rerun", "--engine": "engine",
               "--judge": "judge", "--judge-model": "judge_model"}
"""A batch's own flags -> the parameter of ``jupyter_agent.batch``: they change a table of
many runs, not one request; tests/batch proves each one's effect. On a plain cell each is
refused (``needs --over``)."""
ELSEWHERE = {"--acp": "tests/acp"}
"""Flags whose effect a folder of their own proves: ``--acp`` replaces the model with an external
agent, so there is no request to compare; under ``--over`` each is refused by name."""
_BATCH_VALUES = {"--concurrency": "2", "--expect": "a", "--match": "icase", "--score": "probe",
                 "--max-cost": "1", "--max-items": "1", "--engine": "thread",
                 "--judge": "accuracy", "--judge-model": "gpt-4.1"}


def _parser(magic: str) -> Any:
    from jupyter_agent.edge.magics import AgentMagics

    return getattr(AgentMagics, magic).parser


def _parser_flags(magic: str) -> list[str]:
    return sorted(max(a.option_strings, key=len) for a in _parser(magic)._actions
                  if a.option_strings and a.dest != "help")


GENERATED = [(magic, flag, mode) for magic in MAGICS for flag in _parser_flags(magic)
             for mode in ("plain", "over")]


@pytest.fixture
def shell(ip: InteractiveShell, server: ScriptedOpenAI, tmp_path: Path,
          monkeypatch: pytest.MonkeyPatch) -> Iterator[InteractiveShell]:
    from jupyter_agent.base import config

    config.settings.cassette_path = str(tmp_path / "cells.cassette.json")
    skill = tmp_path / "skills" / "report"  # for --skills skills
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: report\ndescription: Write reports.\n---\n")
    monkeypatch.chdir(tmp_path)
    setup = (
        "from jupyter_agent import tool\n"
        "from jupyter_agent.runtime.agents import Agent\n"
        "import threading\n"
        "@tool\n"
        "def probe() -> str:\n"
        "    '''Look.'''\n"
        "    return threading.current_thread().name.split('_')[0]\n"
        "_bar = threading.Barrier(2)\n"
        "@tool\n"
        "def meet() -> str:\n"
        "    '''Meet.'''\n"
        "    try:\n"
        "        _bar.wait(timeout=2)\n"
        "        return 'together'\n"
        "    except threading.BrokenBarrierError:\n"
        "        _bar.reset()\n"
        "        return 'alone'\n"
        "@tool(requires_approval=True)\n"
        "def guarded() -> str:\n"
        "    '''Needs approval.'''\n"
        "    return 'guarded'\n"
        "@tool\n"
        "def other() -> str:\n"
        "    '''Other.'''\n"
        "    return 'other'\n"
        "terse = Agent(name='terse', instructions='Be terse.')\n"
        "docs = [{'q': 'Refunds', 'a': 'within 30 days', 'source': 'policy.md'}]\n"
        "qp = 'Facts: {{quote}}'\n"
        "qt = '[{{source}}] {{a}}'\n"
        "item = 'hi'\n"
        "rows = ['hi']\n"
        "from pydantic import BaseModel\n"
        "class Tk(BaseModel):\n"
        "    word: str\n")
    assert ip.run_cell(setup).success
    yield ip
    for name in ("docs", "qp", "qt", "ans", "probe", "meet", "_bar", "guarded", "other", "terse", "item",
                 "rows", "Tk", "BaseModel", "_agent_run", "_agent_batch"):
        ip.user_ns.pop(name, None)


def _line(template: str, mode: Mode, session: str, magic: str = "") -> str:
    return (template.replace("{m}", MODE_FLAGS[mode]).replace("{magic}", magic)
            .replace("{s}", session))


def _run(shell: InteractiveShell, server: ScriptedOpenAI, magic: str, effect: Effect,
         line: str, mode: Mode) -> dict[str, Any]:
    from jupyter_agent.clients.cassettes import active_cassette

    server.reset()
    effect.script(server)
    for name in ("ans", "_agent_run", "_agent_batch"):
        shell.user_ns.pop(name, None)
    before = len(active_cassette().interactions)
    with capture_output():
        result = shell.run_cell(f"%%{magic} {line}\nSay {{item}}.")
    assert result.error_in_exec is None, (magic, line, result.error_in_exec)
    if mode == "plain":
        run = shell.user_ns["_agent_run"]
        status, answer = run.status, run.answer
    else:
        outcome = shell.user_ns["_agent_batch"].outcomes[0]
        status, answer = outcome["status"], outcome["answer"]
    return {"bodies": list(server.requests), "status": status, "answer": answer,
            "out": shell.user_ns.get("ans"),
            "recorded": len(active_cassette().interactions) - before}


def _refusal(shell: InteractiveShell, line: str) -> str:
    with capture_output():
        result = shell.run_cell(line)
    assert result.error_in_exec is not None, f"{line!r} was not refused"
    return str(result.error_in_exec)


@pytest.mark.parametrize("magic,flag,mode", GENERATED,
                         ids=[f"{m}{f}-{mode}" for m, f, mode in GENERATED])
def test_every_flag_changes_the_request_or_is_refused(shell: InteractiveShell,
                                                      server: ScriptedOpenAI, magic: str,
                                                      flag: str, mode: Mode) -> None:
    if flag in BATCH_FLAGS:
        if mode == "plain" and flag != "--over":
            value = _BATCH_VALUES.get(flag, "")
            message = _refusal(shell, f"%%{magic} --session x {flag} {value}\nSay hi.")
            assert message == f"{flag} needs --over VAR (a batch).", message
        return  # under --over: tests/batch (test_every_batch_flag_is_exercised_by_the_batch_tests)
    if flag in ELSEWHERE:
        if mode == "over":
            message = _refusal(shell, f"%%{magic} --over rows {flag} true\nSay {{item}}.")
            assert flag in message and "--over" in message and "\n" not in message, message
        return  # the effect: ELSEWHERE[flag] (tests/acp drives a real ACP agent)
    effect = EFFECTS.get(flag)
    if effect is None:
        pytest.fail(f"%%{magic} {flag} has no entry in EFFECTS (tests/adversarial/"
                    "test_flag_effects.py): add an Effect saying what the flag changes on a "
                    "plain cell and whether --over carries it (over=None) or refuses it "
                    "(over='refused').")
    session = f"fx{next(_seq)}"
    if mode == "over" and effect.over == "refused":
        alone = effect.alone or effect.flagged.replace("{m}", "").strip()
        message = _refusal(shell, f"%%{magic} --over rows {alone}\nSay {{item}}.")
        assert message.startswith(f"{flag} with --over: ") and "\n" not in message, message
        return
    for cell in effect.prep:
        server.reset()
        server.default = text("ok")
        with capture_output():
            assert shell.run_cell(_line(cell, mode, session, magic)).success, cell
    base = _line(effect.base, mode, session)
    first = _run(shell, server, magic, effect, base, mode)
    second = _run(shell, server, magic, effect, base, mode)
    assert effect.key(first) == effect.key(second), f"{magic} {flag} {mode}: the controls differ"
    flagged = _run(shell, server, magic, effect, _line(effect.flagged, mode, session), mode)
    assert effect.key(flagged) != effect.key(first), f"{magic} {flag} {mode}: changed nothing"


def test_an_effect_entry_names_a_real_flag() -> None:
    """A stale entry (a flag renamed or removed) is caught too."""
    every = {f for magic in MAGICS for f in _parser_flags(magic)}
    assert set(EFFECTS) <= every, set(EFFECTS) - every
    assert set(BATCH_FLAGS) <= every, set(BATCH_FLAGS) - every


def test_every_batch_flag_is_exercised_by_the_batch_tests() -> None:
    batch_tests = "".join(p.read_text() for p in
                          (Path(__file__).resolve().parents[1] / "batch").glob("test_*.py"))
    for magic in MAGICS:
        assert set(BATCH_FLAGS) <= set(_parser_flags(magic))
    for flag, parameter in BATCH_FLAGS.items():
        assert flag in batch_tests or f"{parameter}=" in batch_tests, flag
    for flag, folder in ELSEWHERE.items():
        tests = "".join(p.read_text() for p in
                        (Path(__file__).resolve().parents[2] / folder).glob("*.py"))
        assert flag in tests, (flag, folder)


@pytest.mark.parametrize("name,value", [("session", "s"), ("history", 3), ("stream", True),
                                        ("notebook", True), ("origin", "cell:x")])
def test_batch_refuses_an_option_it_sets_per_item_by_name(server: ScriptedOpenAI, name: str,
                                                          value: Any) -> None:
    from jupyter_agent import batch
    from jupyter_agent.base.errors import ParameterError

    with pytest.raises(ParameterError) as err:
        batch("Say {item}.", ["hi"], kind="toolloop", namespace={}, **{name: value})
    assert str(err.value).startswith(f"{name} is not an option of a batch: ")
    assert not server.requests


def test_batch_from_python_carries_the_knowledge_flags_and_context(server: ScriptedOpenAI
                                                                    ) -> None:
    """What ``--over`` dropped before: the quote options and ``context`` reach the item."""
    from jupyter_agent import batch

    server.default = text("ok")
    docs = [{"q": "Refunds", "a": "within 30 days", "source": "policy.md"}]
    batch("Say {item}.", ["hi"], kind="chat", namespace={"docs": docs}, knowledge=docs,
          quote_role="user", quote_template="[{{source}}] {{a}}", context=["docs"],
          store=None)
    (body,) = server.requests
    user = body["messages"][-1]["content"]
    assert "[policy.md] within 30 days" in user  # the knowledge in the user message, templated
    assert "docs" in user and "list" in user  # the --with summary of the variable
    assert "policy.md" not in body["messages"][0]["content"]


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


def test_a_batch_takes_the_kernel_only_for_with(ip: InteractiveShell) -> None:
    """The shell rides along only when ``--with`` needs it: a batch without it can still run
    on dask workers (which cannot read this kernel), and one with it says why it cannot."""
    from IPython.core.magic_arguments import parse_argstring

    from jupyter_agent import batch
    from jupyter_agent.base.errors import ParameterError

    magics = ip.magics_manager.registry["AgentMagics"]
    ip.user_ns["docs"] = ["a"]
    try:
        plain = magics.cell_options("chat", parse_argstring(magics.chat, "--over docs"))
        assert "shell" not in plain.batch_options()
        withs = magics.cell_options("chat", parse_argstring(magics.chat, "--over docs --with docs"))
        assert withs.batch_options()["shell"] is ip
    finally:
        ip.user_ns.pop("docs", None)
    with pytest.raises(ParameterError, match="context reads this kernel's variables"):
        batch("Say {item}.", ["hi"], kind="chat", engine="dask", context=["x"],
              namespace={"x": 1}, store=None)
