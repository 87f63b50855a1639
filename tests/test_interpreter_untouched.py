"""By default jupyter-agent changes nothing of the interpreter it is imported into: the
collector's threshold and generations, its fork handlers, the threads it imports on
(docs/architecture.md, "Process-wide settings"). The tuning is the user's opt-in
(``JUPYTER_AGENT_TUNE_INTERPRETER=1``; its behaviour: tests/test_collector.py,
tests/test_fresh_stack.py). Each case runs in a fresh interpreter: a first run and a batch, with
a probe on ``gc.set_threshold``, ``gc.freeze``, ``os.register_at_fork`` and thread starts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes.openai_server import ScriptedOpenAI, text

pytestmark = pytest.mark.timeout(120)

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = """
import gc, json, os, sys, threading
calls = []
def probe(real, name):
    def wrapper(*a, **k):
        # Only ours: the standard library (random, logging...) registers fork handlers itself.
        if "jupyter_agent" in sys._getframe(1).f_code.co_filename:
            calls.append(name)
        return real(*a, **k)
    return wrapper
for mod, name in ((gc, "set_threshold"), (gc, "freeze"), (gc, "disable"), (os, "register_at_fork")):
    setattr(mod, name, probe(getattr(mod, name), name))
importers = []
real_start = threading.Thread.start
def start(self):
    if self.name == "jupyter-agent-import":
        importers.append(self.name)
    return real_start(self)
threading.Thread.start = start
before = gc.get_threshold()
from jupyter_agent import toolloop, batch
run = toolloop("hi", store=None)
result = batch("Say {item}", ["a", "b"], kind="chat", store=None, concurrency=2)
print(json.dumps({"status": run.status, "calls": calls, "importers": importers,
                  "threshold": [before, gc.get_threshold()],
                  "batch": result.status}))
"""


def test_opted_out_nothing_of_the_process_changes(server: ScriptedOpenAI,
                                                  tmp_path: Path) -> None:
    """On main the first run paused the collector, froze and moved the import's objects,
    imported on a new thread and registered fork handlers: this test failed there."""
    server.default = text("ok")
    env = {k: v for k, v in os.environ.items() if k != "JUPYTER_AGENT_TUNE_INTERPRETER"}
    env.update(PYTHONPATH=str(ROOT), JUPYTER_AGENT_HOME=str(tmp_path / "home"),
               OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="sk-test-key-0123456789")
    proc = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                          text=True, timeout=100)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["status"] == "done" and report["batch"] == "done"
    assert report["calls"] == [] and report["importers"] == []
    assert report["threshold"][0] == report["threshold"][1]
