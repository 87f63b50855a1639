"""Fixtures for the runtime tests: every test gets an empty workspace folder as its current
directory (agents, MCP servers and failover marks are process state: ``tests/conftest.py``
resets them)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# Child processes (kernels, workers) import helpers from this folder by name.
_HERE = str(Path(__file__).parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty workspace folder, also the current directory (the default workspace)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    monkeypatch.chdir(ws)
    return ws.resolve()
