"""The live batch card: a small anywidget, and the display that ends as a static bundle.

The batch engine calls :meth:`BatchDisplay.update` a few times a second with the card's state
(``batch/progress.py``); the widget syncs that one small dict. When the batch ends, the output
is replaced with the static bundle (markdown + plain text + the state as JSON), so a saved
notebook shows the card without widget state. With no widget (a terminal), nothing is shown
until the end: a headless batch prints nothing per item.

The stop buttons send ``{type: "stop", mode: "finish" | "abort"}``; ``on_stop(mode)`` may be
called on another thread than the batch's (ipykernel 7), so it must only set a flag.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..base.fresh_stack import preimport
from ..base.jsontypes import JSONObject
from ..view.batch import batch_bundle

if TYPE_CHECKING:
    from IPython.display import DisplayHandle

    from .batch_widget import BatchWidget

__all__ = ["BatchDisplay"]


class BatchDisplay:
    """The output of one batch cell."""

    def __init__(self, view: JSONObject, *, widgets: bool = True,
                 on_stop: Callable[[str], None] | None = None) -> None:
        self.view = view
        self.widget: BatchWidget | None = None
        self.handle: DisplayHandle | None = None
        self.updates = 0
        if widgets:
            try:
                preimport("jupyter_agent.ui.batch_widget")  # anywidget, ipywidgets
                from .batch_widget import BatchWidget

                self.widget = BatchWidget(view, on_stop=on_stop)
            except Exception:  # no widget support: show the card once, at the end
                self.widget = None
        if self.widget is not None:
            from IPython.display import display

            self.handle = display(batch_bundle(view, self.widget.model_id), raw=True,
                                  display_id=True)

    def update(self, view: JSONObject) -> None:
        """New state from the engine (already throttled there): sync the widget."""
        self.view = view
        if self.widget is not None:
            self.updates += 1
            self.widget.view = view

    def finish(self, view: JSONObject) -> None:
        """The batch ended: the static card replaces the widget (or appears, headless)."""
        from IPython.display import display

        self.view = view
        if self.widget is not None:
            self.widget.view = view
        bundle = batch_bundle(view)
        if self.handle is not None:
            self.handle.update(bundle, raw=True)
        else:
            display(bundle, raw=True)
