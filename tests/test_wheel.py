"""The wheel: it ships the prebuilt JupyterLab extension (users need no Node) and the widget
assets, and installed with no extras into a new venv it runs every built-in tool."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import zipfile
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls

ROOT = Path(__file__).resolve().parents[1]
EXT = "jupyter_agent-{v}.data/data/share/jupyter/labextensions/jupyter-agent/"

pytestmark = pytest.mark.skipif(not (ROOT / "jupyter_agent/labextension/static").is_dir(),
                                reason="the labextension is not built (make install builds it)")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One wheel of this checkout, built once for the module's tests."""
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-build-isolation",
                    "--no-deps", "-w", str(out), str(ROOT)], check=True)
    (built,) = out.glob("jupyter_agent-*.whl")
    return built


def test_the_wheel_carries_the_prebuilt_labextension(wheel: Path) -> None:
    from jupyter_agent import __version__

    names = zipfile.ZipFile(wheel).namelist()
    ext = EXT.format(v=__version__)
    assert ext + "package.json" in names and ext + "install.json" in names
    assert any(n.startswith(ext + "static/remoteEntry.") for n in names)
    for asset in ("render.js", "widget.js", "markdown.js", "run.css"):
        assert f"jupyter_agent/ui/static/{asset}" in names
    assert not any(n.startswith("tests/") for n in names)


def test_the_wheel_carries_the_cards_bundle_and_no_joiner(wheel: Path) -> None:
    from jupyter_agent.ui.shared import BUNDLE

    with zipfile.ZipFile(wheel) as whl:
        names = whl.namelist()
        assert whl.read("jupyter_agent/ui/static/bundle/cards.js") == BUNDLE.read_bytes()
    assert "jupyter_agent/ui/_esm.py" not in names


@pytest.mark.browser
@pytest.mark.timeout(600)
def test_a_kernel_running_the_installed_wheel_draws_a_live_card(wheel: Path, tmp_path: Path
                                                                ) -> None:
    """The wheel's files alone (``pip install --target``, no checkout on the path) give a
    kernel whose live card JupyterLab draws, from the bundle the wheel carries (without it the
    card would be the static one: no ``.ja-widget``)."""
    from playwright.sync_api import expect

    from tests.browser.lab_harness import BUILT_EXTENSION, lab_notebook
    from tests.browser.render_harness import chromium_path
    from tests.fakes.openai_server import call, text, tool_calls

    if chromium_path() is None or not BUILT_EXTENSION.exists():
        pytest.skip("needs the system Chromium and the built extension (make test)")
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
                    str(target), str(wheel)], check=True, timeout=300)
    setup = textwrap.dedent(f"""\
        %load_ext jupyter_agent
        import time
        import jupyter_agent.ui.shared as shared
        from jupyter_agent import tool

        @tool
        def nap(seconds: int) -> str:
            \"\"\"Sleep a while.\"\"\"
            time.sleep(seconds)
            return "rested"

        print(shared.BUNDLE.is_file(), shared.BUNDLE.is_relative_to({str(target)!r}))
        """)
    cells = [setup, "%%toolloop --tools nap\nNap."]
    with lab_notebook(tmp_path / "lab", "wheel.ipynb", cells, "sk-test-wheel-0123456789",
                      extra_env={"PYTHONPATH": str(target)}) as nb:
        expect(nb.ui.cell(0).locator(".jp-OutputArea-output")).to_have_text("True True")
        nb.model.enqueue(tool_calls([call("nap", {"seconds": 6}, id="c1")]), text("Rested."))
        nb.ui.start(1)
        live = nb.ui.cell(1).locator(".ja-widget .ja-run")
        expect(live.locator(".ja-tool-name", has_text="nap")).to_be_visible(timeout=30_000)
        nb.ui.wait_ran(1)
        expect(nb.ui.cell(1)).to_contain_text("Rested.")


# ---------------------------------------------------------------------- a plain install
PAGE = b"<html><head><title>Install check</title></head><body><h1>Served on loopback</h1>" \
       b"<p>The plain install fetched this page.</p></body></html>"
NOTE = "alpha\nbeta gamma\n"

# Run inside the new venv: the public entry point, every built-in tool, no approval cards.
SCRIPT = textwrap.dedent("""\
    import json, sys
    import jupyter_agent
    from jupyter_agent import toolloop
    from jupyter_agent.tools.builtin import BUILTIN_TOOL_NAMES

    run = toolloop("Use every built-in tool once.", tools=list(BUILTIN_TOOL_NAMES),
                   auto_approve=True)
    print(json.dumps({"status": run.status, "answer": run.answer, "error": run.error,
                      "package": jupyter_agent.__file__, "prefix": sys.prefix}))
    """)


