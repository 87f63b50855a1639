"""The first run of a process loads only what a plain run needs (docs/architecture.md, "The
first run").

A fresh interpreter imports ``jupyter_agent``, finishes a one-round ``toolloop`` against the
scripted server and reports what ``sys.modules`` holds then: none of the modules a plain run
has no use for may be there (the saved-state schema, the resume side, the planning agent, the
compressors, the notebook and built-in tools, the cassette and answer-cache wrappers, and the
third-party libraries only they use). A run that suspends does load the schema, in a process
that never imported it before. Nothing here measures time (bench/bench_cold.py does).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls

pytestmark = pytest.mark.timeout(120)

ROOT = Path(__file__).resolve().parents[1]

OFF_THE_FIRST_RUN = (
    "jupyter_agent.agents.pending",  # the pydantic schema of a waiting run
    "jupyter_agent.agents.resume",
    "jupyter_agent.agents.toolloop_resume",
    "jupyter_agent.agents.approval_answers",
    "jupyter_agent.agents.plan",  # the planning agent's package and every module in it
    "jupyter_agent.agents.spawn",  # spawn_agent and the sub-agent task it hands over
    "jupyter_agent.agents.delegation",
    "jupyter_agent.tools.skills.folders",  # skill folders and read_skill (the names stay)
    "jupyter_agent.tools.builtin._safeopen",
    "jupyter_agent.loop.compress",  # the compressors, their types and window fitting
    "jupyter_agent.tools.notebook.toolset",
    "jupyter_agent.tools.notebook.run_python",
    "jupyter_agent.tools.notebook.variables",
    "jupyter_agent.tools.notebook.summaries",
    "jupyter_agent.tools.builtin._bound",
    "jupyter_agent.tools.builtin.shell",
    "jupyter_agent.tools.builtin.files",
    "jupyter_agent.tools.builtin.web",
    "jupyter_agent.sandbox.bwrap",
    "jupyter_agent.clients.cassettes",
    "jupyter_agent.clients.cassette",
    "jupyter_agent.clients.record",
    "jupyter_agent.clients.replay",
    "jupyter_agent.clients.cache",
    "jupyter_agent.view.bundle",
    "jupyter_agent.batch",
    "json5",  # lenient tool arguments
    "regex",  # the compressors' anchors
    "difflib",  # "did you mean" of an unknown model name
    "ctypes",  # interrupting a thread
    "html",  # its entity table (html.parser: web_fetch); secrets escape HTML by hand
    "dask",
    "jinja2",
    "IPython",
    "ipywidgets",
    "anywidget",
)

# Models a plain run has no use for: imported on its path, but their validators are built at
# their first use (``defer_build``), not at import.
UNBUILT_AFTER_THE_FIRST_RUN = (
    "jupyter_agent.llm.types:ToolCall",
    "jupyter_agent.llm.types:ChatRequest",
    "jupyter_agent.session.models:SessionRecord",
    "jupyter_agent.session.models:UsageTotals",
    "jupyter_agent.session.models:TranscriptEntry",
    "jupyter_agent.session._batches:BatchRecord",
    "jupyter_agent.session._batches:BatchItemRecord",
    "jupyter_agent.session.permissions:PermissionVerdict",
    "jupyter_agent.tools.registry:ToolResult",
    "jupyter_agent.runtime.agents:Agent",
)

_CHILD = """
import json, sys
from jupyter_agent import toolloop
run = toolloop({prompt!r}, model="gpt-4.1-mini"{extra})
built = [name for name in {models!r} if getattr(
    sys.modules[name.split(":")[0]], name.split(":")[1]).__pydantic_complete__]
from pydantic import BaseModel
def subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from subclasses(sub)
builtin_factories = sorted({{f"{{m.__name__}}.{{name}}" for m in subclasses(BaseModel)
    if m.__module__.startswith("jupyter_agent") and m.__pydantic_complete__
    for name, field in m.model_fields.items() if field.default_factory in (list, dict, set)}})
cjk = sys.modules["jupyter_agent.llm.tokens"]._piece.cache_info().currsize
print(json.dumps({{"status": run.status, "run_id": run.run_id, "modules": sorted(sys.modules),
                  "built": built, "builtin_factories": builtin_factories, "cjk": cjk}}))
"""


def _report(code: str) -> dict[str, Any]:
    """Run ``code`` in a fresh interpreter (the server fixture's environment, an empty data
    folder from the autouse isolation); the JSON its last line prints."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=os.getcwd(), env=env, timeout=100)
    assert proc.returncode == 0, proc.stderr
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def _first_run(prompt: str, extra: str = "") -> dict[str, object]:
    """Run one ``toolloop`` in a fresh interpreter; what it reports."""
    return _report(_CHILD.format(prompt=prompt, extra=extra,
                                 models=UNBUILT_AFTER_THE_FIRST_RUN))


