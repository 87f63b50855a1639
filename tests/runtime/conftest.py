"""Fixtures for the runtime tests: no agents, MCP servers or failover marks leak between tests,
and every test gets an empty workspace folder as its current directory."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# Child processes (kernels, workers) import helpers from this folder by name.
_HERE = str(Path(__file__).parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)


@pytest.fixture(autouse=True)
def _clean_runtime() -> Iterator[None]:
    from jupyter_agent.clients import failover
    from jupyter_agent.runtime import agents

    agents.AGENTS.clear()
    failover.clear_marks()
    yield
    agents.AGENTS.clear()
    failover.clear_marks()
    from jupyter_agent.tools.mcp import disconnect_all

    disconnect_all()


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty workspace folder, also the current directory (the default workspace)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    monkeypatch.chdir(ws)
    return ws.resolve()
