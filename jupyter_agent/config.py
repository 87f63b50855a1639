"""Where settings come from, and the one place that turns them into a model client.

Order for the model of a turn: explicit ``--model`` > the session's bound model > ``%agent
model`` > ``JUPYTER_AGENT_MODEL`` > ``%config AgentMagics.model`` > the built-in default (the
embedded ``local`` model when no key is configured and it is installed). The key: ``%config
AgentMagics.api_key`` > the profile's environment variable (``OPENAI_API_KEY``).
"""

from __future__ import annotations

import os
import threading
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from .llm.profiles import DEFAULT_MODEL, ModelProfile, resolve_profile

__all__ = ["Settings", "settings", "choose_model", "make_client", "default_client"]


class Settings(BaseModel):
    """Process-wide settings; the magics' traitlets write into this object."""

    model_config = ConfigDict(validate_assignment=True)

    model: str | None = None
    """The configured default model (``%config AgentMagics.model``)."""
    active_model: str | None = None
    """The model chosen with ``%agent model NAME`` (wins over the environment)."""
    api_key: SecretStr | None = None
    base_url: str | None = None
    max_retries: int = 3
    retry_base_delay: float = 0.5
    retry_max_delay: float = 8.0
    timeout: float = 600.0
    request_deadline: float = Field(default=900.0, gt=0)
    """Seconds one model call may take in all, retries included, however the server keeps the
    connection busy (``%config AgentMagics.request_deadline``)."""
    fallback_models: list[str] = []
    """Profiles to fail over to, in order, when a request fails (issue: model failover)."""
    session: str = "default"
    """The session magics use when a cell gives no ``--session`` (``%agent session NAME``)."""
    cassette_mode: Literal["live", "record", "replay"] = "live"
    """``%agent record`` / ``%agent replay``: model calls are recorded to, or served from, the
    cassette at ``cassette_path`` (see ``jupyter_agent.replay``)."""
    cassette_path: str | None = None
    cassette_timing: Literal["fast", "recorded"] = "fast"


settings = Settings()
_clients: dict[tuple[Any, ...], Any] = {}
_clients_lock = threading.Lock()
_local_notice_shown = False


def _local_default_possible() -> bool:
    try:
        from .llm.local_profile import local_available
    except ImportError:
        return False
    return local_available()


def choose_model(explicit: str | None = None, session_model: str | None = None) -> str:
    """The model name for a turn, following the documented order."""
    for name in (explicit, session_model, settings.active_model,
                 os.environ.get("JUPYTER_AGENT_MODEL"), settings.model):
        if name:
            return name
    key = settings.api_key.get_secret_value() if settings.api_key else None
    if not (key or os.environ.get("OPENAI_API_KEY")) and _local_default_possible():
        return "local"
    return DEFAULT_MODEL


def local_default_notice(model: str) -> str | None:
    """A one-line notice the first time the embedded model is picked as the default."""
    global _local_notice_shown
    if model != "local" or _local_notice_shown:
        return None
    _local_notice_shown = True
    return ("No API key configured: using the embedded local model (SmolLM2-135M). "
            "Set OPENAI_API_KEY or JUPYTER_AGENT_MODEL to use another model.")


def make_client(model: str | ModelProfile | None = None, *, cassette: str | None = None) -> Any:
    """A cached :class:`~jupyter_agent.llm.client.ModelClient` for ``model``.

    ``cassette`` (``live``/``record``/``replay``) overrides ``settings.cassette_mode`` for
    this client (a cell's ``--record``/``--replay``). A replaying client needs no key.

    Raises :class:`~jupyter_agent.errors.MissingKeyError` naming the variable when no key is
    configured.
    """
    from .llm.client import ModelClient, RetryPolicy

    mode = cassette or settings.cassette_mode
    if mode == "replay":  # before the profile: replay uses the recorded one, starts no server
        from .replay.mode import replay_client

        key_r = ("replay", settings.cassette_path, settings.cassette_timing,
                 model.name if isinstance(model, ModelProfile) else model or choose_model())
        with _clients_lock:
            if key_r not in _clients:
                _clients[key_r] = replay_client(model or key_r[3])
            return _clients[key_r]
    profile = model if isinstance(model, ModelProfile) else resolve_profile(model or choose_model())
    key = settings.api_key.get_secret_value() if settings.api_key else None
    if profile.api_key_env != "OPENAI_API_KEY":
        key = None  # a profile with its own variable (e.g. another provider) reads that one
    key = key or profile.api_key()
    base_url = settings.base_url if profile.base_url is None else profile.base_url
    base_url = base_url or os.environ.get("OPENAI_BASE_URL")
    if profile.name == "local":
        # The embedded model: start (or reuse) its server on a loopback port, on first use.
        from .llm.local import get_local_server
        from .llm.local_profile import LOCAL_API_KEY

        base_url = get_local_server().base_url
        key = LOCAL_API_KEY
    # The cache key holds a hash of the key, never the key itself.
    cache_key = (profile.name, profile.model, base_url, hash(key), settings.max_retries,
                 settings.retry_base_delay, settings.retry_max_delay, settings.timeout,
                 settings.request_deadline, mode, settings.cassette_path if mode == "record" else None)
    with _clients_lock:
        client = _clients.get(cache_key)
        if client is None:
            extra: dict[str, Any] = {}
            cls: Any = ModelClient
            if mode == "record":
                from .replay.client import RecordingClient
                from .replay.mode import active_cassette

                cls, extra = RecordingClient, {"cassette": active_cassette()}
            client = cls(
                profile,
                **extra,
                api_key=key,
                base_url=base_url,
                retry=RetryPolicy(settings.max_retries, settings.retry_base_delay,
                                  settings.retry_max_delay),
                timeout=settings.timeout,
                deadline=settings.request_deadline,
            )
            _clients[cache_key] = client
    return client


def default_client(model: str | None = None) -> Any:
    """The client for ``model`` (or the default model); alias of :func:`make_client`."""
    return make_client(model)


def clear_client_cache() -> None:
    """Forget cached clients (after a key or URL change, and between tests)."""
    with _clients_lock:
        _clients.clear()
