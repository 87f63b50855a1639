"""Constants of the planning agent (docs/behaviour.md §6.1, §12).

Model-facing texts live here when more than one module needs them; everything else stays next
to the code that uses it.
"""

from __future__ import annotations

__all__ = [
    "ASK_MAX_OPTIONS",
    "ASK_MIN_OPTIONS",
    "ASK_TOOL_NAME",
    "BATCH_TOOL_SIZE",
    "INTERACTIVE_NOT_SUPPORTED",
    "INTERNAL_TOOL_NAMES",
    "MAX_ROUNDS",
    "MAX_STOP_GATE_REJECTIONS",
    "RANDOM_ID_LENGTH",
    "RESOLVED_STATUSES",
    "UPDATE_PLAN_TOOL_NAME",
    "WAITING_FOR_USER_ANSWER",
]

MAX_ROUNDS = 100
"""Default model requests per ``%%plan`` run (``maxRunAgentTimes``)."""

BATCH_TOOL_SIZE = 5
"""Runtime tools run at most this many at a time; internal tools always run alone."""

MAX_STOP_GATE_REJECTIONS = 2
"""Refusals the stop gate gives before the next stop candidate ends the run ``incomplete``."""

ASK_TOOL_NAME = "ask_agent"
"""Default name of the internal ask tool (§6.10)."""

UPDATE_PLAN_TOOL_NAME = "update_plan"
"""Default name of the internal plan tool (§6.5)."""

INTERNAL_TOOL_NAMES = (ASK_TOOL_NAME, UPDATE_PLAN_TOOL_NAME)
"""Names a runtime tool may not take; such tools are dropped from the catalog."""

RANDOM_ID_LENGTH = 6
"""Length of generated plan and step ids."""

ASK_MIN_OPTIONS = 3
"""Fewest answer options an ask may offer."""

ASK_MAX_OPTIONS = 5
"""Most answer options an ask may offer."""

RESOLVED_STATUSES = frozenset({"done", "skipped", "blocked"})
"""Step statuses the stop gate counts as resolved."""

WAITING_FOR_USER_ANSWER = "Waiting for user answer."
"""Tool response of a valid ask; the run is suspended after the round."""

INTERACTIVE_NOT_SUPPORTED = "Interactive tool is not supported in unified agent loop yet."
"""What a child tool that tries to become interactive inside ``%%plan`` answers (§6.4)."""
