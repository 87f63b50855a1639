"""What a suspended run leaves in this process until it is answered.

A resume in another kernel rebuilds everything from the saved state (tools by name, the client
from the saved model). In the kernel that suspended the run, two things are better kept as
objects: its tools (a plain function passed as ``tools=`` has no registered name) and, when the
run records into or replays a cassette, the very client it ran on (a recording must keep the
answer; a cell's own ``--record`` client is known nowhere else). :data:`HELD` keeps them by run
id, at most :data:`LIMIT` runs (a run nobody answers is forgotten first); the resume takes
them (:meth:`Held.take`) once its claim succeeded. It is a slot of the process state, so
:meth:`jupyter_agent.base.state.ProcessState.reset` empties it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..base.state import STATE

if TYPE_CHECKING:
    from ..clients.turn_client import TurnClient
    from ..llm.structured import OutputSpec
    from ..tools.registry import AnyTool
    from .run import Run

__all__ = ["LIMIT", "Parts", "Held", "HELD"]

LIMIT = 64
"""Suspended runs whose parts are kept (the oldest is dropped beyond this)."""


@dataclass
class Parts:
    """One suspended run's objects (``None``: nothing kept; look them up again)."""

    tools: list[AnyTool] | None = None
    client: TurnClient | None = None
    output: OutputSpec | None = None
    """A typed run's output spec (its model class: ``run.output`` stays an instance)."""
    is_aborted: Callable[[], bool] | None = None
    """The first turn's abort check (a batch's stop): every resumed part polls it too."""
    on_end: Callable[[Run], None] | None = None
    """The first turn's ``on_end`` (a cell's ``--out``): told again when a resumed part ends."""


@dataclass
class Held:
    """The parts of suspended runs, by run id."""

    _items: dict[str, Parts] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def keep(self, run_id: str, *, tools: list[AnyTool] | None = None,
             client: TurnClient | None = None, output: OutputSpec | None = None,
             is_aborted: Callable[[], bool] | None = None,
             on_end: Callable[[Run], None] | None = None) -> None:
        """Keep the given parts for the resume of ``run_id`` (``None``: keep what was kept)."""
        with self._lock:
            parts = self._items.pop(run_id, None) or Parts()  # re-inserted: now the newest
            if tools is not None:
                parts.tools = list(tools)
            if client is not None:
                parts.client = client
            if output is not None:
                parts.output = output
            if is_aborted is not None:
                parts.is_aborted = is_aborted
            if on_end is not None:
                parts.on_end = on_end
            self._items[run_id] = parts
            while len(self._items) > LIMIT:
                self._items.pop(next(iter(self._items)))

    def take(self, run_id: str) -> Parts:
        """The parts kept for ``run_id``, forgotten here (empty when none were kept)."""
        with self._lock:
            return self._items.pop(run_id, None) or Parts()

    def put_back(self, run_id: str, parts: Parts) -> None:
        """Keep ``parts`` again (a resume that failed before it started)."""
        self.keep(run_id, tools=parts.tools, client=parts.client, output=parts.output,
                  is_aborted=parts.is_aborted, on_end=parts.on_end)

    def __contains__(self, run_id: object) -> bool:
        with self._lock:
            return run_id in self._items

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def clear(self) -> None:
        """Forget everything (a new kernel keeps nothing of the old one but the store)."""
        with self._lock:
            self._items.clear()


HELD: Held = STATE.slot("agents.held", Held)
"""The one instance."""
