"""Shared fixtures of the live-display tests: a hand-moved clock and an IPython shell."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from IPython import get_ipython
from IPython.testing.globalipapp import start_ipython

from jupyter_agent.ui import live


class FakeClock:
    """A monotonic clock the test moves by hand (``clock.now += 0.5``)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeClock]:
    """The live display's clock, moved by hand."""
    fake = FakeClock()
    monkeypatch.setattr(live, "time", SimpleNamespace(monotonic=fake.monotonic))
    yield fake


@pytest.fixture(scope="module")
def ipython() -> Any:
    """An IPython shell (None when another test started it already: then it is global)."""
    return start_ipython() or get_ipython()
