"""The entry point of each kind of run, one road for every caller that starts one by kind.

A plain cell (``%%chat``, ``%%toolloop``, ``%%plan``), a batch's items (``--over`` and
``batch()``) and their option checks all find the function here. Its first call in a process
imports the agent layer (pydantic, events, the turn driver: about 150 ms) through
:func:`~jupyter_agent.base.fresh_stack.preimport`: from a fresh stack (a kernel's cell runs about
40 frames down), with what it makes moved straight to the collector's oldest generation
(docs/architecture.md, "The first run"). Later calls are dictionary lookups.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..base.fresh_stack import preimport

if TYPE_CHECKING:
    from .run import Run

__all__ = ["ENTRIES", "entry_point"]

ENTRIES = {"chat": ("jupyter_agent.agents.chat", "chat"),
           "toolloop": ("jupyter_agent.agents.toolloop", "toolloop"),
           "plan": ("jupyter_agent.agents.plan.agent", "plan")}
"""Kind -> (module, function) of its entry point."""


def entry_point(kind: str) -> Callable[..., Run]:
    """The entry point a run of ``kind`` calls (``chat``, ``toolloop`` or ``plan``); its module
    is imported through ``preimport`` the first time (see the module doc). Called with the
    prompt and that entry point's keyword options (they differ by kind)."""
    module, name = ENTRIES[kind]
    preimport(module)  # imports it, or waits for another thread's import of it
    entry: Callable[..., Run] = getattr(sys.modules[module], name)
    return entry
