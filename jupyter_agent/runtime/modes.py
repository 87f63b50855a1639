"""The three modes of a turn, and what each lets into the request.

| mode     | tools sent          | knowledge items | intent in the system prompt |
|----------|---------------------|-----------------|-----------------------------|
| ``ask``    | none                | none            | no                          |
| ``search`` | none                | at most 8       | yes                         |
| ``agent``  | the turn's tool set | at most 3       | yes                         |

``%%chat`` runs in ``ask`` (``search`` when it is given knowledge); ``%%toolloop`` and
``%%plan`` run in ``agent``. The mode is a property of the cell, never stored in the session.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from ..base.errors import ConfigError

__all__ = ["MODE_KNOWLEDGE_LIMITS", "Mode", "ModeRules", "MODES", "parse_mode", "mode_rules"]

Mode = Literal["ask", "search", "agent"]

MODE_KNOWLEDGE_LIMITS: dict[str, int | None] = {"ask": None, "search": 8, "agent": 3}
"""Knowledge items a turn may inject, by mode (``None``: no knowledge in ``ask`` mode)."""


class ModeRules(BaseModel):
    """What one mode allows."""

    name: Mode
    tools: bool
    """Tool definitions go into the request."""
    knowledge_limit: int
    """Knowledge items injected at most (0: none)."""
    intent_in_prompt: bool
    """The recognised intent is written into the system prompt."""


MODES: dict[str, ModeRules] = {
    "ask": ModeRules(name="ask", tools=False, knowledge_limit=0,
                     intent_in_prompt=False),
    "search": ModeRules(name="search", tools=False,
                        knowledge_limit=MODE_KNOWLEDGE_LIMITS["search"] or 0,
                        intent_in_prompt=True),
    "agent": ModeRules(name="agent", tools=True,
                       knowledge_limit=MODE_KNOWLEDGE_LIMITS["agent"] or 0,
                       intent_in_prompt=True),
}


def parse_mode(text: str | None) -> Mode:
    """A mode from its name (any case, spaces ignored); empty or ``None`` gives ``ask``.

    Raises:
        ConfigError: not one of ask, search, agent.
    """
    name = (text or "").strip().lower() or "ask"
    rules = MODES.get(name)
    if rules is None:
        raise ConfigError(f"Unknown mode {text!r}: use ask, search or agent.")
    return rules.name


def mode_rules(mode: str | None) -> ModeRules:
    """The rules of ``mode`` (parsed with :func:`parse_mode`)."""
    return MODES[parse_mode(mode)]

