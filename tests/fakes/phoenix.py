"""A real OTLP receiver for the trace tests: a local Arize Phoenix server.

Phoenix lives in a venv of its own (``.venv-otel``, made by ``make test``: its many
dependencies must not move the package's). :class:`Phoenix` starts ``phoenix serve`` on free
ports with a temporary working directory, waits until it answers, reads spans back through its
REST API (``/v1/projects/default/spans``) and stops it.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PHOENIX_BIN = Path(os.environ.get("JUPYTER_AGENT_PHOENIX", ROOT / ".venv-otel" / "bin" / "phoenix"))
"""The ``phoenix`` command (``JUPYTER_AGENT_PHOENIX`` overrides where it is)."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Phoenix:
    """One Phoenix server for the tests that export to it."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.log = workdir / "phoenix.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 180.0) -> Phoenix:
        env = dict(os.environ, PHOENIX_WORKING_DIR=str(self.workdir), PHOENIX_PORT=str(self.port),
                   PHOENIX_HOST="127.0.0.1", PHOENIX_GRPC_PORT=str(free_port()),
                   PHOENIX_TELEMETRY_ENABLED="false")
        for name in list(env):  # the receiver must not export its own traces anywhere
            if name.startswith("OTEL_"):
                env.pop(name)
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen([str(PHOENIX_BIN), "serve"], env=env, stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"Phoenix exited: {self.log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(self.base_url + "/healthz", timeout=2) as r:
                    if r.status == 200:
                        return self
            except OSError:
                pass
            time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"Phoenix did not answer in {timeout:g} s: "
                           f"{self.log.read_text()[-2000:]}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc = None

    def spans(self) -> list[dict[str, Any]]:
        """Every span of the default project (all pages)."""
        out: list[dict[str, Any]] = []
        cursor = ""
        while True:
            url = f"{self.base_url}/v1/projects/default/spans?limit=1000"
            if cursor:
                url += f"&cursor={cursor}"
            try:
                with urllib.request.urlopen(url, timeout=10) as r:
                    page = json.loads(r.read())
            except urllib.error.HTTPError as exc:
                if exc.code == 404:  # no span received yet: no project either
                    return []
                raise
            out.extend(page.get("data") or [])
            cursor = page.get("next_cursor") or ""
            if not cursor:
                return out

    def wait_for(self, predicate: Any, timeout: float = 90.0) -> list[dict[str, Any]]:
        """The spans once ``predicate(spans)`` holds (Phoenix stores what it receives a moment
        later); fails with what it has after ``timeout``."""
        deadline = time.monotonic() + timeout
        spans: list[dict[str, Any]] = []
        while time.monotonic() < deadline:
            spans = self.spans()
            if predicate(spans):
                return spans
            time.sleep(0.3)
        raise AssertionError(f"Phoenix never had the expected spans; it has {len(spans)}: "
                             + json.dumps([(s["name"], s.get("parent_id")) for s in spans])[:3000])
