"""Where the usage of a model call made outside the loop (a helper, a sub-agent) is counted.

A run installs a sink for its duration (``with usage_sink(collect): ...``); every helper call
made inside it, however deep in the user's tool code, reports its tokens and cost there, so they
add up into the run. Outside a run there is no sink and the helper's result object carries its
own usage. A ``ContextVar`` rather than a global keeps two runs in two threads apart.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from .types import Usage

__all__ = ["UsageItem", "UsageSink", "current_usage_sink", "report_usage", "usage_sink"]

UsageSink = Callable[[str, str, Usage, float], None]
"""``sink(module, model, usage, cost)``; ``module`` says what the call was for (``classify``)."""



@dataclass
class UsageItem:
    """A model call made outside the main request (compression, a helper inside a tool)."""

    module: str
    model: str
    usage: Usage
    cost: float


_SINK: ContextVar[UsageSink | None] = ContextVar("jupyter_agent_usage_sink", default=None)


@contextmanager
def usage_sink(callback: UsageSink | None) -> Iterator[None]:
    """Send the usage of every helper call made inside the block to ``callback``.

    Blocks nest: the innermost sink receives the calls. ``None`` hides the outer sink.
    """
    token = _SINK.set(callback)
    try:
        yield
    finally:
        _SINK.reset(token)


def current_usage_sink() -> UsageSink | None:
    """The sink installed by the innermost ``usage_sink`` block, if any."""
    return _SINK.get()


def report_usage(module: str, model: str, usage: Usage, cost: float) -> bool:
    """Hand one call's usage to the current sink; returns False when no sink is installed."""
    sink = _SINK.get()
    if sink is None:
        return False
    sink(module, model, usage, cost)
    return True
