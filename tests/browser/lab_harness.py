"""A real JupyterLab for browser tests: started on loopback with a token, driven by Playwright.

``start_lab`` runs ``jupyter lab`` from this interpreter's environment (so the kernel and the
labextensions are the ones ``make install`` put there) with private config, data, runtime,
settings and workspace folders, and waits until the REST API answers. When this checkout has
built its extension (``jupyter_agent/labextension``), the server loads that build ahead of
the environment's, so a test always drives the front end of the code it tests (a git worktree
beside the one ``jupyter labextension develop`` registered included). ``LabPage`` wraps a
Playwright page with the few notebook gestures the tests need (open, run a cell, save, shut the
kernel down), using plain selectors (Galata's helpers are JavaScript-only).
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
"""The repository root (put on the kernel's ``PYTHONPATH``)."""

EXTENSION_DIR = ROOT / "jupyter_agent" / "labextension"
"""Where ``npm run build:prod`` (in ``labextension/``) puts this checkout's extension."""

BUILT_EXTENSION = EXTENSION_DIR / "static" / "style.js"
"""Present once the JupyterLab extension was built (``make install``)."""

TOKEN = "ja-browser-test-token"
"""The server token (a test value)."""

_ANSI = re.compile(r"\x1b\[[0-9;]*m")

# JupyterLab's notification settings: no news prompt, no update check (no traffic, no toasts
# over the screenshots).
_SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings":
        {"fetchNews": "false", "checkForUpdates": False},
}


_WATCH_PROMPT = """el => {
    delete el.dataset.jaStarted;
    const obs = new MutationObserver(() => {
        if (el.textContent.includes("*")) { el.dataset.jaStarted = "1"; obs.disconnect(); }
    });
    obs.observe(el, {childList: true, characterData: true, subtree: true});
}"""
"""Marks a cell's prompt (``data-ja-started``) once it shows "[*]:" (see ``LabPage.watch``)."""


def strip_ansi(text: str) -> str:
    """``text`` without terminal colour codes."""
    return _ANSI.sub("", text)


def free_port() -> int:
    """A free TCP port on loopback."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def lab_environment(base: Path, extra: dict[str, str]) -> dict[str, str]:
    """The environment of the server (and so of its kernels): private Jupyter folders.

    ``JUPYTER_DATA_DIR`` only replaces the *user* data folder: the environment's
    ``share/jupyter`` (kernelspec, labextensions) stays on the search path.
    """
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENAI_", "JUPYTER_AGENT_", "JUPYTER", "IPYTHON"))}
    for name in ("config", "data", "runtime", "settings", "workspaces", "ipython"):
        (base / name).mkdir(parents=True, exist_ok=True)
    for rel, value in _SETTINGS.items():
        path = base / "settings" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value), encoding="utf-8")
    env.update({
        "JUPYTER_CONFIG_DIR": str(base / "config"),
        "JUPYTER_DATA_DIR": str(base / "data"),
        "JUPYTER_RUNTIME_DIR": str(base / "runtime"),
        "JUPYTERLAB_SETTINGS_DIR": str(base / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(base / "workspaces"),
        "IPYTHONDIR": str(base / "ipython"),
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]),
        "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p),
    })
    env.update(extra)
    return env


@dataclass
class Lab:
    """A running JupyterLab: its base URL, notebook folder, environment and log file."""

    url: str
    root: Path
    env: dict[str, str]
    log: Path

    def api(self, path: str, method: str = "GET") -> Any:
        """Call the REST API with the token; return the decoded JSON (None when empty)."""
        req = urllib.request.Request(f"{self.url}{path}", method=method,
                                     headers={"Authorization": f"token {TOKEN}"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            body = resp.read()
        return json.loads(body) if body else None

    def text(self, path: str) -> str:
        """GET ``path`` (token in the URL) and return the body as text."""
        with urllib.request.urlopen(f"{self.url}{path}", timeout=10) as resp:
            return resp.read().decode("utf-8", errors="replace")

    def log_tail(self, n: int = 40) -> str:
        """The last lines of the server's log, for failure messages."""
        lines = self.log.read_text(encoding="utf-8", errors="replace").splitlines()
        return "\n".join(lines[-n:])


