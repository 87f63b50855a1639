"""One place turns a model name into a client.

The model of a turn is the first of these that is set (:func:`resolve_model`; the source
name in brackets):

1. the cell's ``--model`` (``model=`` of ``chat``/``toolloop``/``plan``) [``cell``];
2. the named agent's model (``--agent``) [``agent``];
3. the model bound to the session (``%agent session NAME --model M``) [``session``];
4. ``%agent model NAME`` (``settings.active_model``) [``active``];
5. ``JUPYTER_AGENT_MODEL`` [``env``];
6. ``%config AgentMagics.model`` (``settings.model``) [``settings``];
7. the embedded ``local`` model, when no key is configured (``%config AgentMagics.api_key``,
   ``OPENAI_API_KEY``) and it is installed [``embedded``];
8. :data:`DEFAULT_MODEL` [``default``].

A name becomes a client once (:func:`make_client`, cached per profile and settings, so one
connection pool serves every turn): the OpenAI-compatible client of the profile
(:class:`~jupyter_agent.llm.client.OpenAIClient`), recording into the cassette in record mode,
served from it in replay mode. :func:`client_for` puts a failover over the configured fallback
profiles; :func:`turn_client` does all of it for a turn and returns a
:class:`~.turn.TurnClient`. The key: ``%config AgentMagics.api_key``, else the profile's
environment variable (``OPENAI_API_KEY``).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass

from ..base import config
from ..base.config import CassetteMode
from ..base.errors import ConfigError
from ..base.state import STATE
from ..llm.client import OpenAIClient, RetryPolicy
from ..llm.profiles import BUILTIN_PROFILES, ModelProfile
from ..llm.protocol import ModelClient

# The cassette wrappers and the failover are imported where a mode or a fallback needs them:
# a live run on one model never loads them (docs/architecture.md, "The first run").
from .embedded import LOCAL_NAME, local_available, local_endpoint, profile_for
from .turn_client import ModelSource, TurnClient, bind_client, remember

__all__ = ["DEFAULT_MODEL", "ModelChoice", "resolve_model", "make_client", "client_for",
           "turn_client", "turn_profile", "clear_client_cache", "local_default_notice",
           "known_models", "unknown_model_message"]

DEFAULT_MODEL = "gpt-4.1-mini"
"""The model when nothing is configured and the embedded one is not installed (or a key is)."""

_clients: dict[tuple[object, ...], ModelClient] = STATE.slot("clients.cache", dict)
_clients_lock = threading.Lock()
_notices_shown: set[str] = STATE.slot("clients.notices_shown", set)


@dataclass(frozen=True)
class ModelChoice:
    """A model name and the rule that chose it."""

    name: str
    source: ModelSource


def _configured_key() -> str | None:
    s = config.settings
    return (s.api_key.get_secret_value() if s.api_key else None) or os.environ.get(
        "OPENAI_API_KEY")


def resolve_model(cell: str | None = None, *, agent: str | None = None,
                  session: str | None = None) -> ModelChoice:
    """The model of a turn, by the order in the module doc."""
    s = config.settings
    ordered: tuple[tuple[str | None, ModelSource], ...] = (
        (cell, "cell"), (agent, "agent"), (session, "session"), (s.active_model, "active"),
        (os.environ.get("JUPYTER_AGENT_MODEL"), "env"), (s.model, "settings"))
    for name, source in ordered:
        if name:
            return ModelChoice(name, source)
    if not _configured_key() and local_available():
        return ModelChoice(LOCAL_NAME, "embedded")
    return ModelChoice(DEFAULT_MODEL, "default")


def make_client(model: str | ModelProfile | None = None, *,
                cassette: CassetteMode | None = None) -> ModelClient:
    """The cached client for ``model`` (``None``: :func:`resolve_model`).

    ``cassette`` overrides ``settings.cassette_mode`` for this client (a cell's
    ``--record``/``--replay``). A replaying client needs no key and starts no server.

    Raises:
        MissingKeyError: no key is configured (it names the variable to set).
    """
    s = config.settings
    mode = cassette or s.cassette_mode
    if mode == "replay":  # before the profile: a replay uses the recorded one
        from .cassettes import active_cassette
        from .replay import replay_client

        name = model.name if isinstance(model, ModelProfile) else model or resolve_model().name
        replay_key = ("replay", s.cassette_path, s.cassette_timing, name)
        with _clients_lock:
            if replay_key not in _clients:
                tape = active_cassette()
                _clients[replay_key] = remember(
                    replay_client(model or name, tape, s.cassette_timing), "replay", tape)
            return _clients[replay_key]
    profile = model if isinstance(model, ModelProfile) else profile_for(
        model or resolve_model().name)
    key = s.api_key.get_secret_value() if s.api_key else None
    if profile.api_key_env != "OPENAI_API_KEY":
        key = None  # a profile with its own variable (e.g. another provider) reads that one
    key = key or profile.api_key()
    base_url = s.base_url if profile.base_url is None else profile.base_url
    base_url = base_url or os.environ.get("OPENAI_BASE_URL")
    if profile.name == LOCAL_NAME:
        base_url, key = local_endpoint()  # the embedded model: its server, started on first use
    # The cache key holds a hash of the key, never the key itself.
    cache_key = (profile.name, profile.model, base_url, hash(key), s.max_retries,
                 s.retry_base_delay, s.retry_max_delay, s.timeout, s.request_deadline,
                 mode, s.cassette_path if mode == "record" else None)
    if not key and profile.name not in BUILTIN_PROFILES:
        # A name nobody registered, with no key: most likely a typo of a known one, which
        # "No API key" would hide (`--model locl`).
        raise ConfigError(unknown_model_message(profile.name))
    with _clients_lock:
        client = _clients.get(cache_key)
        if client is None:
            base = OpenAIClient(profile, api_key=key, base_url=base_url, timeout=s.timeout,
                                retry=RetryPolicy(s.max_retries, s.retry_base_delay,
                                                  s.retry_max_delay),
                                deadline=s.request_deadline)
            if mode == "record":
                from .cassettes import active_cassette
                from .record import RecordingClient

                tape = active_cassette()
                client = remember(RecordingClient(base, tape), "record", tape)
            else:
                client = base
            _clients[cache_key] = client
    return client


def known_models() -> list[str]:
    """The model names that need no guessing: the embedded ``local`` and the registered ones."""
    return [LOCAL_NAME, *(n for n in BUILTIN_PROFILES if n != LOCAL_NAME)]


def unknown_model_message(name: str) -> str:
    """One line for a model name no profile knows: the closest known names, and the fix."""
    import difflib

    known = known_models()
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
    hint = (f"did you mean {' or '.join(repr(c) for c in close)}?" if close
            else f"known models: {', '.join(known)}.")
    return (f"unknown model '{name}'; {hint} (A model your own server serves by another name "
            "needs its key: set OPENAI_API_KEY and OPENAI_BASE_URL.)")


def client_for(model: str | None = None) -> ModelClient:
    """The client for a turn on ``model`` (``None``: :func:`resolve_model`): the cached client,
    or a :class:`~.failover.FailoverClient` over it and the fallbacks when
    ``settings.fallback_models`` names any."""
    model = model or resolve_model().name
    fallbacks = [n for n in config.settings.fallback_models if n and n != model]
    if not fallbacks:
        return make_client(model)
    from .failover import FailoverClient

    client = FailoverClient([model, *fallbacks], factory=make_client)
    mode = config.settings.cassette_mode
    if mode != "live":  # its answers belong to the same cassette as its profiles' calls
        from .cassettes import active_cassette

        remember(client, mode, active_cassette())
    return client


def turn_client(cell: str | None = None, *, agent: str | None = None,
                session: str | None = None) -> TurnClient:
    """The model and client of a turn (:func:`resolve_model`, then :func:`client_for`)."""
    choice = resolve_model(cell, agent=agent, session=session)
    return bind_client(client_for(choice.name), choice.name, choice.source)


def turn_profile(cell: str | None = None, *, agent: str | None = None,
                 session: str | None = None) -> ModelProfile:
    """The profile a turn on these choices would use (:func:`resolve_model`), found without
    starting anything: a replay's recorded profile, else the registered one (the embedded
    model's server is not started). For checks that must come before any request."""
    name = resolve_model(cell, agent=agent, session=session).name
    if config.settings.cassette_mode == "replay":
        return make_client(name).profile
    return profile_for(name)


def local_default_notice(turn: TurnClient) -> str | None:
    """A one-line notice the first time the embedded model runs a turn nobody named it for."""
    # Only the keyless fallback is unasked for: `%agent model local`, JUPYTER_AGENT_MODEL=local
    # and the config setting name it as surely as a cell's --model does.
    if turn.model != LOCAL_NAME or turn.source != "embedded" or "local" in _notices_shown:
        return None
    _notices_shown.add("local")
    return ("No API key configured: using the embedded local model (SmolLM2-135M). "
            "Set OPENAI_API_KEY or JUPYTER_AGENT_MODEL to use another model.")


def clear_client_cache() -> None:
    """Forget cached clients (after a key or URL change, a mode switch, and between tests)."""
    with _clients_lock:
        _clients.clear()
