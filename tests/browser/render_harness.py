"""A browser harness for the run renderer: a sample run, a page that draws it, a server, Chromium.

Run it directly to write screenshots to ``test-artifacts/``::

    python -m tests.browser.render_harness

The page loads ``render.js`` and ``run.css`` from ``jupyter_agent/ui/static`` exactly as shipped
(native ES modules over loopback HTTP), draws the sample view and exposes, on ``window``:
``actions`` (every message the renderer sent), ``renderMs`` (time of the first draw, including
style and layout), ``view`` (the sample), ``redraw(view)`` (``renderRunInto`` again) and
``ready``. The anywidget module itself is the built bundle the kernel ships
(``jupyter_agent.ui.shared.BUNDLE``, its ``run`` card).
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from jupyter_agent.base.events import (
    AskPending,
    BaseEvent,
    ContextCompressed,
    PlanUpdated,
    ReasoningDelta,
    RoundStarted,
    RunStarted,
    StopGateFeedback,
    TextDelta,
    ToolCalled,
    ToolReturned,
    UsageRecorded,
    Warning_,
)
from jupyter_agent.view.reduce import reduce_events

STATIC_DIR = Path(__file__).resolve().parents[2] / "jupyter_agent" / "ui" / "static"
"""The shipped front-end files."""

ARTIFACTS_DIR = Path(__file__).resolve().parents[2] / "test-artifacts"
"""Where screenshots go (git-ignored)."""

INJECTION = "<img src=x onerror=alert(1)>"
"""Model text that would run script if the renderer ever wrote model output as HTML."""

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

# Theme variables of JupyterLab's dark theme (a subset), to check the CSS reads on dark.
DARK_THEME_CSS = """
body { background: #111; }
:root {
  --jp-ui-font-color1: rgba(255,255,255,0.87); --jp-ui-font-color2: rgba(255,255,255,0.54);
  --jp-ui-font-color3: rgba(255,255,255,0.38); --jp-layout-color1: #111;
  --jp-layout-color2: #212121; --jp-border-color1: #616161; --jp-border-color2: #424242;
  --jp-brand-color1: #64b5f6; --jp-success-color1: #81c784; --jp-error-color1: #e57373;
  --jp-warn-color1: #ffb74d; --jp-cell-editor-background: #212121;
}
"""


def chromium_path() -> str | None:
    """The system Chromium (never a downloaded one): ``JUPYTER_AGENT_CHROMIUM`` or PATH."""
    return os.environ.get("JUPYTER_AGENT_CHROMIUM") or shutil.which("chromium")


def _plan(n_steps: int) -> dict[str, Any]:
    statuses = ["done"] * 20 + ["skipped", "blocked", "in_progress"] + ["pending"] * n_steps
    steps = []
    for i in range(n_steps):
        status = statuses[i]
        step: dict[str, Any] = {
            "id": str(i + 1),
            "title": f"Step {i + 1}: collect and check part {i + 1} of the data",
            "description": f"Read source {i + 1}, normalise units, and compare with the baseline.",
            "acceptanceCriteria": [f"part {i + 1} loaded", "no missing values"],
            "status": status,
            "evidence": [],
        }
        if status == "done":
            step["outputSummary"] = f"Loaded {1000 + i} rows; 0 missing."
            step["evidence"] = [
                {"kind": "tool_result", "ref": f"call_{i}", "summary": f"{1000 + i} rows"}
            ]
        if status == "blocked":
            step["blocker"] = "The source needs credentials the agent does not have."
        if i == 24:
            step["needsReplan"] = True
        steps.append(step)
    return {
        "planId": "a1b2c3",
        "task": "Build the quarterly data report",
        "description": "Load, clean, compare and summarise fifty data sources.",
        "steps": steps,
    }


def sample_events(n_tools: int = 200, n_steps: int = 50) -> list[BaseEvent]:
    """The events of a plan run with ``n_tools`` tool calls, a withdrawn draft and a pending ask."""
    ev: list[BaseEvent] = [
        RunStarted(run_id="r1", agent="plan", model="gpt-test", prompt="Build the report"),
        RoundStarted(round=1),
        ReasoningDelta(round=1, text="I should make a plan first, then load each source."),
        ToolCalled(round=1, call_id="plan_1", name="update_plan", arguments='{"updates": []}'),
        ToolReturned(round=1, call_id="plan_1", name="update_plan", internal=True,
                     output="Applied 1 plan update.\nPlan progress: 20 done, 1 in progress."),
        PlanUpdated(plan=_plan(n_steps)),
    ]
    long_output = "\n".join(f"row {k}: " + "x" * 40 for k in range(40))
    for i in range(n_tools):
        rnd = 2 + i // 5
        if i % 5 == 0:
            ev.append(RoundStarted(round=rnd))
        args = json.dumps({"path": f"data/source_{i}.csv", "limit": 100})
        ev.append(ToolCalled(round=rnd, call_id=f"call_{i}", name="read_file", arguments=args))
        if i == n_tools - 1:
            continue  # the last call is still running
        error = "Tool error: FileNotFoundError: no such file" if i == 7 else None
        output = long_output if i % 10 == 3 else f"{i} rows read"
        ev.append(ToolReturned(round=rnd, call_id=f"call_{i}", name="read_file", output=output,
                               error=error, seconds=0.01 * i))
    last = 2 + n_tools // 5
    ev += [
        RoundStarted(round=last),
        TextDelta(round=last, text="All done, the report is ready. " + INJECTION),
        StopGateFeedback(round=last, reason="plan has open steps",
                         feedback="Steps 24-50 are still pending."),
        Warning_(message="Context is at 82% of the window."),
        ContextCompressed(round=last, method="checkpoint", tokens_before=101000,
                          tokens_after=23000),
        RoundStarted(round=last + 1),
        TextDelta(
            round=last + 1,
            text=(
                "## Progress\n\nThe **first part** is done; see `report.md` and "
                "[the docs](https://example.org/docs). A [bad link](javascript:alert(1)).\n\n"
                "- loaded 20 sources\n- one source is *blocked*\n\n"
                "```python\nprint('<b>not bold</b>')\n```\n\n" + INJECTION
            ),
        ),
        UsageRecorded(round=last + 1, model="gpt-test", input_tokens=123456,
                      output_tokens=7890, cost=0.4321, estimated=True),
        AskPending(call_id="ask_1", question="Which currency should the report use?",
                   options=["Euro", "US dollar", "Both, side by side"],
                   descriptions=["Convert at month-end rates", "", "Two columns per figure"]),
    ]
    return ev


def sample_view(n_tools: int = 200, n_steps: int = 50) -> dict[str, Any]:
    """The view state of :func:`sample_events`, reduced by the production reducer."""
    return reduce_events(sample_events(n_tools, n_steps))


PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>run</title><link rel="icon" href="data:,">
<link rel="stylesheet" href="run.css"><style>{extra_css}</style></head>
<body style="margin:16px;max-width:900px">
<div id="run"></div>
<script type="module">
import {{ renderRun, renderRunInto }} from "./render.js";
const view = await (await fetch("view.json")).json();
window.view = view;
window.actions = [];
const opts = {live} ? {{ onAction: (msg) => window.actions.push(msg) }} : undefined;
const el = document.getElementById("run");
const t0 = performance.now();
renderRunInto(el, view, opts);
document.body.getBoundingClientRect();  // force style and layout inside the timing
window.renderMs = performance.now() - t0;
window.redraw = (v) => renderRunInto(el, v, opts);
window.renderRun = (v) => renderRun(el, v, opts);
window.ready = true;
</script></body></html>
"""


def write_page(
    directory: Path, view: dict[str, Any], *, live: bool = True, dark: bool = False
) -> Path:
    """Write ``index.html``, ``view.json`` and the static files into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    for f in STATIC_DIR.iterdir():
        if f.suffix in (".js", ".css"):
            shutil.copy(f, directory / f.name)
    (directory / "view.json").write_text(json.dumps(view), encoding="utf-8")
    page = PAGE.format(extra_css=DARK_THEME_CSS if dark else "", live="true" if live else "false")
    (directory / "index.html").write_text(page, encoding="utf-8")
    return directory / "index.html"


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass


@contextmanager
def serve(directory: Path) -> Iterator[str]:
    """Serve ``directory`` on loopback in a thread; yield its base URL."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


CONSOLE_ERRORS: list[str] = []
"""Console errors and uncaught exceptions of every page a test opened (``launch_browser``);
``tests/browser/conftest.py`` fails a test that leaves any."""


def watch_console(page: Any) -> Any:
    """Record ``page``'s console errors and uncaught exceptions in :data:`CONSOLE_ERRORS`."""
    def on_console(msg: Any) -> None:
        if msg.type == "error":
            where = msg.location or {}
            CONSOLE_ERRORS.append(f"console: {msg.text} ({where.get('url', '')})")

    def on_error(exc: Any) -> None:
        frames = [ln.strip() for ln in (getattr(exc, "stack", "") or "").splitlines()[1:]]
        at = frames[0] if frames else ""
        if not _upstream(str(getattr(exc, "message", exc)), at):
            CONSOLE_ERRORS.append(f"page error: {exc} {at}")

    page.on("console", on_console)
    page.on("pageerror", on_error)
    return page


# Notebook 7.6's own settings code throws this once per page load (the keyboard-shortcuts
# plugin reads the schema of a plugin the registry has just dropped); it reproduces with every
# third-party extension disabled, ours included. Only that message, thrown from Notebook 7's
# core bundle, is let through.
_UPSTREAM = (("Cannot read properties of undefined (reading 'schema')",
              "/static/notebook/notebook_core."),)


def _upstream(message: str, at: str) -> bool:
    return any(message == m and where in at for m, where in _UPSTREAM)


def launch_browser(playwright: Any) -> Any:
    """Launch the system Chromium headless (never a downloaded browser). Every page it opens
    (``new_page``, or a page of ``new_context``) reports its console errors
    (:func:`watch_console`)."""
    browser = playwright.chromium.launch(
        executable_path=chromium_path(), headless=True, args=CHROMIUM_ARGS
    )
    new_page, new_context = browser.new_page, browser.new_context

    def watched_page(*args: Any, **kwargs: Any) -> Any:
        return watch_console(new_page(*args, **kwargs))

    def watched_context(*args: Any, **kwargs: Any) -> Any:
        context = new_context(*args, **kwargs)
        context.on("page", watch_console)
        return context

    browser.new_page, browser.new_context = watched_page, watched_context
    return browser


def main() -> None:
    """Write screenshots of the sample run (light, dark, static) to ``test-artifacts/``."""
    import tempfile

    from playwright.sync_api import sync_playwright

    ARTIFACTS_DIR.mkdir(exist_ok=True)
    view = sample_view()
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        browser = launch_browser(p)
        for label, live, dark in (("light", True, False), ("dark", True, True),
                                  ("static", False, False)):
            d = Path(tmp) / label
            write_page(d, view, live=live, dark=dark)
            with serve(d) as url:
                page = browser.new_page(viewport={"width": 960, "height": 1100})
                page.goto(url + "index.html")
                page.wait_for_function("window.ready === true")
                print(label, "render ms:", page.evaluate("window.renderMs"))
                page.screenshot(path=str(ARTIFACTS_DIR / f"run-{label}-top.png"))
                page.locator(".ja-items").evaluate("e => e.lastElementChild.scrollIntoView()")
                page.screenshot(path=str(ARTIFACTS_DIR / f"run-{label}-bottom.png"))
                page.close()
        browser.close()


if __name__ == "__main__":
    main()
