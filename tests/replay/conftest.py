"""Record/replay tests (the mode, the scratch store and the loaded cassettes are process state:
``tests/conftest.py`` resets them, so every test starts live with no cassette loaded)."""

from __future__ import annotations

from typing import Any


def comparable(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """An event log without what differs from run to run (times, durations, ids, the order
    in which parallel tools finish)."""
    from jupyter_agent.replay.compare import comparable_events

    return comparable_events(events)

