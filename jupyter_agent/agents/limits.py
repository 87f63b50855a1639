"""Limits several agent modules share (the plan's own live in ``agents/plan/constants.py``).

``docs/behaviour.md`` §12 indexes them.
"""

from __future__ import annotations

__all__ = ["MAX_ROUNDS", "PARALLEL_BATCH", "SUB_AGENT_MAX_ROUNDS"]

MAX_ROUNDS = 50
"""``%%toolloop``: model requests before the final-answer round (``--max-rounds``)."""

PARALLEL_BATCH = 5
"""``%%toolloop --parallel``: batchable calls of one response run this many at a time."""

SUB_AGENT_MAX_ROUNDS = 30
"""Model requests one sub-agent may make in all, its final-answer request included
(``spawn_agent`` and agents used as tools alike)."""
