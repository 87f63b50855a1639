"""One table of option refusals for every road (``jupyter_agent/agents/option_rules.py``).

Every option of the cell's record, every ``TurnOptions`` field and every flag of the three
magics has a row (a new option must decide its roads), and each road refuses, from that table
and in one line naming the option and the road, what it cannot take: a plain cell, a ``--over``
cell, a ``--acp`` cell, the Python API, ``%agent resume`` and a cell replayed under ``%agent
replay``. What a road takes it does: a resumed run keeps its first turn's ``--cache``.

Fails on the code before the table: ``toolloop(schema=...)`` was a ``TypeError`` from a
dataclass, ``%agent resume --schema X`` said "unrecognized arguments", ``--record`` under
``%agent replay`` called the model live and wrote into the replayed cassette, ``--acp --out
ans`` left ``ans`` unset and ``--acp --no-stream`` changed nothing, and a resumed ``--cache``
run asked the model.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from jupyter_agent.agents.option_rules import (
    NOT_OPTIONS,
    ROADS,
    RULES,
    Road,
    flag_dest,
    refused_on,
    rule_of_dest,
)
from tests.agents.plan.plan_scripts import ask
from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls

pytestmark = pytest.mark.timeout(300)

MAGICS = ("chat", "toolloop", "plan")
ROOT = Path(__file__).resolve().parents[2]
SAMPLE = {"--model": "gpt-4.1", "--system": "s", "--out": "ans", "--session": "x",
          "--history": "1", "--temperature": "0.3", "--max-tokens": "5", "--knowledge": "docs",
          "--quote-role": "user", "--quote-prompt": "qp", "--quote-template": "qt",
          "--with": "docs", "--schema": "Tk", "--schema-retries": "1", "--tools": "probe",
          "--max-rounds": "3", "--agent": "terse", "--skills": "sk", "--approve": "probe",
          "--tool-choice": "auto", "--acp": "true", "--answer": "yes", "--option": "1",
          "--auto-answer": "first", "--over": "rows", "--concurrency": "2", "--expect": "a",
          "--match": "icase", "--score": "probe", "--max-cost": "1", "--max-items": "1",
          "--engine": "thread", "--judge": "accuracy", "--judge-model": "gpt-4.1"}
"""A value each flag that takes one parses (a store-true flag takes none)."""


def _parsers() -> dict[str, Any]:
    from jupyter_agent.edge.magics import AgentMagics

    return {m: getattr(AgentMagics, m).parser for m in MAGICS}


def _flags(magic: str) -> dict[str, Any]:
    """Long spelling -> its argparse action, for every flag of ``%%magic``."""
    return {max(a.option_strings, key=len): a for a in _parsers()[magic]._actions
            if a.option_strings and a.dest != "help"}


def _written(magic: str, flag: str) -> str:
    return flag if _flags(magic)[flag].nargs == 0 else f"{flag} {SAMPLE[flag]}"


# ------------------------------------------------------------------ the table covers everything
def test_every_option_of_the_record_and_of_a_turn_has_a_row() -> None:
    from jupyter_agent.agents.turn.options import TurnOptions
    from jupyter_agent.edge.cell_options import CellOptions

    record = {f.name for f in dataclasses.fields(CellOptions)} - NOT_OPTIONS
    turn = {f.name for f in dataclasses.fields(TurnOptions)}
    assert sorted(record - set(RULES)) == [], "give each a row in agents/option_rules.py"
    assert sorted(turn - set(RULES)) == [], "give each a row in agents/option_rules.py"


@pytest.mark.parametrize("magic", MAGICS)
def test_every_flag_has_a_row_under_its_own_destination(magic: str) -> None:
    for flag, action in _flags(magic).items():
        assert flag_dest(flag) == action.dest, flag
        assert rule_of_dest(action.dest) is not None, f"{flag}: no row in agents/option_rules.py"
        assert flag in SAMPLE or action.nargs == 0, f"{flag}: add a sample value above"


def test_every_row_names_real_flags_and_one_line_reasons() -> None:
    every = {f for m in MAGICS for f in _flags(m)}
    for name, rule in RULES.items():
        assert set(rule.flags) <= every, (name, set(rule.flags) - every)
        for road in ROADS:
            reason = getattr(rule, road)
            assert reason is None or (reason.strip() and "\n" not in reason), (name, road)


def test_the_batch_and_the_cell_read_the_same_over_column() -> None:
    from jupyter_agent.batch.api import PER_ITEM

    assert PER_ITEM == refused_on("over")


def test_the_flag_effects_agree_with_the_table() -> None:
    """``tests/adversarial/test_flag_effects.py`` proves each flag's effect per mode; what it
    expects ``--over`` and a plain cell to refuse is the table's, not a list of its own."""
    from tests.adversarial.test_flag_effects import BATCH_FLAGS, EFFECTS

    def flags(road: Road) -> set[str]:
        return {f for name in refused_on(road) for f in RULES[name].flags}

    assert {f for f, e in EFFECTS.items() if e.over == "refused"} == flags("over") - {"--acp"}
    assert set(BATCH_FLAGS) - {"--over"} == flags("cell")


