"""The live anywidget view of a run.

The run's view dict (see :mod:`jupyter_agent.view.reduce`) is mutated in place by the run's
reducer. The front end gets it in two ways: a snapshot, the synced traits ``view`` and
``view_seq`` (sent when the widget opens, when the run pauses or ends, and when the front end
asks with ``{type: "sync"}``), and between snapshots, at the live display's throttled rate,
custom messages ``{type: "patch", seq, ops}`` holding only what changed
(:class:`jupyter_agent.view.diff.ViewDiffer`). ``seq`` counts patches; a snapshot carries the
seq of the last patch it includes, so the front end (``static/patch.js``) applies patch
``seq + 1`` next and asks for a snapshot when one is missing. A long run thus sends each
streamed token and each tool output about once, not once per update.

A front end can miss the first patches: anywidget loads the widget's module asynchronously, and
patches sent before its listener is attached are dropped. Its request for a snapshot then waits
in the kernel's queue until the running cell ends, so the card would stay frozen for the whole
run. So while the widget is young the kernel also sends a few snapshots unasked, at doubling
ages (:data:`RECOVERY_AGES`): a late listener catches up within about the time it was late,
for a handful of snapshots taken while the view is still small (a view already over
:data:`RECOVERY_MAX_BYTES` is not sent again unasked: a run that grew that much in seconds
is about to end, and its final output is drawn whole anyway).

Every ``sync`` (a front end that missed a patch) is answered: the snapshot when the view
changed, then ``{type: "synced", seq}``, so its wait ends even when no snapshot was due.

Clicks come back as custom messages ``{type: "answer", call_id, how, option_index, answer}``,
the stop button as ``{type: "stop", run_id}``, a change row's Keep, Discard or Undo as
``{type: "decide", call_id, action}`` (``static/widget.js`` documents them).
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable

import anywidget
import traitlets

from ..base.jsontypes import JSONObject
from ..view.diff import ViewDiffer
from .shared import LOADER, STATIC, card_code

__all__ = ["RECOVERY_AGES", "RunWidget", "STATIC"]

RECOVERY_AGES = (0.5, 1.0, 2.0, 4.0)
"""Widget ages (seconds) after which the next push is a snapshot (see the module docstring)."""
RECOVERY_MAX_BYTES = 256_000
"""The largest view (as JSON) sent as an unasked snapshot."""


class RunWidget(anywidget.AnyWidget):
    """A run drawn live: answer, reasoning, tool cards, plan, ask buttons, footer."""

    # The code is not the card's own: it loads it from this kernel's CardCode (ui/shared.py).
    _esm = LOADER
    _card = traitlets.Unicode("run").tag(sync=True)
    _code_model = traitlets.Unicode().tag(sync=True)
    view = traitlets.Dict().tag(sync=True)
    """The last snapshot of the run's view (a copy: the live dict changes under it)."""
    view_seq = traitlets.Int(0).tag(sync=True)
    """The seq of the last patch the snapshot includes."""

    def __init__(self, view: JSONObject, on_answer: Callable[[JSONObject], None] | None = None,
                 on_stop: Callable[[JSONObject], None] | None = None,
                 on_decide: Callable[[JSONObject], None] | None = None, **kwargs: object) -> None:
        super().__init__(view=copy.deepcopy(view), _code_model=card_code().model_id, **kwargs)
        self._source = view
        self._differ = ViewDiffer(view)
        self._seq = 0
        self._born = time.monotonic()
        self._recovery = 0  # index of the next age in RECOVERY_AGES
        self._on_answer = on_answer
        self._on_stop = on_stop
        self._on_decide = on_decide
        # Not named `_handle_msg`: that is ipywidgets' own comm handler, which this would
        # replace (every message from the front end would then fail with a TypeError).
        self.on_msg(self._on_custom_msg)

    def push(self) -> None:
        """Send what changed in the (in-place mutated) view since the last push or snapshot."""
        if self._recovery < len(RECOVERY_AGES):
            age = time.monotonic() - self._born
            if age >= RECOVERY_AGES[self._recovery]:
                while self._recovery < len(RECOVERY_AGES) and age >= RECOVERY_AGES[self._recovery]:
                    self._recovery += 1
                if len(json.dumps(self._source, default=str)) <= RECOVERY_MAX_BYTES:
                    self.snapshot()
                    return
        ops = self._differ.diff(self._source)
        if ops:
            self._seq += 1
            self.send({"type": "patch", "seq": self._seq, "ops": ops})

    def recovery_in(self) -> float | None:
        """Seconds until the next unasked snapshot is due (0: now), ``None`` when the widget
        is past :data:`RECOVERY_AGES`. The live display pushes then even if no event comes
        (a slow tool or model call): a front end that missed the first patches would otherwise
        show none of them until the next event, maybe the end of the run."""
        if self._recovery >= len(RECOVERY_AGES):
            return None
        return max(0.0, RECOVERY_AGES[self._recovery] - (time.monotonic() - self._born))

    def snapshot(self) -> None:
        """Make the synced ``view`` the whole current view (sent only if it changed)."""
        self._differ.reset(self._source)
        with self.hold_sync():
            self.view = copy.deepcopy(self._source)
            self.view_seq = self._seq

    def _on_custom_msg(self, _widget: object, content: object, _buffers: object) -> None:
        if not isinstance(content, dict):
            return
        kind = content.get("type")
        if kind == "answer" and self._on_answer:
            self._on_answer(content)
        elif kind == "stop" and self._on_stop:
            self._on_stop(content)
        elif kind == "decide" and self._on_decide:
            self._on_decide(content)
        elif kind == "sync":  # the front end missed a patch
            self.snapshot()
            # Always answered, after the snapshot if the view changed (a snapshot equal to
            # the synced traits sends nothing): the front end then knows its view is current.
            self.send({"type": "synced", "seq": self._seq})
