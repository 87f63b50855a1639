"""``list_variables``, ``inspect_variable`` and ``variable_summaries`` on a real IPython shell."""

from __future__ import annotations

import json
import time
from typing import Any

import numpy as np
import pandas as pd
import pytest

from jupyter_agent.base.secrets import MASK
from jupyter_agent.tools.notebook import (
    NOTEBOOK_TOOL_NAMES,
    Namespace,
    VariableError,
    notebook_tools,
    variable_summaries,
)

pytestmark = pytest.mark.timeout(120)

SECRET = "sk-live-abcdefghijklmnop0123"


def tools_of(*args: Any, **kwargs: Any) -> dict[str, Any]:
    return {t.name: t for t in notebook_tools(*args, **kwargs)}


def listed(output: str) -> list[str]:
    return [line.split(" (")[0] for line in output.splitlines()[1:]]


def test_the_factory_and_the_tools_schemas(shell: Any) -> None:
    tools = notebook_tools(shell)
    assert [t.name for t in tools] == list(NOTEBOOK_TOOL_NAMES)
    by_name = {t.name: t for t in tools}
    run = by_name["run_python"]
    assert run.requires_approval and run.display == {"code": "python"} and not run.batchable
    assert not any(t.requires_approval for t in tools if t.name != "run_python")
    assert run.schema()["function"]["parameters"]["required"] == ["code"]
    assert "run_python" not in [t.name for t in notebook_tools(shell, run_python=False)]
    assert not notebook_tools(shell, requires_approval=False)[2].requires_approval
    from jupyter_agent.tools.registry import REGISTRY

    assert REGISTRY.names() == []  # nothing leaks into the global registry


def test_user_variables_only(shell: Any) -> None:
    shell.user_ns["pd_frame"] = pd.DataFrame({"a": [1, 2]})
    result = shell.run_cell("import os\n"
                   "from jupyter_agent import tool, Tool\n"
                   "@tool\n"
                   "def add(a: int, b: int) -> int:\n"
                   "    '''Add.'''\n"
                   "    return a + b\n"
                   "def helper(x):\n"
                   "    return x\n"
                   "df = pd_frame\n"
                   "count = 3\n"
                   "12 + 30\n",
                   store_history=True)
    assert result.success, result.error_in_exec
    assert shell.run_cell("_i, _, In, Out").success  # IPython's own names exist
    out = tools_of(shell)["list_variables"].invoke("{}").output
    names = listed(out)
    assert {"df", "count", "helper", "pd_frame"} <= set(names)
    for hidden in ("_", "_i1", "In", "Out", "exit", "quit", "get_ipython", "os", "tool", "Tool",
                   "add"):
        assert hidden not in names, hidden
    assert "df (pandas.DataFrame): DataFrame: 2 rows × 1 columns (a:int64)" in out
    assert "helper (function): def helper(x)" in out


def test_secret_named_variables_are_never_seen(shell: Any) -> None:
    shell.user_ns.update(OPENAI_API_KEY=SECRET, db_password="hunter2hunter2", token="t" * 20,
                         config={"api_key": SECRET, "model": "gpt"}, note=f"key is {SECRET}")
    tools = tools_of(shell)
    out = tools["list_variables"].invoke("{}").output
    assert "OPENAI_API_KEY" not in out and "db_password" not in out and "token" not in out
    assert SECRET not in out and "hunter2" not in out
    r = tools["inspect_variable"].invoke(json.dumps({"name": "OPENAI_API_KEY"}))
    assert r.error and "looks like a secret" in r.output and SECRET not in r.output
    for name in ("config", "note"):
        r = tools["inspect_variable"].invoke(json.dumps({"name": name}))
        assert r.error is None and SECRET not in r.output and MASK in r.output, r.output
    r = tools["inspect_variable"].invoke(json.dumps({"name": "config.api_key"}))
    assert r.error and SECRET not in r.output
    with pytest.raises(VariableError, match="looks like a secret"):
        variable_summaries(["OPENAI_API_KEY"], shell)
    # Even when the user allows it by name: secrets are never shared.
    allowed = tools_of(shell, variables=["OPENAI_API_KEY", "config"])
    assert "OPENAI_API_KEY" not in allowed["list_variables"].invoke("{}").output


