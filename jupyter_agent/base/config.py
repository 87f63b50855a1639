"""The process-wide settings, as data: the magics' traitlets and ``%agent`` commands write
them, the layers below read them.

This module decides nothing: which model a turn uses and which client serves it is
:mod:`jupyter_agent.clients.factory` (the order is documented there). Read the settings as
``config.settings`` at the moment they are needed, never keep a reference. The object is a
slot of the process state: ``STATE.reset()`` puts every field back to its default.
"""

from __future__ import annotations

import os
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

from .secrets import register_secret
from .state import STATE, to_defaults

__all__ = ["Settings", "settings", "CassetteMode", "CassetteTiming", "default_session",
           "NOTEBOOK_SESSION_PREFIX"]

NOTEBOOK_SESSION_PREFIX = "notebook:"
"""The default session of a notebook is this prefix and the notebook's path."""


def default_session() -> str:
    """The session cells use when none was chosen: the notebook's own.

    A kernel a Jupyter server started knows its notebook's path (``JPY_SESSION_NAME``, relative
    to the server's root): the session is ``notebook:<that path>``, so two notebooks never
    share a conversation by accident and a restarted kernel continues its notebook's. A script
    or a console has no notebook: ``default``.
    """
    path = os.environ.get("JPY_SESSION_NAME", "").strip()
    if not path:
        return "default"
    # A path from a server may be absolute on some setups; the name keeps it as given, one line.
    return NOTEBOOK_SESSION_PREFIX + " ".join(path.split())

CassetteMode = Literal["live", "record", "replay"]
CassetteTiming = Literal["fast", "recorded"]
"""``fast``: replayed chunks as fast as they can be assembled; ``recorded``: with the recorded
delays."""


class Settings(BaseModel):
    """Process-wide settings; the magics' traitlets write into this object."""

    model_config = ConfigDict(validate_assignment=True)

    model: str | None = None
    """The configured default model (``%config AgentMagics.model``)."""
    active_model: str | None = None
    """The model chosen with ``%agent model NAME`` (wins over the environment)."""
    api_key: SecretStr | None = None
    """``%config AgentMagics.api_key``; wins over the profile's environment variable
    (``OPENAI_API_KEY``) for profiles that read that one."""
    base_url: str | None = None
    max_retries: int = 3
    retry_base_delay: float = 0.5
    retry_max_delay: float = 8.0
    timeout: float = 600.0
    """Seconds one network read of a model call may wait; a read past it is retried
    (``%config AgentMagics.read_timeout``)."""
    request_deadline: float = Field(default=900.0, gt=0)
    """Seconds one model call may take in all, retries included, however the server keeps the
    connection busy (``%config AgentMagics.request_deadline``)."""
    fallback_models: list[str] = []
    cache: bool = False
    """Answer identical requests from the on-disk answer cache (``%config AgentMagics.cache``;
    off by default: see ``clients/cache.py``)."""
    """Profiles to fail over to, in order, when a request fails (issue: model failover)."""
    session: str = Field(default_factory=default_session)
    """The session cells use when they give no ``--session`` (``%agent session NAME``): by
    default the notebook's own (:func:`default_session`)."""
    cassette_mode: CassetteMode = "live"
    """``%agent record`` / ``%agent replay``: model calls are recorded to, or served from, the
    cassette at ``cassette_path`` (see ``jupyter_agent.replay``)."""
    cassette_path: str | None = None
    cassette_timing: CassetteTiming = "fast"

    @field_validator("api_key")
    @classmethod
    def _known_secret(cls, value: SecretStr | None) -> SecretStr | None:
        # ``%config AgentMagics.api_key`` lands here: from now on it is masked everywhere.
        if value is not None:
            register_secret(value.get_secret_value())
        return value


settings: Settings = STATE.slot("config.settings", Settings, reset=to_defaults)