def test_the_behaviour_doc_prints_the_table() -> None:
    doc = (ROOT / "docs" / "behaviour.md").read_text()
    assert doc_table() in doc, "regenerate the table: python -c 'from tests.magics." \
                               "test_option_roads import doc_table; print(doc_table())'"


def doc_table() -> str:
    """The option x road table of docs/behaviour.md §1.1, from :data:`RULES` (a reason given
    three times or more is a numbered note under the table)."""
    reasons = [getattr(rule, road) for rule in RULES.values() for road in ROADS]
    notes: dict[str, int] = {}
    for reason in reasons:
        if reason is not None and reasons.count(reason) >= 3 and reason not in notes:
            notes[reason] = len(notes) + 1
    head = ("| Option | Flags | Plain cell | `--over`, `batch()` | `--acp` | Python API | "
            "Resumed run | `%agent replay` |\n|---|---|---|---|---|---|---|---|")
    rows = []
    for name, rule in RULES.items():
        flags = ", ".join(f"`{f}`" for f in rule.flags) or "(Python only)"
        cells = []
        for road in ROADS:
            reason = getattr(rule, road)
            if not rule.flags and road in ("cell", "acp", "replay"):
                cells.append("—")
            elif reason is None:
                cells.append("carried" if road == "resume" else "yes")
            else:
                cells.append(f"no ({notes[reason]})" if reason in notes else f"no: {reason}")
        rows.append(f"| `{name}` | {flags} | " + " | ".join(cells) + " |")
    legend = [f"- ({n}) {reason}." for reason, n in notes.items()]
    return "\n".join([head, *rows, "", *legend])


# ------------------------------------------------------------------ each road refuses from it
@pytest.fixture
def shell(ip: InteractiveShell, server: ScriptedOpenAI, tmp_path: Path,
          monkeypatch: pytest.MonkeyPatch) -> Iterator[InteractiveShell]:
    from jupyter_agent.base import config

    config.settings.cassette_path = str(tmp_path / "roads.cassette.json")
    monkeypatch.chdir(tmp_path)
    setup = ("from jupyter_agent import tool\n"
             "@tool\n"
             "def probe() -> str:\n"
             "    '''Look.'''\n"
             "    return 'seen'\n"
             "from pydantic import BaseModel\n"
             "class Tk(BaseModel):\n"
             "    word: str\n"
             "docs = ['a']\nqp = 'Facts: {{quote}}'\nqt = '{{a}}'\nrows = ['hi']\nitem = 'hi'\n")
    assert ip.run_cell(setup).success
    yield ip
    with capture_output():
        ip.run_cell("%agent live")
    for name in ("probe", "Tk", "BaseModel", "docs", "qp", "qt", "rows", "item", "ans",
                 "_agent_run", "_agent_batch"):
        ip.user_ns.pop(name, None)


def _refused(shell: InteractiveShell, source: str) -> str:
    with capture_output():
        result = shell.run_cell(source)
    assert result.error_in_exec is not None, f"{source!r} was not refused"
    message = str(result.error_in_exec)
    assert "\n" not in message and "Traceback" not in message, message
    return message


def _road_cases(road: Road) -> list[tuple[str, str]]:
    """(magic, flag) for every flag ``road`` refuses, from the table."""
    out = []
    for name in refused_on(road):
        for flag in RULES[name].flags:
            out += [(m, flag) for m in MAGICS if flag in _flags(m)]
    return out


@pytest.mark.parametrize("magic,flag", _road_cases("cell"))
def test_a_plain_cell_refuses_from_the_table(shell: InteractiveShell, server: ScriptedOpenAI,
                                             magic: str, flag: str) -> None:
    message = _refused(shell, f"%%{magic} {_written(magic, flag)}\nSay hi.")
    assert message.startswith(f"{flag} needs --over VAR"), message
    assert not server.requests


@pytest.mark.parametrize("magic,flag", [c for c in _road_cases("over") if c[1] != "--acp"])
def test_an_over_cell_refuses_from_the_table(shell: InteractiveShell, server: ScriptedOpenAI,
                                             magic: str, flag: str) -> None:
    message = _refused(shell, f"%%{magic} --over rows {_written(magic, flag)}\nSay {{item}}.")
    assert message.startswith(f"{flag} with --over: "), message
    assert not server.requests


