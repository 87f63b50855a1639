"""The package surface: a cheap import, the public names, versions shared with the extension."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import jupyter_agent
from jupyter_agent.base.events import RUN_MIME_TYPE

ROOT = Path(__file__).resolve().parents[1]


def _python(code: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=120)


def test_import_is_cheap() -> None:
    proc = _python(
        "import sys, json\n"
        "import jupyter_agent\n"
        "heavy = ['openai', 'httpx', 'ipywidgets', 'anywidget', 'pandas']\n"
        "print(json.dumps({m: m in sys.modules for m in heavy}))\n")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {m: False for m in
                                       ("openai", "httpx", "ipywidgets", "anywidget", "pandas")}


def test_load_ext_is_cheap() -> None:
    proc = _python(
        "import sys, json\n"
        "from IPython.core.interactiveshell import InteractiveShell\n"
        "InteractiveShell.instance().run_line_magic('load_ext', 'jupyter_agent')\n"
        "heavy = ['openai', 'httpx', 'ipywidgets', 'anywidget', 'pydantic', 'opentelemetry']\n"
        "print(json.dumps([m for m in heavy if m in sys.modules]))\n")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == []


def test_tool_decorator_does_not_load_the_sdk() -> None:
    proc = _python(
        "import sys\n"
        "from jupyter_agent import tool\n"
        "@tool\n"
        "def add(a: int, b: int) -> int:\n"
        "    '''Add.'''\n"
        "    return a + b\n"
        "print('openai' in sys.modules, add.invoke('{\"a\": 1, \"b\": 2}').output)\n")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "3"]


@pytest.mark.parametrize("name", sorted(jupyter_agent.__all__))
def test_public_names_resolve(name: str) -> None:
    target = jupyter_agent._LAZY.get(name)
    if target is not None and importlib.util.find_spec(target[0]) is None:
        pytest.skip(f"{target[0]} is not written yet")
    assert getattr(jupyter_agent, name) is not None
    assert name in dir(jupyter_agent)


def test_unknown_attribute_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_name"):
        jupyter_agent.no_such_name  # noqa: B018


def test_the_extension_loads_into_ipython() -> None:
    from IPython import get_ipython
    from IPython.testing.globalipapp import start_ipython

    shell = start_ipython() or get_ipython()  # None when another test started it already
    assert shell is not None
    shell.run_line_magic("load_ext", "jupyter_agent")
    for magic in ("chat", "toolloop", "plan"):
        assert magic in shell.magics_manager.magics["cell"]
    assert "agent" in shell.magics_manager.magics["line"]


def test_mime_type_matches_the_labextension() -> None:
    src = ROOT / "labextension" / "src" / "index.ts"
    if not src.exists():
        pytest.skip("labextension/src/index.ts is not written yet")
    found = set(re.findall(r"application/vnd\.jupyter-agent[\w.+-]*", src.read_text("utf-8")))
    assert RUN_MIME_TYPE in found


def test_version_matches_the_labextension() -> None:
    package = ROOT / "labextension" / "package.json"
    if not package.exists():
        pytest.skip("labextension/package.json is not written yet")
    assert json.loads(package.read_text("utf-8"))["version"] == jupyter_agent.__version__
