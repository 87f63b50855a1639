"""Fixtures for the session store tests: every test gets its own data directory."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from jupyter_agent.session import Store, reset_default_store

# Spawned worker processes import ``session_workers`` by name; the child inherits sys.path.
_HERE = str(Path(__file__).parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Point the data directory at a temporary path and drop any inherited API key."""
    home = tmp_path / "home"
    monkeypatch.setenv("JUPYTER_AGENT_HOME", str(home))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    reset_default_store()
    yield home
    reset_default_store()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    """A fresh database file path (not created yet)."""
    return tmp_path / "db" / "store.sqlite3"


@pytest.fixture
def store(db_path: Path) -> Iterator[Store]:
    """A store on a fresh file, closed after the test."""
    with Store(db_path) as opened:
        yield opened
