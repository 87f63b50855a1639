"""The embedded model (SmolLM2 served by llama.cpp, :mod:`jupyter_agent.llm.local`) as a
client: its profile, whether it is installed, and its endpoint.

Nothing here probes for llama.cpp or starts a server until asked, so importing the client
layer stays cheap.
"""

from __future__ import annotations

from ..llm.profiles import (
    BUILTIN_PROFILES,
    ModelProfile,
    register_profile,
    resolve_profile,
)

__all__ = ["LOCAL_NAME", "profile_for", "local_available", "local_model_profile",
           "local_endpoint", "LOCAL_API_KEY"]

LOCAL_NAME = "local"
"""The profile name of the embedded model (``--model local``); its server answers to the same
name (``llm.local.LOCAL_MODEL_NAME``)."""

LOCAL_API_KEY = "local"
"""The embedded server accepts any key; this placeholder keeps the client happy."""


def profile_for(name: str) -> ModelProfile:
    """The profile ``name`` stands for: the embedded model's for ``local`` (built and
    registered on first use: it probes the installed packages), else the registered profile
    or a generic one for that model id."""
    if name == LOCAL_NAME and name not in BUILTIN_PROFILES:
        return register_profile(local_model_profile())
    return resolve_profile(name)


def local_available() -> bool:
    """Whether the ``local`` extra (llama.cpp server + the SmolLM2 GGUF) is installed."""
    from ..llm.local import local_available as _available

    return _available()


def local_model_profile() -> ModelProfile:
    """The profile of the embedded model. Its ``base_url`` is set when the server starts."""
    from ..llm.local import local_profile

    return ModelProfile.model_validate({**local_profile()["profile"],
                                        "api_key_env": "JUPYTER_AGENT_LOCAL_KEY"})


def local_endpoint() -> tuple[str, str]:
    """``(base_url, api_key)`` of the embedded model's server, started on first use."""
    from ..llm.local import get_local_server

    return get_local_server().base_url, LOCAL_API_KEY
