"""The live anywidget view of a run.

Its only synced state is ``view`` (see :mod:`jupyter_agent.view.state`); clicks come back as
custom messages ``{type: "answer", call_id, how, option_index, answer}``, the stop button as
``{type: "stop", run_id}`` (``static/widget.js`` documents both). The view dict is
mutated in place by the run's reducer and pushed with ``send_state`` at a throttled rate,
so a streamed token costs no copy of the whole state.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import anywidget
import traitlets

from ._esm import bundle_esm

__all__ = ["RunWidget", "STATIC"]

STATIC = Path(__file__).parent / "static"


class RunWidget(anywidget.AnyWidget):
    """A run drawn live: answer, reasoning, tool cards, plan, ask buttons, footer."""

    _esm = bundle_esm(STATIC / "widget.js")
    _css = (STATIC / "run.css").read_text(encoding="utf-8") + "\n" + (
        STATIC / "code.css").read_text(encoding="utf-8")
    view = traitlets.Dict().tag(sync=True)

    def __init__(self, view: dict[str, Any], on_answer: Callable[[dict[str, Any]], None] | None = None,
                 on_stop: Callable[[dict[str, Any]], None] | None = None, **kwargs: Any) -> None:
        super().__init__(view=view, **kwargs)
        self._on_answer = on_answer
        self._on_stop = on_stop
        # Not named `_handle_msg`: that is ipywidgets' own comm handler, which this would
        # replace (every message from the front end would then fail with a TypeError).
        self.on_msg(self._on_custom_msg)

    def push(self) -> None:
        """Send the (in-place mutated) view to the front end."""
        self.send_state("view")

    def _on_custom_msg(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if not isinstance(content, dict):
            return
        kind = content.get("type")
        if kind == "answer" and self._on_answer:
            self._on_answer(content)
        elif kind == "stop" and self._on_stop:
            self._on_stop(content)
