"""The sandbox's file boundary: commands run over an overlay, their changes checked on the
final state, held when they would take effect outside, and undoable (docs/sandbox.md).

Public API:

* :class:`OverlayRun` (``start``, ``wrap``, ``finish``) runs one command over an overlay of
  the workspace and settles its upper layer; :meth:`OverlayRun.why_not` says when it cannot;
* :func:`summary` the lines a tool result shows for a command's changes;
* :func:`keep`, :func:`discard`, :func:`undo`, :func:`changes_text`: a person's decisions
  (``%agent keep|discard|undo|changes``), raising :class:`DecisionError` in one line.
"""

from __future__ import annotations

from .decisions import DecisionError, changes_text, discard, keep, summary, undo
from .ledger import Entry, Record
from .overlay import OverlayRun, OverlaySupport, overlay_support

__all__ = ["DecisionError", "Entry", "OverlayRun", "OverlaySupport", "Record", "changes_text",
           "discard", "keep", "overlay_support", "summary", "undo"]