def _loaded(modules: object, name: str) -> list[str]:
    assert isinstance(modules, list)
    return [m for m in modules if m == name or m.startswith(name + ".")]


def test_a_plain_first_run_loads_none_of_the_rest(server: ScriptedOpenAI) -> None:
    server.enqueue(text("Hello."))
    out = _first_run("Say hello.")
    assert out["status"] == "done"
    assert len(server.requests) == 1  # the run did reach the model
    modules = out["modules"]
    assert _loaded(modules, "jupyter_agent.agents.toolloop")  # it ran in this process
    assert _loaded(modules, "jupyter_agent.session.store")  # and opened the store
    loaded = {name: _loaded(modules, name) for name in OFF_THE_FIRST_RUN}
    assert {name: found for name, found in loaded.items() if found} == {}
    assert out["built"] == []  # no validator built for a model the run did not use
    # A builtin default factory (``default_factory=list``) makes pydantic read the builtin's
    # text signature with ``tokenize``, whose regex takes 3-5 ms to compile: the models a plain
    # run builds say ``= []`` instead (pydantic copies a mutable default for each instance).
    assert out["builtin_factories"] == []
    # Token estimates of ASCII text never compile the CJK class (about 2.5 ms).
    assert out["cjk"] == 0


def test_a_run_that_waits_loads_the_schema_when_it_suspends(server: ScriptedOpenAI,
                                                             workspace: Path) -> None:
    # bash asks for approval: the run suspends and saves its typed state, in a process that
    # had not needed the schema until then.
    server.enqueue(tool_calls([call("bash", {"command": "echo hi"}, id="b1")]))
    out = _first_run("Say hi with bash.", extra=', tools=["bash"]')
    assert out["status"] == "ask"
    assert _loaded(out["modules"], "jupyter_agent.agents.pending")
    from jupyter_agent.agents.pending import ToolloopPending, load_pending
    from jupyter_agent.session import Store

    record = Store().get_run(str(out["run_id"]))
    assert record is not None and record.pending
    saved = load_pending(record.pending)
    assert isinstance(saved, ToolloopPending)
    assert saved.call_id == "b1" and saved.card.tool == "bash"
    assert saved.options.max_rounds > 0 and saved.turn.tools == ["bash"]


# ---------------------------------------------------------------------------- the entry points
# Every road into a first run imports the agent layer through ``preimport`` (opted in: a fresh
# stack, what it makes straight to the collector's oldest generation): an audit hook reads the young
# threshold as each module of the layer, pydantic and the widget libraries is imported. Zero
# is the import's pause (10,000 a batch's spacing, for the engine's own modules); the
# process's default (700) means the import took another road. ``agents.entries``, the road's
# signpost, is imported before the pause.
_ROADS = {
    "python": "import jupyter_agent\njupyter_agent.toolloop('Say hello.', model='gpt-4.1-mini')",
    "cell": "ip.run_cell('%%toolloop\\nSay hello.')",
    "over": "ip.run_cell('rows = [1, 2]')\nip.run_cell('%%toolloop --over rows\\nItem {item}')",
    "batch": "import jupyter_agent\njupyter_agent.batch('Item {item}', [1, 2], model='gpt-4.1-mini')",
}

_AUDITED = """
import collections, gc, json, sys
from IPython.core.interactiveshell import InteractiveShell
ip = InteractiveShell.instance()
ip.run_line_magic("load_ext", "jupyter_agent")
LAYER = ("jupyter_agent.agents", "jupyter_agent.batch", "jupyter_agent.ui", "pydantic.",
         "anywidget", "ipywidgets")
SIGNPOST = ("jupyter_agent.agents", "jupyter_agent.agents.entries")
default = gc.get_threshold()[0]
seen = collections.defaultdict(set)
def hook(event, args):
    if event == "import" and args[0].startswith(LAYER) and args[0] not in SIGNPOST:
        threshold = gc.get_threshold()[0]
        seen["default" if threshold == default else threshold].add(args[0])
sys.addaudithook(hook)
{road}
print(json.dumps({{str(k): sorted(v) for k, v in seen.items()}}))
"""


@pytest.mark.parametrize("road", sorted(_ROADS))
def test_every_road_imports_the_agent_layer_with_collection_paused(
        server: ScriptedOpenAI, road: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the opt-in (``JUPYTER_AGENT_TUNE_INTERPRETER=1``); by default nothing is paused:
    tests/test_interpreter_untouched.py."""
    monkeypatch.setenv("JUPYTER_AGENT_TUNE_INTERPRETER", "1")
    server.default = text("Hello.")
    seen = _report(_AUDITED.format(road=_ROADS[road]))
    assert len(server.requests) >= 1  # a run did reach the model
    assert len(seen.get("0", [])) > 50, seen  # the layer was imported here, paused
    assert "default" not in seen, seen["default"]
    assert set(seen) <= {"0", "10000"}, seen.keys()
