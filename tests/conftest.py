"""Test isolation for every test: a private store, no inherited key, no traffic off loopback."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.openai_server import ScriptedOpenAI
from tests.fakes.processes import marker  # noqa: F401 - a fixture: processes found by a marker

_ENV = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "JUPYTER_AGENT_MODEL", "JUPYTER_AGENT_HOME",
        # an exporter configured on the developer's machine must not receive test runs
        "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
_real_connect = socket.socket.connect


def _is_local(address: object) -> bool:
    if isinstance(address, (str, bytes)):  # AF_UNIX
        return True
    host = address[0] if isinstance(address, tuple) else None
    if host in ("localhost", "", None):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback  # type: ignore[arg-type]
    except ValueError:
        return False


def _guarded_connect(self: socket.socket, address: object) -> None:
    if not _is_local(address):
        pytest.fail(f"test tried to connect to {address!r}: tests must stay on loopback")
    return _real_connect(self, address)  # type: ignore[arg-type]


@pytest.fixture(autouse=True)
def _isolate(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every test starts from a fresh process state (``jupyter_agent.base.state.STATE``: tools,
    agents, settings, clients, cassettes, displays, the default store...) and leaves none."""
    for name in _ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("JUPYTER_AGENT_HOME", str(tmp_path_factory.mktemp("agent-home")))
    monkeypatch.setattr(socket.socket, "connect", _guarded_connect)
    import jupyter_agent.base.config  # noqa: F401  (its settings are a slot too)
    from jupyter_agent.base.state import STATE

    STATE.reset()
    yield
    STATE.reset()


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedOpenAI]:
    """A scripted OpenAI-compatible server; the environment points the package at it."""
    with ScriptedOpenAI() as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key-0123456789")
        yield srv


@pytest.fixture
def fast_retries() -> Iterator[None]:
    """Retries with millisecond backoff, so error-path tests stay quick."""
    from jupyter_agent.base import config
    from jupyter_agent.clients.factory import clear_client_cache

    config.settings.retry_base_delay = 0.01
    config.settings.retry_max_delay = 0.02
    clear_client_cache()
    yield


@pytest.fixture(scope="module")
def ip() -> Any:
    """The test session's one IPython shell with the extension loaded (another module may have
    started it already). A module that needs it set up otherwise defines its own ``ip``."""
    from IPython import get_ipython
    from IPython.testing.globalipapp import start_ipython

    shell = start_ipython() or get_ipython()
    assert shell is not None
    assert shell.run_cell("%load_ext jupyter_agent").success
    return shell


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty workspace folder, also the current directory (the default workspace)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    monkeypatch.chdir(ws)
    return ws.resolve()


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Call to drop the key and the base URL, as on a machine with neither (a replay needs
    neither)."""

    def go() -> None:
        for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
            monkeypatch.delenv(name, raising=False)

    return go
