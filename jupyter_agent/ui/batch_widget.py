"""The live anywidget of a batch card (drawn by ``static/batch.js``).

Its one synced trait is ``view``, the card's small state dict. A click on a stop button comes
back as ``{type: "stop", mode: "finish" | "abort"}`` and is handed to ``on_stop(mode)``.
"""

from __future__ import annotations

from collections.abc import Callable

import anywidget
import traitlets

from ..base.jsontypes import JSONObject
from .shared import LOADER, card_code

__all__ = ["BatchWidget"]


class BatchWidget(anywidget.AnyWidget):
    """The live batch card."""

    # The code is not the card's own: it loads it from this kernel's CardCode (ui/shared.py).
    _esm = LOADER
    _card = traitlets.Unicode("batch").tag(sync=True)
    _code_model = traitlets.Unicode().tag(sync=True)
    view = traitlets.Dict().tag(sync=True)

    def __init__(self, view: JSONObject, on_stop: Callable[[str], None] | None = None,
                 **kwargs: object) -> None:
        super().__init__(view=view, _code_model=card_code().model_id, **kwargs)
        self._on_stop = on_stop
        # Not `_handle_msg`: that is ipywidgets' own comm handler (see widget.py).
        self.on_msg(self._on_custom_msg)

    def _on_custom_msg(self, _widget: object, content: object, _buffers: object) -> None:
        if (isinstance(content, dict) and content.get("type") == "stop"
                and content.get("mode") in ("finish", "abort") and self._on_stop is not None):
            self._on_stop(content["mode"])
