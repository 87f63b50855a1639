"""The three modes of a turn, and what each lets into the request.

| mode     | tools sent          | knowledge items | skills | intent in the system prompt |
|----------|---------------------|-----------------|--------|-----------------------------|
| ``ask``    | none                | none            | no     | no                          |
| ``search`` | none                | at most 8       | no     | yes                         |
| ``agent``  | the turn's tool set | at most 3       | yes    | yes                         |

``%%chat`` runs in ``ask`` (``search`` when it is given knowledge); ``%%toolloop`` and
``%%plan`` run in ``agent``. The mode is a property of the cell, never stored in the session.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, TypeVar, get_args

from pydantic import BaseModel

from ..errors import ConfigError

__all__ = ["MODE_KNOWLEDGE_LIMITS", "Mode", "ModeRules", "MODES", "parse_mode", "mode_rules", "mode_for_kind",
           "tools_for_mode", "knowledge_for_mode"]

Mode = Literal["ask", "search", "agent"]

MODE_KNOWLEDGE_LIMITS: dict[str, int | None] = {"ask": None, "search": 8, "agent": 3}
"""Knowledge items a turn may inject, by mode (``None``: no knowledge in ``ask`` mode)."""
T = TypeVar("T")


class ModeRules(BaseModel):
    """What one mode allows."""

    name: Mode
    tools: bool
    """Tool definitions go into the request."""
    knowledge_limit: int
    """Knowledge items injected at most (0: none)."""
    skills: bool
    """Skills (here: the agent's instructions and the tool guidance) are injected."""
    intent_in_prompt: bool
    """The recognised intent is written into the system prompt."""


MODES: dict[str, ModeRules] = {
    "ask": ModeRules(name="ask", tools=False, knowledge_limit=0, skills=False,
                     intent_in_prompt=False),
    "search": ModeRules(name="search", tools=False,
                        knowledge_limit=MODE_KNOWLEDGE_LIMITS["search"] or 0, skills=False,
                        intent_in_prompt=True),
    "agent": ModeRules(name="agent", tools=True,
                       knowledge_limit=MODE_KNOWLEDGE_LIMITS["agent"] or 0, skills=True,
                       intent_in_prompt=True),
}


def parse_mode(text: str | None) -> Mode:
    """A mode from its name (any case, spaces ignored); empty or ``None`` gives ``ask``.

    Raises:
        ConfigError: not one of ask, search, agent.
    """
    name = (text or "").strip().lower() or "ask"
    if name not in get_args(Mode):
        raise ConfigError(f"Unknown mode {text!r}: use ask, search or agent.")
    return name  # type: ignore[return-value]


def mode_rules(mode: str | None) -> ModeRules:
    """The rules of ``mode`` (parsed with :func:`parse_mode`)."""
    return MODES[parse_mode(mode)]


def mode_for_kind(kind: str, *, knowledge: Any = None) -> Mode:
    """The mode an entry point runs in: chat is ``ask`` or ``search``, the loops ``agent``."""
    if kind == "chat":
        return "search" if knowledge is not None else "ask"
    return "agent"


def tools_for_mode(mode: str, tools: Sequence[T]) -> list[T]:
    """The tools that may be sent in ``mode``: all of them in ``agent``, none otherwise."""
    return list(tools) if mode_rules(mode).tools else []


def knowledge_for_mode(mode: str, items: Sequence[T]) -> list[T]:
    """The knowledge items that may be injected in ``mode`` (the first ones, up to the limit)."""
    return list(items[: mode_rules(mode).knowledge_limit])
