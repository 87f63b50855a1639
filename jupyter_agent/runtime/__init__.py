"""The agent runtime's policy data: named agents, modes, intent, permissions and the tool
catalog. What runs a turn lives in ``agents/`` (the turn driver); MCP tools in ``tools/``.

Each concept is one small module; importing this package loads none of them (PEP 562).
"""

from __future__ import annotations

from ..base.lazy import lazy_exports

__all__ = [
    "Agent",
    "resolve_agent",
    "list_agents",
    "IntentResult",
    "IntentRules",
    "INTENT_RULES",
    "parse_mode",
    "mode_rules",
    "check_permission",
    "PermissionContext",
    "current_session",
    "set_current_session",
]

_LAZY = {
    "Agent": "agents",
    "resolve_agent": "agents",
    "list_agents": "agents",
    "IntentResult": "intent",
    "IntentRules": "intent",
    "INTENT_RULES": "intent",
    "parse_mode": "modes",
    "mode_rules": "modes",
    "check_permission": "policy",
    "PermissionContext": "policy",
    "current_session": "sessions",
    "set_current_session": "sessions",
}


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
