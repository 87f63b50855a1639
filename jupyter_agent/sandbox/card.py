"""What a sandboxed command's card shows of its changes, and the one road of a decision.

A command's tool result stays the text the model reads (:func:`~.decisions.summary`); the
card gets the same facts as data, a :class:`~jupyter_agent.base.events.WorkspaceChanged` event
built from the command's :class:`~.ledger.Record` (:func:`changes_event`). The tool hands the
record over on its return value (:class:`ChangedText` for ``bash``, an attribute of
``sandbox_python``'s result), so nothing parses text and a model cannot forge a row.

:func:`decide` is what ``%agent keep|discard|undo ID`` and a click on the card's Keep,
Discard or Undo button both call (docs/sandbox.md, "Deciding on the card").
"""

from __future__ import annotations

from typing import Literal

from ..base.events import WorkspaceChanged
from .decisions import discard, keep, undo
from .ledger import Entry, Record

__all__ = ["ACTIONS", "CARD_NAMES", "ChangedText", "changes_event", "decide"]

ACTIONS = ("keep", "discard", "undo")
"""The decisions a person can make on a command's changes."""
CARD_NAMES = 3
"""Applied paths a card names (the counts cover the rest)."""
CARD_HELD = 5
"""Held changes a card lists one by one (``held_count`` says how many in all)."""


class ChangedText(str):
    """A tool's text result carrying the record of the command's changes (for the card).

    A ``str``: the model, cassettes and exact-output tests see the same text as before."""

    record: Record | None = None

    @classmethod
    def of(cls, text: str, record: Record | None) -> str:
        """``text`` carrying ``record`` (plain ``text`` when there is none)."""
        if record is None:
            return text
        out = cls(text)
        out.record = record
        return out


def _counts(applied: list[Entry]) -> dict[str, int]:
    counts = {"added": 0, "changed": 0, "removed": 0}
    for e in applied:
        if e.tree or not e.is_dir:
            counts[e.kind] += e.files
    if not any(counts.values()):  # only folders: count them
        for e in applied:
            counts[e.kind] += 1
    return counts


def changes_event(call_id: str, record: Record | None) -> WorkspaceChanged | None:
    """The card's data for the command ``record`` of the call ``call_id``; None when the
    command changed nothing."""
    if record is None or not (record.applied or record.held):
        return None
    files = [e for e in record.applied if e.tree or not e.is_dir] or record.applied
    counts = _counts(record.applied)
    return WorkspaceChanged(
        call_id=call_id, record_id=record.id, tool=record.tool, added=counts["added"],
        changed=counts["changed"], removed=counts["removed"],
        names=[e.path for e in files[:CARD_NAMES]],
        held=[{"path": e.path, "kind": e.kind, "reason": e.reason}
              for e in record.held[:CARD_HELD]],
        held_count=len(record.held), undo_note=record.undo_note,
    )


def decide(action: Literal["keep", "discard", "undo"] | str, record_id: str) -> str:
    """Keep, discard or undo the changes of command ``record_id``: one line for the person.

    Only a person calls this (a typed ``%agent`` command, a click on the card); no tool does.

    Raises:
        DecisionError: unknown action or command, already decided, changed since.
    """
    from .decisions import DecisionError

    fn = {"keep": keep, "discard": discard, "undo": undo}.get(action)
    if fn is None:
        raise DecisionError(f"Unknown decision {action!r} (keep, discard or undo).")
    return fn(record_id)
