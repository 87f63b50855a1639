"""A scripted OpenAI server and a real ``OpenAIClient`` pointed at it, for the helper tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from jupyter_agent.clients.factory import clear_client_cache
from jupyter_agent.llm.client import OpenAIClient, RetryPolicy
from jupyter_agent.llm.pricing import PriceTier
from jupyter_agent.llm.profiles import ModelProfile
from tests.fakes.openai_server import ScriptedOpenAI


@pytest.fixture(autouse=True)
def _no_inherited_config(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "JUPYTER_AGENT_MODEL"):
        monkeypatch.delenv(var, raising=False)
    clear_client_cache()
    yield
    clear_client_cache()


@pytest.fixture
def srv() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI() as server:
        yield server


@pytest.fixture
def profile() -> ModelProfile:
    # $1 / $2 per 1M tokens, so every test can check cost == client.cost(usage).
    return ModelProfile(name="helper-test", model="scripted-model",
                        price_tiers=[PriceTier(input_price=1.0, output_price=2.0)])


@pytest.fixture
def client(srv: ScriptedOpenAI, profile: ModelProfile) -> OpenAIClient:
    return OpenAIClient(profile, api_key="test-key", base_url=srv.base_url,
                        retry=RetryPolicy(max_retries=0))
