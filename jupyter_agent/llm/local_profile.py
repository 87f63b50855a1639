"""The ``local`` model profile (the embedded SmolLM2 served by llama.cpp), built on demand.

Only imported when ``local`` is asked for or considered as the default, so the package import
never probes for llama.cpp.
"""

from __future__ import annotations

from .profiles import Capabilities, ModelProfile

__all__ = ["local_available", "local_model_profile", "LOCAL_API_KEY"]

LOCAL_API_KEY = "local"
"""The embedded server accepts any key; this placeholder keeps the client happy."""


def local_available() -> bool:
    """Whether the ``local`` extra (llama.cpp server + the SmolLM2 GGUF) is installed."""
    from .local import local_available as _available

    return _available()


def local_model_profile() -> ModelProfile:
    """The profile of the embedded model. Its ``base_url`` is set when the server starts."""
    from .local import local_profile

    info = local_profile()["profile"]
    caps = Capabilities(**info.pop("capabilities"))
    return ModelProfile(capabilities=caps, api_key_env="JUPYTER_AGENT_LOCAL_KEY", **info)
