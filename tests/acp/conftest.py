"""A real kernel for the ``%%toolloop --acp`` tests: its cwd and store in a temporary folder,
the shipped scripted ACP agent (``jupyter_agent/acp/demo_agent.py``) as the agent."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.manager import KernelManager

ROOT = Path(__file__).resolve().parents[2]
DEMO = f'--acp "{sys.executable} -m jupyter_agent.acp.demo_agent"'


class Kernel:
    """A real IPython kernel; :meth:`run` returns a cell's text and its error line."""

    def __init__(self, cwd: Path, home: Path) -> None:
        env = {**os.environ, "JUPYTER_AGENT_HOME": str(home), "PYTHONPATH": os.pathsep.join(
            p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
        self.km = KernelManager(kernel_name="python3")
        self.km.start_kernel(env=env, cwd=str(cwd))
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=60)
        self.run("%load_ext jupyter_agent")

    def send(self, code: str) -> str:
        return str(self.kc.execute(code, store_history=True))

    def collect(self, msg_id: str, timeout: float = 120) -> tuple[str, str | None]:
        texts: list[str] = []
        error = None
        while True:
            m = self.kc.get_iopub_msg(timeout=timeout)
            if m["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = m["msg_type"], m["content"]
            if kind == "status" and content["execution_state"] == "idle":
                return "\n".join(texts), error
            if kind == "stream" and content["text"].startswith("UsageError: "):
                error = content["text"].strip()  # IPython prints a UsageError, one line
            elif kind == "stream":
                texts.append(content["text"])
            elif kind in ("display_data", "update_display_data", "execute_result"):
                texts.append(str(content["data"].get("text/plain", "")))
            elif kind == "error":
                error = f"{content['ename']}: {content['evalue']}"

    def run(self, code: str) -> tuple[str, str | None]:
        return self.collect(self.send(code))

    def ok(self, code: str) -> str:
        text, error = self.run(code)
        assert error is None, error
        return text

    def value(self, expr: str) -> Any:
        text = self.ok(f"import json as _j; print('@@' + _j.dumps({expr}))")
        return json.loads(text.split("@@", 1)[1])

    def close(self) -> None:
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=False)


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "notes.txt").write_text("one\ntwo\nthree\n")
    return tmp_path / "work"


@pytest.fixture
def kernel(workdir: Path) -> Iterator[Kernel]:
    k = Kernel(workdir, workdir.parent / "home")
    yield k
    k.close()