def built_extension_load() -> str | None:
    """The remote entry (``static/remoteEntry.<hash>.js``) of this checkout's build, if any."""
    try:
        meta = json.loads((EXTENSION_DIR / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return meta.get("jupyterlab", {}).get("_build", {}).get("load")


def _local_extension_args(base: Path) -> list[str]:
    """Arguments that make the server load this checkout's build first (none if unbuilt).

    ``extra_labextensions_path`` is searched before the environment's folders, and the first
    extension of a name wins; the folder holds one link named as the package.
    """
    if built_extension_load() is None:
        return []
    folder = base / "labextensions"
    folder.mkdir(parents=True, exist_ok=True)
    link = folder / "jupyter-agent"
    if not link.exists():
        link.symlink_to(EXTENSION_DIR, target_is_directory=True)
    # Notebook 7's pages are served by its own app: it needs the same path, or they would
    # draw with the environment's build.
    return [f"--LabApp.extra_labextensions_path={folder}",
            f"--JupyterNotebookApp.extra_labextensions_path={folder}"]


@contextmanager
def start_lab(base: Path, extra_env: dict[str, str], timeout: float = 90.0) -> Iterator[Lab]:
    """Run ``jupyter lab`` on a free loopback port until the block ends."""
    root = base / "notebooks"
    root.mkdir(parents=True, exist_ok=True)
    env = lab_environment(base, extra_env)
    port = free_port()
    log = base / "jupyter-lab.log"
    cmd = [sys.executable, "-m", "jupyter", "lab", "--no-browser",
           "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
           f"--IdentityProvider.token={TOKEN}", f"--ServerApp.root_dir={root}",
           f"--LabApp.workspaces_dir={base / 'workspaces'}",
           f"--LabApp.user_settings_dir={base / 'settings'}",
           "--LabApp.news_url=None",
           "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
           "--LabApp.extension_manager=readonly",  # never asks a package index
           "--ServerApp.terminals_enabled=False", *_local_extension_args(base)]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")  # CI containers run as root
    with log.open("w", encoding="utf-8") as fh:
        # Its own process group: kernels are its children, and all of them end with the test.
        proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=fh, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    lab = Lab(url=f"http://127.0.0.1:{port}", root=root, env=env, log=log)
    try:
        _wait_ready(lab, proc, timeout)
        yield lab
    finally:
        _stop(proc)


def _wait_ready(lab: Lab, proc: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"jupyter lab exited with {proc.returncode}:\n{lab.log_tail()}")
        try:
            lab.api(f"/api/status?token={TOKEN}")
            return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.25)
    raise RuntimeError(f"jupyter lab did not answer in {timeout:.0f} s:\n{lab.log_tail()}")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM lets the server shut its kernels down; anything left in its group is killed."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the group we started: stray kernels, if any
    except (ProcessLookupError, PermissionError):
        pass


def labextension_list(env: dict[str, str]) -> str:
    """The output of ``jupyter labextension list`` (it writes to stderr), without colours."""
    done = subprocess.run([sys.executable, "-m", "jupyter", "labextension", "list"], env=env,
                          capture_output=True, text=True, timeout=60)
    return strip_ansi(done.stdout + done.stderr)


class LabPage:
    """A Playwright page showing one notebook of ``lab``, in JupyterLab (``shell="lab"``) or
    in Notebook 7 (``shell="notebook"``: the same server, the same extension, another UI)."""

    def __init__(self, page: Any, lab: Lab, shell: str = "lab") -> None:
        """Wrap ``page``; ``beforeunload`` prompts are accepted so reloads never stall."""
        self.page = page
        self.lab = lab
        self.shell = shell
        page.on("dialog", lambda d: d.accept())

    def open(self, name: str) -> None:
        """Open ``name`` and wait until its kernel is idle."""
        where = "notebooks" if self.shell == "notebook" else "lab/tree"
        self.page.goto(f"{self.lab.url}/{where}/{name}?token={TOKEN}")
        self.wait_ready()

    def reload(self) -> None:
        """Reload the page (the notebook reopens from disk, with a new kernel)."""
        self.page.reload()
        self.wait_ready()

    def wait_ready(self) -> None:
        """The notebook is drawn and its kernel is idle."""
        self.page.locator(".jp-Notebook .jp-Cell").first.wait_for()
        if self.shell == "notebook":
            self._wait_ready_notebook7()
            return
        # The status bar, not the toolbar's indicator: that one says "idle" for a moment while
        # the kernel is still initializing, and a cell run then is silently dropped.
        self.page.wait_for_function(
            """() => {
                const bar = document.querySelector("#jp-main-statusbar");
                return !!bar && /^(?!No Kernel).+ \\| Idle$/m.test(bar.innerText);
            }""", timeout=60_000)

    def _wait_ready_notebook7(self) -> None:
        # No status bar: the toolbar names the kernel once a session has one, and the server
        # (not only the page's indicator, idle for a moment while the kernel starts) must see
        # it idle too, or a cell run then is silently dropped.
        self.page.wait_for_function(
            """() => {
                const name = document.querySelector(".jp-KernelName, .jp-Toolbar-kernelName");
                const ind = document.querySelector(".jp-Notebook-ExecutionIndicator");
                return !!name && !/No Kernel/.test(name.textContent)
                    && !!ind && ind.getAttribute("data-status") === "idle";
            }""", timeout=60_000)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            sessions = self.lab.api("/api/sessions") or []
            if sessions and all((s.get("kernel") or {}).get("execution_state") == "idle"
                                for s in sessions):
                return
            time.sleep(0.2)
        raise AssertionError("the notebook's kernel never became idle")

    def cell(self, index: int) -> Any:
        """The locator of the notebook's cell ``index``."""
        return self.page.locator(".jp-Notebook .jp-Cell").nth(index)

    def start(self, index: int) -> None:
        """Run cell ``index`` with Ctrl+Enter and return at once (the cell may still run)."""
        self.watch(index)
        self.cell(index).locator(".jp-InputArea-editor").click()
        self.page.keyboard.press("Control+Enter")

    def watch(self, index: int) -> None:
        """Watch the prompt of cell ``index`` for its next run (before starting it).

        A prompt may already show a number before the run ends: a saved notebook keeps its
        execution counts, an earlier run left one, and a fresh kernel may count to the same
        number again. JupyterLab shows "[*]:" as soon as a run is queued; the observer marks
        the prompt when it sees that, so :meth:`wait_ran` waits for this run's own number.
        """
        self.cell(index).locator(".jp-InputArea-prompt").evaluate(_WATCH_PROMPT)

    def wait_ran(self, index: int, timeout: float = 60_000) -> None:
        """Wait until the run of cell ``index`` seen by :meth:`watch` has ended."""
        prompt = self.cell(index).locator(".jp-InputArea-prompt")
        self.page.wait_for_function(
            "el => el.dataset.jaStarted === '1' && /\\[\\d+\\]/.test(el.textContent)",
            arg=prompt.element_handle(), timeout=timeout)

    def run(self, index: int, timeout: float = 60_000) -> None:
        """Run cell ``index`` with Ctrl+Enter and wait until this execution ended.

        Ctrl+Enter runs the cell in place (Shift+Enter would add a cell after the last one).
        """
        self.start(index)
        self.wait_ran(index, timeout)

    def save(self) -> None:
        """Save with the keyboard shortcut, from command mode."""
        self.cell(0).locator(".jp-InputArea-prompt").click()
        self.page.keyboard.press("Escape")
        self.page.keyboard.press("Control+s")

    def shut_down_kernel(self) -> None:
        """Kernel ▸ Shut Down Kernel, from the menu bar."""
        self.page.locator(".lm-MenuBar-item", has_text="Kernel").click()
        self.page.locator(".lm-Menu-item", has_text="Shut Down Kernel").first.click()

    def shot(self, name: str, directory: Path, target: Any = None) -> None:
        """Screenshot of ``target`` (a locator; default: the page) to ``directory/name``."""
        directory.mkdir(parents=True, exist_ok=True)
        (target or self.page).screenshot(path=str(directory / name))


def check_lab(server: Lab) -> None:
    """Fail unless the page loads this checkout's build and kernels run this environment's
    Python (another installed build, or another interpreter, would test something else)."""
    load = built_extension_load()
    assert load and load in server.text(f"/lab?token={TOKEN}"), "not this checkout's build"
    assert load in server.text(f"/tree?token={TOKEN}"), "Notebook 7: not this checkout's build"
    argv0 = server.api("/api/kernelspecs")["kernelspecs"]["python3"]["spec"]["argv"][0]
    if argv0 not in ("python", "python3") and not argv0.startswith(sys.prefix):
        raise AssertionError(f"the python3 kernel runs {argv0}, not this environment's Python")


KERNELSPEC = {"kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)",
                             "language": "python"}}