@pytest.mark.parametrize("flag", [f for m, f in _road_cases("acp") if m == "toolloop"])
def test_an_acp_cell_refuses_from_the_table(shell: InteractiveShell, server: ScriptedOpenAI,
                                            flag: str) -> None:
    """``%%toolloop --acp CMD --schema Tk`` (and every flag the table refuses there): one line
    naming the flag and ``--acp``, before any agent starts."""
    message = _refused(shell, f"%%toolloop --acp true {_written('toolloop', flag)}\nhello")
    assert message.startswith(f"{flag} with --acp: "), message
    assert "--session" in message  # what it takes instead, from the same table
    assert not server.requests


RESUME_CASES = sorted({(m, f) for m in MAGICS for f in _flags(m)
                       if f not in ("--answer", "--option")})


@pytest.mark.parametrize("magic,flag", RESUME_CASES)
def test_agent_resume_refuses_every_cell_flag_by_name(shell: InteractiveShell,
                                                      server: ScriptedOpenAI, magic: str,
                                                      flag: str) -> None:
    """A resumed run keeps what its cell gave it; ``%agent resume ... --schema Tk`` says so
    (not "unrecognized arguments"), and the question still waits."""
    server.enqueue(tool_calls([call("ask_agent", ask())]))
    with capture_output():
        assert shell.run_cell("%%plan --session rs --no-history\nPlan it.").success
    run = shell.user_ns["_agent_run"]
    assert run.status == "ask"
    message = _refused(shell, f"%agent resume {run.run_id} --option 1 {_written(magic, flag)}")
    assert message.startswith(f"{flag} on %agent resume: "), message
    from jupyter_agent.session import default_store

    assert [r.run_id for r in default_store().list_pending()] == [run.run_id]
    assert len(server.requests) == 1


def test_python_api_refuses_an_unknown_keyword_in_one_line(server: ScriptedOpenAI) -> None:
    from pydantic import BaseModel

    from jupyter_agent import batch, chat, plan, toolloop
    from jupyter_agent.base.errors import ParameterError

    class Tk(BaseModel):
        word: str

    cases = [(lambda: toolloop("Say hi.", schema=Tk, store=None),
              "schema is not an option of toolloop(): write output= (the cell's --schema)."),
             (lambda: plan("Say hi.", record=True, store=None),
              "record is not an option of plan(): a cell's --record/--replay"),
             (lambda: chat("Say hi.", out="ans", store=None),
              "out is not an option of chat(): a cell's own"),
             (lambda: chat("Say hi.", concurrency=4, store=None),
              "concurrency is not an option of chat(): it is a keyword of "
              "jupyter_agent.batch()"),
             (lambda: batch("Say {item}.", ["hi"], schema=Tk, namespace={}, store=None),
              "schema is not an option of a toolloop batch: write output= (the cell's "
              "--schema)."),
             (lambda: chat("Say hi.", agent_model="gpt-4.1", store=None),
              "agent_model is not an option of chat(): set by the runtime"),
             (lambda: chat("Say hi.", tools=["x"], store=None),
              "tools is not an option of chat() (its options: ")]
    for start, expected in cases:
        with pytest.raises(ParameterError) as err:
            start()
        assert str(err.value).startswith(expected), str(err.value)
        assert "\n" not in str(err.value)
    assert not server.requests


def test_an_acp_cell_fills_out(shell: InteractiveShell, tmp_path: Path) -> None:
    """``--out`` is one of the few flags a ``--acp`` cell takes: it stores the answer, and
    again after a permission's answer (before: parsed, then dropped)."""
    import sys

    from jupyter_agent.acp.client import shutdown_all

    shell.user_ns["cmd"] = [sys.executable, "-m", "jupyter_agent.acp.demo_agent"]
    try:
        with capture_output():
            result = shell.run_cell("%%toolloop --acp cmd --out ans\nhello")
        assert result.error_in_exec is None, result.error_in_exec
        run = shell.user_ns["_agent_run"]
        assert run.status == "done" and "demo-acp" in run.answer
        assert shell.user_ns["ans"] == run.answer
        # A permission: the cell's part stores what it streamed, the answer's part the rest.
        (tmp_path / "notes.txt").write_text("one\ntwo\n")
        with capture_output():
            assert shell.run_cell("%%toolloop --acp cmd --out ans\nSummarise notes.").success
        run = shell.user_ns["_agent_run"]
        assert run.status == "ask" and shell.user_ns["ans"] == run.answer
        with capture_output():
            assert shell.run_cell(f"%agent resume {run.run_id} --option 3").success
        assert run.status == "done" and "rejected" in shell.user_ns["ans"]
    finally:
        shell.user_ns.pop("cmd", None)
        shutdown_all()


