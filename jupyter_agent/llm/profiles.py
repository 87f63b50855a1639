"""Model profiles: what we know about a model (window, prices, capabilities), as data.

A profile never holds a key, only the *name* of the environment variable to read it from, so
profiles can be printed, saved and compared without leaking anything.
"""

from __future__ import annotations

import os

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from ..base.state import STATE
from .pricing import PriceTier, price_call, sanitize_price_tiers
from .types import Usage

__all__ = [
    "Capabilities",
    "ModelProfile",
    "BUILTIN_PROFILES",
    "register_profile",
    "resolve_profile",
    "map_temperature",
]


class Capabilities(BaseModel):
    """What the model can do; the loop adapts requests to it."""

    model_config = ConfigDict(extra="forbid")

    tools: bool = True
    """Native tool calls; when False the prompt/grammar tool mode is used."""
    reasoning: bool = False
    """Whether ``<think>`` text in the answer is split off as reasoning."""
    vision: bool = False
    max_temperature: float | None = 2.0
    """``None`` means temperature is never sent."""
    stream_usage: bool = True
    """Whether the server honours ``stream_options.include_usage``."""
    max_completion_tokens: bool = False
    """Send ``max_completion_tokens`` instead of ``max_tokens``; many servers ignore it."""
    stops_after_tool_result: bool = True
    """Whether the model judges by itself when to stop calling tools. When False (a very small
    model), a tool loop forbids tools in the request after a round whose calls all succeeded,
    so the model answers from the results (``agents/tooling.py``)."""
    planning: bool = True
    """Whether the model can follow the planning agent's protocol; ``%%plan`` refuses a model
    that cannot, in one line and before any request."""
    structured_output: bool = True
    """The server takes ``response_format`` with a ``json_schema`` (a typed answer); when
    False a forced ``final_answer`` tool carries the answer instead (``llm/structured.py``).
    A server that answers 400 to it falls back to the tool by itself."""
    history_in_tool_loop: bool = True
    """Whether a tool loop gets the session's earlier turns. False for a very small model: it
    copies the arithmetic of an earlier answer instead of calling the tools, so its tool loops
    start fresh (the card says so; ``agents/turn/open.py``)."""


class ModelProfile(BaseModel):
    """A configured model: request target, limits, prices and defaults."""

    model_config = ConfigDict(extra="forbid")

    name: str
    """What users type (``--model NAME``)."""
    model: str
    """The model id sent to the API."""
    base_url: str | None = None
    """``None`` means ``OPENAI_BASE_URL`` or the provider default."""
    api_key_env: str = "OPENAI_API_KEY"
    max_context: int = 128_000
    max_output: int = 16_384
    price_tiers: list[PriceTier] = []
    """Prices per 1M tokens; tier bounds in input tokens."""
    currency: str = "USD"
    default_system_prompt: str = ""
    default_temperature: float | None = None
    """The temperature sent when the caller gives none (``None``: the server's default)."""
    capabilities: Capabilities = Field(default_factory=Capabilities)
    default_config: dict[str, JsonValue] = {}
    """Extra body fields merged over every request."""

    quote_max_tokens: int | None = Field(default=None, ge=1)
    """Token budget of the knowledge quoted into one turn (``--knowledge``): items past it are
    left out, the most relevant first kept; ``None``: :meth:`quote_budget`'s default."""

    def quote_budget(self) -> int:
        """The knowledge budget of a turn: ``quote_max_tokens``, else half the context left
        once the answer has its room (the question and history keep the other half)."""
        if self.quote_max_tokens is not None:
            return self.quote_max_tokens
        return max(1_000, (self.max_context - self.max_output) // 2)

    @property
    def priced(self) -> bool:
        """Whether the profile knows its price (a free local model says 0 explicitly)."""
        return bool(sanitize_price_tiers(self.price_tiers))

    def cost(self, usage: Usage) -> float:
        """Price one call from the profile's price tiers; 0 when the provider reported the
        user's own key paid it (``usage.user_key``). Tokens count either way."""
        if usage.user_key:
            return 0.0
        return price_call(sanitize_price_tiers(self.price_tiers), usage.input_tokens,
                          usage.output_tokens)

    def api_key(self) -> str | None:
        """The key from the profile's environment variable (never stored on the profile)."""
        return os.environ.get(self.api_key_env) or None


def _tiers(inp: float, out: float) -> list[PriceTier]:
    return [PriceTier(input_price=inp, output_price=out)]


def _builtin_profiles() -> dict[str, ModelProfile]:
    return {p.name: p for p in [
        ModelProfile(name="gpt-4.1-mini", model="gpt-4.1-mini", max_context=1_047_576,
                     max_output=32_768, price_tiers=_tiers(0.4, 1.6)),
        ModelProfile(name="gpt-4.1", model="gpt-4.1", max_context=1_047_576, max_output=32_768,
                     price_tiers=_tiers(2.0, 8.0)),
        ModelProfile(name="gpt-4.1-nano", model="gpt-4.1-nano", max_context=1_047_576,
                     max_output=32_768, price_tiers=_tiers(0.1, 0.4)),
        ModelProfile(name="gpt-4o-mini", model="gpt-4o-mini", max_context=128_000,
                     max_output=16_384, price_tiers=_tiers(0.15, 0.6)),
        ModelProfile(name="gpt-4o", model="gpt-4o", max_context=128_000, max_output=16_384,
                     price_tiers=_tiers(2.5, 10.0)),
        ModelProfile(name="o4-mini", model="o4-mini", max_context=200_000, max_output=100_000,
                     price_tiers=_tiers(1.1, 4.4),
                     capabilities=Capabilities(reasoning=True, max_temperature=None,
                                               max_completion_tokens=True)),
    ]}


def _restore_builtins(profiles: dict[str, ModelProfile]) -> None:
    profiles.clear()
    profiles.update(_builtin_profiles())


BUILTIN_PROFILES: dict[str, ModelProfile] = STATE.slot("llm.profiles", _builtin_profiles,
                                                       reset=_restore_builtins)
"""The registered profiles by name: the built-in ones, and those added by ``register_profile``."""


def register_profile(profile: ModelProfile) -> ModelProfile:
    """Add or replace a profile by name (e.g. a local server or a custom price list)."""
    BUILTIN_PROFILES[profile.name] = profile
    return profile


def resolve_profile(name: str) -> ModelProfile:
    """The registered profile called ``name``; an unknown name gets a generic profile for that
    model id.

    Which model a turn uses, and the embedded ``local`` profile, are decided in one place
    above this layer: :mod:`jupyter_agent.clients.factory`.
    """
    if name in BUILTIN_PROFILES:
        return BUILTIN_PROFILES[name]
    return ModelProfile(name=name, model=name)


def map_temperature(profile: ModelProfile, temperature: float | None) -> float | None:
    """Clamp a user temperature (OpenAI scale) to the model's range; ``None`` = don't send.

    No temperature from the caller means the profile's ``default_temperature``."""
    if temperature is None:
        temperature = profile.default_temperature
    if temperature is None or profile.capabilities.max_temperature is None:
        return None
    return round(max(0.01, min(float(temperature), profile.capabilities.max_temperature)), 2)

