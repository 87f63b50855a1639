"""Fixtures for the ``%%plan`` loop tests: a scripted server, a real client and a store.

None is autouse, so the pure plan-module tests next to these stay untouched; loop test modules
opt in with ``pytestmark = pytest.mark.usefixtures("plan_env")``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from jupyter_agent.clients.factory import clear_client_cache
from jupyter_agent.llm.client import OpenAIClient, RetryPolicy
from jupyter_agent.session import Store, reset_default_store
from jupyter_agent.tools.registry import REGISTRY
from tests.fakes.openai_server import ScriptedOpenAI


@pytest.fixture
def plan_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No inherited key, URL or model; the default store under ``tmp_path``; the tool
    registry restored afterwards."""
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "JUPYTER_AGENT_MODEL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("JUPYTER_AGENT_HOME", str(tmp_path / "home"))
    reset_default_store()
    clear_client_cache()
    before = set(REGISTRY.names())
    yield
    for name in set(REGISTRY.names()) - before:
        REGISTRY.unregister(name)
    clear_client_cache()
    reset_default_store()


@pytest.fixture
def srv() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI() as server:
        yield server


@pytest.fixture
def client(srv: ScriptedOpenAI) -> OpenAIClient:
    return OpenAIClient("gpt-4.1-mini", api_key="k", base_url=srv.base_url,
                        retry=RetryPolicy(1, 0.01, 0.02))


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "s.sqlite3"


@pytest.fixture
def store(store_path: Path) -> Iterator[Store]:
    with Store(store_path) as opened:
        yield opened