# ------------------------------------------------------------------ replay: refused, not dropped
def _recorded(shell: InteractiveShell, server: ScriptedOpenAI) -> int:
    """Record one chat cell, then replay: the number of recorded interactions."""
    from jupyter_agent.clients.cassettes import active_cassette

    server.default = text("ok")
    with capture_output():
        assert shell.run_cell("%agent record").success
        assert shell.run_cell("%%chat --session rp --no-history\nSay hi.").success
        assert shell.run_cell("%agent replay").success
    server.reset()
    return len(active_cassette().interactions)


@pytest.mark.parametrize("line", ["%%chat --session rp --no-history --record\nSay hi.",
                                  "%%chat --over rows --record\nSay {item}."])
def test_record_under_agent_replay_is_refused_not_live(shell: InteractiveShell,
                                                       server: ScriptedOpenAI, line: str) -> None:
    """Before: the cell called the model live (a key needed) and appended its call to the
    very cassette being replayed."""
    from jupyter_agent.clients.cassettes import active_cassette

    n = _recorded(shell, server)
    message = _refused(shell, line)
    assert message.startswith("--record under %agent replay: "), message
    assert not server.requests
    assert len(active_cassette().interactions) == n
    with capture_output():  # the same cell without the flag replays
        assert shell.run_cell("%%chat --session rp --no-history\nSay hi.").success
    assert shell.user_ns["_agent_run"].answer == "ok" and not server.requests


def test_a_cell_replayed_with_a_different_option_is_one_line_not_a_silent_drop(
        shell: InteractiveShell, server: ScriptedOpenAI) -> None:
    """Options the replay road takes are compared with the recording: ``--temperature`` the
    recording did not have is refused by the cassette in one line naming the field."""
    _recorded(shell, server)
    message = _refused(shell, "%%chat --session rp --no-history --temperature 0.3\nSay hi.")
    assert "temperature" in message and "No recording for this request" in message
    assert not server.requests


# ------------------------------------------------------------------ resume: carried, not dropped
def test_a_resumed_run_keeps_its_cells_cache(shell: InteractiveShell,
                                             server: ScriptedOpenAI) -> None:
    """``--cache`` on a plan that asks: the second identical run, answered the same way, is
    answered from the cache also after the answer (before: its resumed part asked the model)."""
    counts = []
    for i in range(2):
        server.reset()
        server.enqueue(tool_calls([call("ask_agent", ask())]), text("done"))
        server.default = text("not from the cache")
        with capture_output():
            assert shell.run_cell(f"%%plan --session c{i} --no-history --cache\nPlan it.").success
            run = shell.user_ns["_agent_run"]
            assert run.status == "ask"
            assert shell.run_cell(f"%agent resume {run.run_id} --option 1").success
        assert shell.user_ns["_agent_run"].answer == "done"
        counts.append(len(server.requests))
    assert counts == [2, 0], counts


def test_the_cache_option_is_saved_with_the_suspended_run(shell: InteractiveShell,
                                                          server: ScriptedOpenAI) -> None:
    """A resume in another kernel reads it from the store (nothing kept in memory)."""
    from jupyter_agent.session import default_store

    server.enqueue(tool_calls([call("ask_agent", ask())]))
    with capture_output():
        assert shell.run_cell("%%plan --session cs --no-history --cache\nPlan it.").success
    run_id = shell.user_ns["_agent_run"].run_id
    record = default_store().get_run(run_id)
    assert record is not None and json.loads(json.dumps(record.pending))["cache"] is True


def test_a_resumed_run_keeps_what_its_cell_gave_it(shell: InteractiveShell,
                                                    server: ScriptedOpenAI, tmp_path: Path) -> None:
    """The ``resume`` column's "carried", request by request: the resumed part's request has
    the first one's model, temperature, token cap, response format and skill tool, and
    ``--out`` gets the typed instance."""
    skill = tmp_path / "sk" / "report"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: report\ndescription: Write reports.\n---\n")
    server.enqueue(tool_calls([call("ask_agent", ask())]))
    server.default = text('{"word": "hi"}')
    line = ("%%plan --session k --no-history --model gpt-4.1 --temperature 0.3 --max-tokens 77 "
            "--skills sk --schema Tk --out ans --schema-retries 0\nPlan it.")
    with capture_output():
        assert shell.run_cell(line).success
        run = shell.user_ns["_agent_run"]
        assert run.status == "ask" and shell.user_ns.get("ans") is None
        assert shell.run_cell(f"%agent resume {run.run_id} --option 1").success
    first, resumed = server.requests

    def kept(body: dict[str, Any]) -> Any:
        return ({k: body.get(k) for k in ("model", "temperature", "max_tokens",
                                          "response_format")},
                "read_skill" in [t["function"]["name"] for t in body.get("tools", [])])

    assert kept(resumed) == kept(first)
    assert kept(first)[0]["temperature"] == 0.3 and kept(first)[1]
    assert type(shell.user_ns["ans"]).__name__ == "Tk" and shell.user_ns["ans"].word == "hi"

