"""ACP (Agent Client Protocol), both ways.

- ``python -m jupyter_agent.acp`` (or ``jupyter-agent-acp``) speaks ACP over stdio, so Zed,
  jupyter-ai 3 and any ACP client can pick this project's agent (docs/acp.md).
- ``%%toolloop --acp "COMMAND"`` runs any ACP agent in a cell, drawn with our cards
  (docs/acp-in-a-cell.md).

Importing this package needs nothing beyond the project: the SDK
(``pip install "jupyter-agent[acp]"``) loads only when one of them runs.
"""

from __future__ import annotations

INSTALL_HINT = 'ACP needs its SDK: pip install "jupyter-agent[acp]"'
"""The one line shown when ``agent-client-protocol`` is missing."""

__all__ = ["INSTALL_HINT"]
