"""Record/replay tests (the mode, the scratch store and the loaded cassettes are process state:
``tests/conftest.py`` resets them, so every test starts live with no cassette loaded)."""

from __future__ import annotations

from typing import Any

import pytest


def comparable(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """An event log without what differs from run to run (times, durations, ids, the order
    in which parallel tools finish)."""
    from jupyter_agent.replay.compare import comparable_events

    return comparable_events(events)


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Call to drop the key and the base URL, as on a machine with neither."""

    def go() -> None:
        for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
            monkeypatch.delenv(name, raising=False)

    return go
