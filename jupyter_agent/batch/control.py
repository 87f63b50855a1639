"""Stopping a running batch, from any thread: the card's button, a limit, an interrupt."""

from __future__ import annotations

import threading

from ..errors import ParameterError

__all__ = ["Controller"]


class Controller:
    """Stop requests for a running batch, from any thread."""

    def __init__(self) -> None:
        self.stopping = threading.Event()
        self.aborting = threading.Event()
        self.reason = ""

    def stop(self, mode: str = "finish", reason: str = "") -> None:
        """``finish``: start nothing new, let running items end; ``abort``: also end the
        running items at their next round."""
        if mode not in ("finish", "abort"):
            raise ParameterError(f"mode must be 'finish' or 'abort', not {mode!r}.")
        if not self.reason or (mode == "abort" and not self.aborting.is_set()):
            self.reason = reason or ("Stopped: running items were aborted." if mode == "abort"
                                     else "Stopped: running items were allowed to finish.")
        self.stopping.set()
        if mode == "abort":
            self.aborting.set()
