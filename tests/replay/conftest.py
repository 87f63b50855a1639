"""Record/replay tests: every test leaves the process live, with no cassette loaded."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(autouse=True)
def _back_to_live() -> Iterator[None]:
    yield
    from jupyter_agent.clients.cassettes import forget_cassettes
    from jupyter_agent.replay import mode

    mode.go_live()
    forget_cassettes()


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
