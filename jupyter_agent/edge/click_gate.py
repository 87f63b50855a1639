"""A click on a waiting card is applied when no cell is running.

A card's answer resumes its run in the kernel. ipykernel 7 may dispatch a widget message while
another cell is still executing (it does not wait for the cell's lock when it can run a comm
message at once), so a click on an earlier cell's question could start that run's next model
call in the middle of the running cell: two runs at once, interleaved on one kernel. The gate
keeps docs/behaviour.md's promise instead: a click made while a cell runs waits, and is applied
once that cell has ended (the card says "Answer queued behind the running cell"). A stop click
is never gated: it must reach the running cell.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Callable

__all__ = ["CellGate", "GATE"]


class CellGate:
    """Whether a cell is running, and the clicks that wait for it to end."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._depth = 0  # cells running: a cell may run another (``shell.run_cell`` inside it)
        self._waiting: list[Callable[[], None]] = []

    def cell_started(self, *_: object) -> None:
        """IPython's ``pre_run_cell``."""
        with self._lock:
            self._depth += 1

    def cell_ended(self, *_: object) -> None:
        """IPython's ``post_run_cell``: the clicks that waited are applied once the cell's own
        end is sent (on the kernel's loop, after this cell), else at once. A cell run inside
        another releases nothing: the outer cell still runs."""
        with self._lock:
            # Never below 0: the cell that loads the extension ends without having started.
            self._depth = max(0, self._depth - 1)
            if self._depth:
                return
            waiting, self._waiting = self._waiting, []
        for apply in waiting:
            try:
                asyncio.get_running_loop().call_soon(apply)
            except RuntimeError:  # no kernel loop (a plain shell): now
                apply()

    def apply(self, click: Callable[[], None]) -> None:
        """Apply ``click`` now, or when the running cell ends."""
        with self._lock:
            if self._depth:
                self._waiting.append(click)
                return
        click()


GATE = CellGate()
"""The kernel's one gate (AgentMagics registers it on the shell's cell events)."""
