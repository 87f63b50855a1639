"""The agent runtime: named agents, modes, intent, permissions, workspace and MCP tools,
``spawn_agent``, and the session subcommands of ``%agent`` (model failover is a client
wrapper: :mod:`jupyter_agent.clients.failover`).

Each concept is one small module; importing this package loads none of them (PEP 562).
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "Agent",
    "resolve_agent",
    "list_agents",
    "IntentResult",
    "IntentRules",
    "INTENT_RULES",
    "recognize_intent",
    "parse_mode",
    "mode_rules",
    "check_permission",
    "PermissionContext",
    "connect_mcp",
    "disconnect_mcp",
    "mcp_servers",
    "export_session",
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
    "recognize_intent": "intent",
    "parse_mode": "modes",
    "mode_rules": "modes",
    "check_permission": "policy",
    "PermissionContext": "policy",
    "connect_mcp": "mcp",
    "disconnect_mcp": "mcp",
    "mcp_servers": "mcp",
    "export_session": "export",
    "current_session": "sessions",
    "set_current_session": "sessions",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'jupyter_agent.runtime' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