@pytest.fixture
def page_url(tmp_path: Path) -> Iterator[str]:
    """A page served by ``http.server`` on 127.0.0.1 (what ``web_fetch`` fetches)."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "page.html").write_bytes(PAGE)

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), partial(Quiet, directory=str(site)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/page.html"
    httpd.shutdown()
    httpd.server_close()


def _venv_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    # Not this checkout, not the test venv: only what the wheel and its dependencies bring.
    env.update(PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1", PYTHONNOUSERSITE="1")
    return env


@pytest.mark.install
@pytest.mark.timeout(1800)
def test_a_plain_install_runs_every_builtin_tool(wheel: Path, tmp_path: Path,
                                                 server: ScriptedOpenAI, page_url: str) -> None:
    venv = tmp_path / "venv"
    env = _venv_env(tmp_path)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, env=env)
    python = str(venv / "bin" / "python")
    # From the package index, with no extras: exactly `pip install jupyter-agent`.
    subprocess.run([python, "-m", "pip", "install", "-q", str(wheel)], check=True, env=env,
                   timeout=1500)
    installed = subprocess.run(
        [python, "-c", "import importlib.metadata as m, json; "
                       "print(json.dumps(sorted(d.metadata['Name'].lower() "
                       "for d in m.distributions())))"],
        check=True, env=env, capture_output=True, text=True).stdout
    names = set(json.loads(installed))
    assert {"jupyter-agent", "openai", "httpx"} <= names
    # No test or optional package slipped in to hide a missing declaration.
    assert not names & {"mcp", "pytest", "nbclient", "llama-cpp-python", "jupyterlab"}

    work = tmp_path / "workspace"
    work.mkdir()
    ids = {"write_file": "c_write", "read_file": "c_read", "search_files": "c_search",
           "glob_files": "c_glob", "bash": "c_bash", "web_fetch": "c_web"}
    server.enqueue(tool_calls([
        call("write_file", {"path": "notes/hello.txt", "content": NOTE}, id=ids["write_file"]),
        call("read_file", {"path": "notes/hello.txt"}, id=ids["read_file"]),
        call("search_files", {"pattern": "gam+a", "path": "."}, id=ids["search_files"]),
        call("glob_files", {"pattern": "**/*.txt"}, id=ids["glob_files"]),
        call("bash", {"command": "wc -l < notes/hello.txt; echo sum=$((6*7))"}, id=ids["bash"]),
        call("web_fetch", {"url": page_url}, id=ids["web_fetch"]),
    ]), text("All six tools ran."))
    proc = subprocess.run([python, "-c", SCRIPT], env=env, cwd=work, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["status"] == "done", result
    assert result["answer"] == "All six tools ran."
    assert Path(result["package"]).is_relative_to(venv), result  # the wheel, not this checkout

    assert len(server.requests) == 2
    messages = server.requests[1]["messages"]
    (assistant,) = [m for m in messages if m["role"] == "assistant"]
    by_id = {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}
    results = {c["function"]["name"]: by_id[c["id"]] for c in assistant["tool_calls"]}
    assert sorted(results) == sorted(ids)
    for name, output in results.items():
        assert not output.startswith("Tool error"), (name, output)
    assert (work / "notes/hello.txt").read_text("utf-8") == NOTE  # write_file wrote it
    assert "beta gamma" in results["read_file"] and "alpha" in results["read_file"]
    assert "notes/hello.txt:2: beta gamma" in results["search_files"]
    assert "notes/hello.txt" in results["glob_files"]
    assert results["bash"].splitlines()[:2] == ["2", "sum=42"]  # it ran in the workspace
    assert "[exit code 0]" in results["bash"]
    assert "Status: 200" in results["web_fetch"] and "Served on loopback" in results["web_fetch"]
    assert "The plain install fetched this page." in results["web_fetch"]

    # What needs an extra says which one, in one line, instead of a ModuleNotFoundError.
    for argv, extra in ((["-m", "jupyter_agent.edge.demo"], "notebooks"),
                        (["-m", "jupyter_agent.replay.rerecord", "x.ipynb"], "notebooks"),
                        (["-c", "from jupyter_agent.tools.mcp import connect_mcp\n"
                                "from jupyter_agent.base.errors import ConfigError\n"
                                "try:\n"
                                "    connect_mcp('time', command=['true'])\n"
                                "except ConfigError as exc:\n"
                                "    raise SystemExit(str(exc))\n"], "mcp")):
        proc = subprocess.run([python, *argv], env=env, cwd=work, capture_output=True,
                              text=True, timeout=120)
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 1 and len(lines) == 1, (argv, proc.stderr)
        assert f"pip install 'jupyter-agent[{extra}]'" in lines[0]


def test_the_wheel_says_its_types_are_for_the_users_mypy(wheel: Path) -> None:
    """``py.typed`` (PEP 561): without it a user's mypy ignores the package's annotations, and
    ``Run[Output]``, ``Tool[P, R]`` and the entry points' options check nothing outside this
    repository."""
    assert "jupyter_agent/py.typed" in zipfile.ZipFile(wheel).namelist()
