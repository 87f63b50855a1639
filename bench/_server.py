"""The scripted test server for benchmarks: in a child process, with ``TCP_NODELAY`` set.

Without ``TCP_NODELAY`` the server's separate header and body writes meet the client's delayed
ACK (Nagle's algorithm), which adds about 40 ms to a request on loopback and would swamp every
per-round difference we measure. Run as ``python -m bench._server ARGS`` (the arguments of
``python -m tests.fakes.openai_server``), or call :func:`serve`.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.fakes import openai_server  # noqa: E402


def _patch_nodelay() -> None:
    setup = openai_server._Handler.setup

    def setup_nodelay(self: Any) -> None:
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        setup(self)

    openai_server._Handler.setup = setup_nodelay  # type: ignore[method-assign]


def serve(default: Any, turns: list[Any] | None = None, timeout: float = 30.0,
          latency: float = 0.0) -> tuple[subprocess.Popen[str], str]:
    """Start the server in a child process; returns ``(process, base_url)``.

    ``latency`` is waited before answering each chat request (a slow model).

    Stop it with ``process.stdin.close(); process.wait()``.
    """
    script = {"turns": [t.model_dump(mode="json") for t in turns or []],
              "default": default.model_dump(mode="json")}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump(script, fh)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    extra = ["--latency", str(latency)] if latency else []
    proc = subprocess.Popen([sys.executable, "-m", "bench._server", "--port", "0", "--script",
                             fh.name, "--exit-with-parent", *extra], cwd=ROOT, env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.append(proc.stdout.readline()),  # type: ignore[union-attr]
                              daemon=True)
    reader.start()
    reader.join(timeout)
    os.unlink(fh.name)
    if not lines or not lines[0].startswith("READY "):
        proc.kill()
        raise RuntimeError(f"benchmark server did not start: {lines!r}")
    return proc, lines[0].split(" ", 1)[1].strip()


def stop(proc: subprocess.Popen[str]) -> None:
    """Stop a server started by :func:`serve`."""
    if proc.stdin is not None:
        proc.stdin.close()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:  # still serving a client's idle connections: not a result
        proc.kill()
        proc.wait(timeout=10)


def _patch_backlog() -> None:
    # socketserver's default listen backlog is 5: 32 clients connecting at once overflow it,
    # and a dropped connection attempt costs one contender a retransmit (about a second) or a
    # reset. Both contenders of a benchmark talk to this same server.
    openai_server._HTTPServer.request_queue_size = 256


if __name__ == "__main__":
    _patch_nodelay()
    _patch_backlog()
    sys.exit(openai_server.main(sys.argv[1:]))
