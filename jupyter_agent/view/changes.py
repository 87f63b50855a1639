"""The lines of a sandboxed command's change row, for the saved markdown and plain text.

The live card and the JupyterLab renderer draw the same row with buttons
(``ui/static/changes.js``); a saved notebook has no kernel to press them, so these lines say
what happened and which ``%agent`` command acts instead (docs/sandbox.md).
"""

from __future__ import annotations

from ..base.jsontypes import (
    ReadOnlyJSON,
    int_field,
    list_field,
    object_field,
    object_list,
    str_field,
)

__all__ = ["VERBS", "changes_lines", "has_open_decisions", "held_state", "open_actions"]

VERBS = {"added": "wrote", "changed": "replaced", "removed": "removed"}
"""How a held change is said: ``bash wrote `pyarrow.py`, a module the kernel could import``."""

_COUNTS = ("added", "changed", "removed")


def _names(names: list[str], total: int) -> str:
    more = total - len(names)
    return ", ".join(f"`{n}`" for n in names) + (f" and {more} more" if more > 0 else "")


def _decided(ch: ReadOnlyJSON, action: str) -> bool:
    return any(d.get("ok") and d.get("action") in ((action,) if action == "undo"
                                                     else ("keep", "discard"))
               for d in object_list(ch, "decided"))


def held_state(ch: ReadOnlyJSON) -> str:
    """``held``, or ``kept`` / ``discarded`` once a person decided."""
    for d in object_list(ch, "decided"):
        if d.get("ok") and d.get("action") in ("keep", "discard"):
            return "kept" if d["action"] == "keep" else "discarded"
    return "held"


def open_actions(ch: ReadOnlyJSON) -> list[str]:
    """The decisions still open on the row: ``keep``/``discard`` for held changes, ``undo``
    for applied ones (a decision that succeeded closes its own)."""
    out: list[str] = []
    if ch.get("held_count") and not _decided(ch, "keep"):
        out += ["keep", "discard"]
    if sum(int_field(ch, k) for k in _COUNTS) and not _decided(ch, "undo"):
        out.append("undo")
    return out


def changes_lines(ch: ReadOnlyJSON, *, static: bool = True) -> list[str]:
    """One line per fact of the row (markdown code spans around paths); with ``static``, the
    last line names the commands that act on it from a new cell."""
    tool = ch.get("tool") or "the command"
    counts = [f"{ch[k]} {k}" for k in _COUNTS if ch.get(k)]
    lines: list[str] = []
    if counts:
        total = sum(int_field(ch, k) for k in _COUNTS)
        names = [str(n) for n in list_field(ch, "names")]
        lines.append(f"{tool} changed the workspace: {', '.join(counts)} "
                     f"({_names(names, total)})"
                     + (", undone" if _decided(ch, "undo") else ""))
    if ch.get("undo_note"):
        lines.append(f"Undo is partial: {ch['undo_note']}")
    held = object_list(ch, "held")
    for h in held:
        lines.append(f"{tool} {VERBS.get(str_field(h, 'kind'), 'changed')} "
                     f"`{h.get('path', '')}`, {h.get('reason', '')}: {held_state(ch)}")
    more = int_field(ch, "held_count") - len(held)
    if more > 0:
        lines.append(f"and {more} more held change(s)")
    for d in object_list(ch, "decided"):
        lines.append(("" if d.get("ok") else "refused: ") + str(d.get("message", "")))
    acts = open_actions(ch)
    if static and acts:
        rid = ch.get("record_id", "")
        lines.append("To decide, run in a new cell: " +
                     " or ".join(f"`%agent {a} {rid}`" for a in acts))
    return lines


def has_open_decisions(view: ReadOnlyJSON) -> bool:
    """Whether a tool card of ``view`` has a change row with a decision still open."""
    return any(i.get("kind") == "tool" and open_actions(object_field(i, "changes"))
               for i in object_list(view, "items"))
