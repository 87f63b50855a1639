"""The sandbox: confining a command (bubblewrap, its limits) and its file boundary (commands
run over an overlay, their changes checked on the final state, held when they would take
effect outside, and undoable). docs/sandbox.md says what it promises.

Modules (each with its own public API):

* ``bwrap``: :func:`~.bwrap.sandbox_status` (is bubblewrap usable here, in which mode) and
  :func:`~.bwrap.bwrap_command` (the argument list confining a command to a workspace);
* ``boundary``: what inside a workspace stays hidden or read-only, one list for ``bash`` and
  the file tools (:func:`~.boundary.boundary_for`);
* ``limits``, ``seccomp``, ``procs``, ``pipes``: process and memory limits (a ``pids`` and
  memory control group for a root kernel), the Unix-socket filter, stopping every process of
  a command, reading its pipes until it ends;
* ``overlay``, ``classes``, ``layers``, ``settle``, ``ledger``, ``decisions``: the final-state
  check; ``card``: what a card shows of it (:func:`changes_event`, :class:`ChangedText`).

Exported here: :class:`OverlayRun` (``start``, ``wrap``, ``finish``; :meth:`OverlayRun.why_not`
when no overlay can be had), :func:`summary` (the lines a tool result shows), and a person's
decisions :func:`keep`, :func:`discard`, :func:`undo`, :func:`changes_text` (``%agent keep |
discard | undo | changes``) and :func:`decide` (the one road of both the command and a click
on the card), raising :class:`DecisionError` in one line. Importing this
package loads none of its modules (PEP 562).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..base.lazy import lazy_exports

if TYPE_CHECKING:
    from .card import ACTIONS, ChangedText, changes_event, decide
    from .decisions import DecisionError, changes_text, discard, keep, summary, undo
    from .ledger import Entry, Record
    from .overlay import OverlayRun, OverlaySupport, overlay_support

__all__ = ["ACTIONS", "ChangedText", "DecisionError", "Entry", "OverlayRun", "OverlaySupport", "Record",
           "changes_event", "changes_text", "decide", "discard", "keep", "overlay_support",
           "summary", "undo"]

_LAZY = {
    "DecisionError": "decisions", "changes_text": "decisions", "discard": "decisions",
    "keep": "decisions", "summary": "decisions", "undo": "decisions",
    "ACTIONS": "card", "ChangedText": "card", "changes_event": "card", "decide": "card",
    "Entry": "ledger", "Record": "ledger",
    "OverlayRun": "overlay", "OverlaySupport": "overlay", "overlay_support": "overlay",
}

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
