"""Stopping a running batch, from any thread: the card's button, a limit, an interrupt."""

from __future__ import annotations

import threading
from collections.abc import Callable

from ..base.errors import ParameterError

__all__ = ["Controller"]


class Controller:
    """Stop requests for a running batch, from any thread."""

    def __init__(self) -> None:
        self.stopping = threading.Event()
        self.aborting = threading.Event()
        self.reason = ""
        self._cutters: list[Callable[[], int]] = []

    def on_abort(self, cut: Callable[[], int]) -> None:
        """``cut()`` closes the model requests in flight when the batch aborts ("Stop now")
        and says how many it closed."""
        self._cutters.append(cut)

    def stop(self, mode: str = "finish", reason: str = "") -> None:
        """``finish``: start nothing new, let running items end; ``abort``: also end the
        running items at their next round."""
        if mode not in ("finish", "abort"):
            raise ParameterError(f"mode must be 'finish' or 'abort', not {mode!r}.")
        if not self.reason or (mode == "abort" and not self.aborting.is_set()):
            self.reason = reason or ("Stopped now: running items were aborted." if mode == "abort"
                                     else "Stopped after this step: running items were allowed "
                                          "to finish.")
        self.stopping.set()
        if mode == "abort" and not self.aborting.is_set():
            self.aborting.set()
            # "Stop now" does not wait for a model that is still thinking: its requests are
            # closed, and the card says what was cut.
            cut = sum(cutter() for cutter in self._cutters)
            if cut:
                self.reason = (f"{self.reason.rstrip('.')}; {cut} model request"
                               f"{'s' if cut != 1 else ''} in flight closed, not awaited.")
