"""The whole package passes mypy in strict mode (the settings are pyproject.toml's [tool.mypy]).

``[tool.mypy]`` checks every module of ``jupyter_agent/``, with the pydantic plugin (model
fields and ``model_copy`` checked as pydantic sees them). The second test proves the
configuration bites: a small module with the mistakes strict mode exists to catch must fail
with those errors, so a config that silently checks nothing fails.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: mypy itself depends on tomli there
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]


def _mypy(*args: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([sys.executable, "-m", "mypy", *args], cwd=ROOT,
                            capture_output=True, text=True, timeout=240)
    if "No module named mypy" in result.stderr:
        pytest.fail("mypy is not installed: install the package's `test` extra")
    return result


def test_the_package_passes_strict_mypy() -> None:
    result = _mypy()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Success: no issues found" in result.stdout


def test_config_is_strict_and_covers_the_whole_package(tmp_path: Path) -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    assert config["strict"] is True
    assert config["files"] == ["jupyter_agent"]
    assert "pydantic.mypy" in config["plugins"]
    assert "exclude" not in config and "ignore_errors" not in str(config.get("overrides", ""))
    bad = tmp_path / "sloppy.py"
    bad.write_text(
        "def untyped(x):\n"            # no annotations: strict's disallow-untyped-defs
        "    return x\n"
        "\n"
        "def wrong() -> int:\n"
        "    return 'text'  # type: ignore\n"  # an ignore that names no code
        "\n"
        "n: int = 'not a number'\n")
    result = _mypy(str(bad))
    assert result.returncode == 1, result.stdout + result.stderr
    for code in ("no-untyped-def", "ignore-without-code", "assignment"):
        assert f"[{code}]" in result.stdout, result.stdout


def test_every_type_ignore_says_why() -> None:
    """A silenced error names its code (``ignore-without-code``) and says why: a comment after
    it on the same line, or on the line above."""
    unexplained = []
    for path in sorted((ROOT / "jupyter_agent").rglob("*.py")):
        lines = path.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            found = re.search(r"#\s*type:\s*ignore\b(\[[^\]]*\])?(.*)$", line)
            if found is None:
                continue
            said = found.group(2).strip().startswith("#") or (
                i > 0 and lines[i - 1].strip().startswith("#"))
            if not said:
                unexplained.append(f"{path.relative_to(ROOT)}:{i + 1}: {line.strip()}")
    assert not unexplained, "\n".join(unexplained)


def test_a_typed_run_is_checked_by_mypy(tmp_path: Path) -> None:
    """``chat/toolloop/plan(..., output=Model)`` return ``Run[Model]``: a wrong field of
    ``run.output`` is a mypy error; an untyped run's output stays ``Any``."""
    src = tmp_path / "typed_use.py"
    src.write_text(
        "from pydantic import BaseModel\n"
        "from jupyter_agent import chat, plan, toolloop\n\n"
        "class Ticket(BaseModel):\n"
        "    label: str\n\n"
        "for run in (chat('x', output=Ticket), toolloop('x', output=Ticket),\n"
        "            plan('x', output=Ticket)):\n"
        "    if run.output is not None:\n"
        "        ok: str = run.output.label\n"
        "        bad = run.output.lable\n"
        "untyped = chat('x').output\n", encoding="utf-8")
    result = _mypy("--strict", str(src))
    errors = [line for line in result.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 1 and '"Ticket" has no attribute "lable"' in errors[0], result.stdout


def test_a_tool_keeps_its_function_signature_for_mypy(tmp_path: Path) -> None:
    """``@tool`` (bare or with options) gives ``Tool[P, R]``: calling the tool from Python is
    checked like calling the function (wrong argument types, a wrong use of the result), and a
    list of different tools is ``list[AnyTool]``. Before, ``Tool.__call__`` took and returned
    ``Any``, so none of the three errors below was found."""
    src = tmp_path / "tool_use.py"
    src.write_text(
        "from jupyter_agent import tool\n"
        "from jupyter_agent.tools.registry import AnyTool, ToolResult\n\n"
        "@tool\n"
        "def add(a: int, b: int) -> int:\n"
        "    '''Add.'''\n"
        "    return a + b\n\n"
        "@tool(name='shout', timeout=5)\n"
        "def upper(text: str) -> str:\n"
        "    '''Upper.'''\n"
        "    return text.upper()\n\n"
        "n: int = add(1, 2)\n"
        "s: str = upper('x')\n"
        "tools: list[AnyTool] = [add, upper]\n"
        "r: ToolResult = tools[0].invoke('{}')\n"
        "add('1', 2)\n"                # error 1: wrong argument type
        "upper(text=3)\n"              # error 2: wrong keyword argument type
        "t: str = add(1, 2)\n",        # error 3: the result is an int
        encoding="utf-8")
    result = _mypy("--strict", str(src))
    errors = [line for line in result.stdout.splitlines() if ": error:" in line]
    lines = sorted(int(line.split(":")[1]) for line in errors)
    assert lines == [18, 19, 20], result.stdout
    assert 'Argument 1 to "__call__" of "Tool" has incompatible type "str"' in errors[0], errors


def test_an_agents_options_are_checked_by_mypy(tmp_path: Path) -> None:
    """``Agent(...)``'s keyword options are a TypedDict: a misspelt option or a wrong type is a
    mypy error (pydantic would silently ignore the unknown name at run time). Before, they
    were ``**extra: Any`` and neither was found."""
    src = tmp_path / "agent_use.py"
    src.write_text(
        "from jupyter_agent.runtime.agents import Agent\n\n"
        "Agent('a', read_only=True, skills='skills/', notebook_variables=['df'])\n"
        "Agent('b', read_onyl=True)\n"       # error 1: unknown option
        "Agent('c', notebook='yes')\n",      # error 2: wrong type
        encoding="utf-8")
    result = _mypy("--strict", str(src))
    errors = [line for line in result.stdout.splitlines() if ": error:" in line]
    assert sorted(int(line.split(":")[1]) for line in errors) == [4, 5], result.stdout


def test_the_public_agent_is_typed_as_it_is_called(tmp_path: Path) -> None:
    """``from jupyter_agent import Agent`` is the profile with ``as_tool``, called as documented
    (name first, positionally). Before, mypy saw it as ``Any`` (the package's lazy export was
    not named for the type checker), and the subclass as a keyword-only model: a documented
    ``Agent('b', instructions='x')`` was an error and a wrong option was none."""
    src = tmp_path / "public_agent.py"
    src.write_text(
        "from jupyter_agent import Agent\n\n"
        "a = Agent('b', 'Review code.', ['bash'], read_only=True)\n"
        "tool = a.as_tool(max_rounds=3)\n"
        "Agent('c', instructions=3)\n"      # error 1: wrong type
        "Agent('d', read_onyl=True)\n",     # error 2: unknown option
        encoding="utf-8")
    result = _mypy("--strict", str(src))
    errors = [line for line in result.stdout.splitlines() if ": error:" in line]
    assert sorted(int(line.split(":")[1]) for line in errors) == [5, 6], result.stdout


def test_entry_points_say_what_they_take_and_give(tmp_path: Path) -> None:
    """``**options`` of ``chat/toolloop/plan`` are the ``TurnArgs`` TypedDict: a misspelt or
    mistyped option is a mypy error. An untyped run is a ``Run[None]`` (its answer is
    ``run.answer``), a JSON schema dict gives a ``Run[JSONObject]``, and ``tools`` takes names,
    functions and Tool objects. Each ``# E`` line must give exactly one error, no other line any."""
    src = tmp_path / "options_use.py"
    src.write_text(
        "from jupyter_agent import chat, plan, toolloop\n"
        "from jupyter_agent.base.jsontypes import JSONObject\n\n"
        "def rows() -> list[str]:\n"
        "    return []\n\n"
        "ok = chat('x', model='m', temperature=0.5, history=0, store=None, approve=['bash'],\n"
        "          context='df', knowledge=['a fact'], on_end=lambda run: None)\n"
        "none: None = ok.output\n"
        "typed = toolloop('x', tools=['bash', rows], output={'type': 'object'}).output\n"
        "if typed is not None:\n"
        "    obj: JSONObject = typed\n"
        "p = plan('x', tools=('bash',), auto_answer='first', max_rounds=3)\n"
        "chat('x', temprature=0.5)  # E\n"
        "toolloop('x', max_tokens='many')  # E\n"
        "plan('x', store='elsewhere')  # E\n"
        "ok.output.label  # E\n"
        "toolloop('x', tools=[42])  # E\n", encoding="utf-8")
    result = _mypy("--strict", str(src))
    errors = [line for line in result.stdout.splitlines() if ": error:" in line]
    expected = [i for i, line in enumerate(src.read_text().splitlines(), 1) if "# E" in line]
    lines = sorted({int(e.split(":")[1]) for e in errors})
    assert lines == expected, result.stdout


def test_an_extraction_is_typed_by_its_schema(tmp_path: Path) -> None:
    """``extract(text, Model)`` is an ``ExtractResult[Model]``: ``unwrap()`` and ``value`` are
    the model's instance for mypy; a JSON schema dict gives a ``JSONObject``."""
    src = tmp_path / "extract_use.py"
    src.write_text(
        "from pydantic import BaseModel\n"
        "from jupyter_agent.agents.helpers import extract\n"
        "from jupyter_agent.base.jsontypes import JSONObject\n\n"
        "class Invoice(BaseModel):\n"
        "    total: float\n\n"
        "inv = extract('x', Invoice, history=[('user', 'hi')])\n"
        "total: float = inv.unwrap().total\n"
        "fields: JSONObject = extract('x', {'total': 'the sum'}).unwrap()\n"
        "inv.unwrap().totl  # E\n"
        "extract('x', Invoice, history=3)  # E\n", encoding="utf-8")
    result = _mypy("--strict", str(src))
    errors = [line for line in result.stdout.splitlines() if ": error:" in line]
    expected = [i for i, line in enumerate(src.read_text().splitlines(), 1) if "# E" in line]
    assert sorted({int(e.split(":")[1]) for e in errors}) == expected, result.stdout