def test_allow_list_limits_what_the_agent_sees(shell: Any) -> None:
    shell.user_ns.update(visible=[1, 2, 3], draft_notes="do not share")
    tools = tools_of(shell, variables=["visible"])
    out = tools["list_variables"].invoke("{}").output
    assert listed(out) == ["visible"]
    r = tools["inspect_variable"].invoke(json.dumps({"name": "draft_notes"}))
    assert r.error and "not among the variables shared" in r.output
    assert "do not share" not in r.output and "draft_notes" in r.output


def test_inspect_bad_names_and_attribute_paths(shell: Any) -> None:
    class Model:
        def __init__(self) -> None:
            self.config = {"layers": 4}
            self._secret_state = "internal"

    shell.user_ns.update(model=Model(), arr=np.arange(10))
    inspect = tools_of(shell)["inspect_variable"]
    r = inspect.invoke(json.dumps({"name": "model.config"}))
    assert r.error is None and "'layers': 4" in r.output
    for bad, fragment in [("model._secret_state", "not shared"),
                          ("__builtins__", "belongs to IPython"),
                          ("os.system('rm -rf /')", "Not a variable name"),
                          ("arr.nope", "has no attribute 'nope'"),
                          ("missing", "No variable 'missing'"),
                          ("", "Not a variable name")]:
        r = inspect.invoke(json.dumps({"name": bad}))
        assert r.error and fragment in r.output, (bad, r.output)
    r = inspect.invoke(json.dumps({"name": "missing"}))
    assert "Variables:" in r.output and "model" in r.output  # the model learns what exists
    r = inspect.invoke('{"nam": "x"}')  # the model's broken arguments: validation errors
    assert r.error and "name" in r.output


def test_listing_is_bounded_in_size_and_time(shell: Any) -> None:
    class Hang:
        def __repr__(self) -> str:
            time.sleep(600)
            return "never"

    shell.user_ns.update({f"v{i}": i for i in range(300)})
    shell.user_ns.update(h1=Hang(), h2=Hang(), h3=Hang())
    start = time.perf_counter()
    out = tools_of(shell)["list_variables"].invoke("{}").output
    assert time.perf_counter() - start < 30
    assert "more variables" in out and len(out.splitlines()) <= 202
    start = time.perf_counter()
    r = tools_of(shell)["inspect_variable"].invoke(json.dumps({"name": "h1"}))
    assert time.perf_counter() - start < 30 and "repr took over 1 s" in r.output


def test_variable_summaries_for_a_prompt(shell: Any) -> None:
    shell.user_ns.update(sales=pd.DataFrame({"units": [3, 5]}), label="Q1")
    text = variable_summaries(["sales", "label"], shell)
    assert text.startswith("Variable sales: pandas.DataFrame: 2 rows × 1 columns")
    assert "\n\nVariable label: str: 2 characters" in text
    with pytest.raises(VariableError, match="No variable 'nope'"):
        variable_summaries(["nope"], shell)
    assert variable_summaries(["x"], {"x": 1}) == "Variable x: int: 1"  # a plain namespace


def test_namespace_without_ipython_uses_a_plain_dict() -> None:
    ns = {"a": 1, "_private": 2, "np": np}
    space = Namespace(ns)
    assert space.names() == ["a"]
    assert space.hidden_reason("np") == "'np' is a module, not a variable."


def test_a_shell_that_is_not_one_is_refused_in_one_line() -> None:
    """``shell`` is an IPython shell, a namespace dict or None: anything else is a TypeError
    that says so when the tools are made, not an AttributeError at the first call."""
    with pytest.raises(TypeError, match=r"^Notebook tools need an IPython shell, a namespace "
                                        r"dict or None, not int\.$"):
        notebook_tools(42)