"""The notebook metadata that names this environment's python3 kernel."""


def write_notebook(path: Path, cells: list[str]) -> None:
    """A notebook of code ``cells`` for the python3 kernel."""
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells],
                                  metadata=KERNELSPEC)
    nbformat.write(nb, path)


@dataclass
class LabNotebook:
    """A JupyterLab with one notebook open in Chromium, its first cell run."""

    ui: LabPage
    model: Any  # the ScriptedOpenAI the kernel's agents talk to
    server: Lab
    base: Path


@contextmanager
def lab_notebook(base: Path, name: str, cells: list[str], key: str, *, height: int = 1400,
                 permissions: list[str] | None = None, shell: str = "lab",
                 extra_env: dict[str, str] | None = None) -> Iterator[LabNotebook]:
    """JupyterLab + scripted model (``key`` is its API key) + Chromium, with notebook ``name``
    made of ``cells`` open (in JupyterLab, or in Notebook 7 with ``shell="notebook"``) and its
    first (setup) cell run. ``extra_env`` goes to the server and its kernels (a ``PYTHONPATH``
    of an installed wheel, say). The server's log is printed when the body fails."""
    from playwright.sync_api import sync_playwright

    from tests.browser.render_harness import launch_browser
    from tests.fakes.openai_server import ScriptedOpenAI

    with ScriptedOpenAI() as model, start_lab(base, {
        "OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": key,
        "JUPYTER_AGENT_HOME": str(base / "agent-home"), **(extra_env or {}),
    }) as server:
        check_lab(server)
        write_notebook(server.root / name, cells)
        with sync_playwright() as p:
            browser = launch_browser(p)
            page = browser.new_page(viewport={"width": 1280, "height": height},
                                    permissions=permissions or [])
            page.set_default_timeout(30_000)
            ui = LabPage(page, server, shell)
            try:
                ui.open(name)
                ui.run(0)
                yield LabNotebook(ui, model, server, base)
            except BaseException:
                print(server.log_tail())
                raise
            finally:
                browser.close()


