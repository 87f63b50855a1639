"""Model name -> client: the one default-model rule, profiles and the embedded model, and the
wrappers around the OpenAI-compatible client (record, replay, failover).

Above ``loop/`` and ``llm/``, below ``runtime/`` and ``agents/``: the agents ask
:func:`~.factory.turn_client` for the client of a turn and call it through the
:class:`~jupyter_agent.llm.protocol.ModelClient` protocol only.

- :mod:`.factory`: :func:`resolve_model` (the order is documented there), :func:`make_client`,
  :func:`client_for`, :func:`turn_client`;
- :mod:`.turn_client`: :class:`TurnClient`, what a turn handles besides calls (failover,
  answers);
- :mod:`.embedded`: the ``local`` profile and its server's endpoint;
- :mod:`.failover`, :mod:`.record`, :mod:`.replay`: the wrappers;
- :mod:`.cassette`, :mod:`.storage`, :mod:`.cassettes`: cassettes, on disk and loaded.

Importing this package loads none of them (PEP 562).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..base.lazy import lazy_exports

if TYPE_CHECKING:  # what the names are, for the type checker (which also checks the table)
    from .embedded import profile_for
    from .factory import (
        DEFAULT_MODEL,
        ModelChoice,
        clear_client_cache,
        client_for,
        local_default_notice,
        make_client,
        resolve_model,
        turn_client,
    )
    from .turn_client import TurnClient, bind_client

__all__ = [
    "DEFAULT_MODEL",
    "ModelChoice",
    "TurnClient",
    "bind_client",
    "clear_client_cache",
    "client_for",
    "local_default_notice",
    "make_client",
    "profile_for",
    "resolve_model",
    "turn_client",
]

_LAZY = {
    "DEFAULT_MODEL": "factory",
    "ModelChoice": "factory",
    "TurnClient": "turn_client",
    "bind_client": "turn_client",
    "clear_client_cache": "factory",
    "client_for": "factory",
    "local_default_notice": "factory",
    "make_client": "factory",
    "profile_for": "embedded",
    "resolve_model": "factory",
    "turn_client": "factory",
}


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
