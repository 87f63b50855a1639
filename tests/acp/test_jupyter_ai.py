"""jupyter-ai's side, with its own packages: a venv holding ``jupyter-ai-acp-client`` (which pins
``agent-client-protocol<0.12``), found at ``$JUPYTER_AGENT_JAI_PYTHON`` or ``.venv-jai/``.

Skipped when that venv is absent. It checks that the persona class is a real
``BaseAcpPersona`` there, and that jupyter-ai's pinned SDK, as the client, drives our agent
through a permission to the end of a turn.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls

REPO = Path(__file__).resolve().parents[2]
JAI_PYTHON = Path(os.environ.get("JUPYTER_AGENT_JAI_PYTHON") or REPO / ".venv-jai/bin/python")
pytestmark = pytest.mark.timeout(180)

if not JAI_PYTHON.exists():
    pytest.skip(f"no jupyter-ai venv at {JAI_PYTHON} (pip install jupyter-ai-acp-client there)",
                allow_module_level=True)


def test_persona_and_jupyter_ai_sdk_drive_our_agent(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    with ScriptedOpenAI() as srv:
        srv.enqueue(tool_calls([call("write_file", {"path": "j.txt", "content": "jai"})]),
                    text("Done."))
        env = dict(os.environ, OPENAI_API_KEY="sk-jai-test-0123456789",
                   OPENAI_BASE_URL=srv.base_url, JUPYTER_AGENT_HOME=str(tmp_path / "home"),
                   PYTHONPATH=str(REPO))
        proc = subprocess.run([str(JAI_PYTHON), "-m", "tests.acp.jai_side", sys.executable,
                               str(ws), json.dumps(env)], cwd=REPO, env={
                                   "PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(REPO),
                                   "HOME": os.environ.get("HOME", str(tmp_path))},
                              capture_output=True, text=True, timeout=150)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["subclass"] is True and out["name"] == "Jupyter Agent"
    assert out["sdk"].startswith("0.11.")  # jupyter-ai's pin: the other end of our range
    assert out["agent"] == "jupyter-agent" and out["stop"] == "end_turn"
    assert out["permissions"] == 1
    assert out["options"] == ["allow_once", "allow_always", "reject_once"]
    assert (ws / "j.txt").read_text() == "jai"