@contextmanager
def lab_with_browser(base: Path) -> Iterator[tuple[Any, Lab]]:
    """JupyterLab over ``base`` (no model: the notebooks replay their cassettes) and Chromium,
    for a module that opens pages itself. The server's log is printed when the body fails."""
    from playwright.sync_api import sync_playwright

    from tests.browser.render_harness import launch_browser

    with start_lab(base, {"JUPYTER_AGENT_HOME": str(base / "agent-home")}) as server:
        check_lab(server)
        with sync_playwright() as p:
            browser = launch_browser(p)
            try:
                yield browser, server
            except BaseException:
                print(server.log_tail())
                raise
            finally:
                browser.close()


def insert_below(ui: LabPage, run: Any, proposed: str, index: int) -> None:
    """Click the finished run's *Insert below* and check the proposal became cell ``index``
    (the only new cell), and that the card has no button left (a second click inserts
    nothing)."""
    cells_before = ui.page.locator(".jp-Notebook .jp-Cell").count()
    run.locator(".ja-proposal .ja-insert").click()
    run.locator(".ja-proposal-done").wait_for()
    assert "Inserted below." in run.locator(".ja-proposal").inner_text()
    assert ui.page.locator(".jp-Notebook .jp-Cell").count() == cells_before + 1
    new = ui.cell(index)
    assert new.locator(".jp-InputArea-editor").inner_text().strip() == proposed
    assert run.locator(".ja-proposal button").count() == 0


def lab_marks(timeout: int) -> list[Any]:
    """The marks of a JupyterLab browser test module: ``browser``, a ``timeout`` in seconds,
    skipped without the system Chromium or this checkout's built extension."""
    import pytest

    from tests.browser.render_harness import chromium_path

    return [
        pytest.mark.browser,
        pytest.mark.timeout(timeout),
        pytest.mark.skipif(chromium_path() is None,
                           reason="no system Chromium (`make test` installs Debian's chromium)"),
        pytest.mark.skipif(not BUILT_EXTENSION.exists(),
                           reason="the JupyterLab extension is not built (run `make labextension`)"),
    ]
