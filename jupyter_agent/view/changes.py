"""The lines of a sandboxed command's change row, for the saved markdown and plain text.

The live card and the JupyterLab renderer draw the same row with buttons
(``ui/static/changes.js``); a saved notebook has no kernel to press them, so these lines say
what happened and which ``%agent`` command acts instead (docs/sandbox.md).
"""

from __future__ import annotations

from typing import Any

__all__ = ["VERBS", "changes_lines", "has_open_decisions", "held_state", "open_actions"]

VERBS = {"added": "wrote", "changed": "replaced", "removed": "removed"}
"""How a held change is said: ``bash wrote `pyarrow.py`, a module the kernel could import``."""


def _names(names: list[str], total: int) -> str:
    more = total - len(names)
    return ", ".join(f"`{n}`" for n in names) + (f" and {more} more" if more > 0 else "")


def _decided(ch: dict[str, Any], action: str) -> bool:
    return any(d.get("ok") and d.get("action") in ((action,) if action == "undo"
                                                     else ("keep", "discard"))
               for d in ch.get("decided") or [])


def held_state(ch: dict[str, Any]) -> str:
    """``held``, or ``kept`` / ``discarded`` once a person decided."""
    for d in ch.get("decided") or []:
        if d.get("ok") and d.get("action") in ("keep", "discard"):
            return "kept" if d["action"] == "keep" else "discarded"
    return "held"


def open_actions(ch: dict[str, Any]) -> list[str]:
    """The decisions still open on the row: ``keep``/``discard`` for held changes, ``undo``
    for applied ones (a decision that succeeded closes its own)."""
    out: list[str] = []
    if ch.get("held_count") and not _decided(ch, "keep"):
        out += ["keep", "discard"]
    if ch.get("added", 0) + ch.get("changed", 0) + ch.get("removed", 0) and not _decided(ch, "undo"):
        out.append("undo")
    return out


def changes_lines(ch: dict[str, Any], *, static: bool = True) -> list[str]:
    """One line per fact of the row (markdown code spans around paths); with ``static``, the
    last line names the commands that act on it from a new cell."""
    tool = ch.get("tool") or "the command"
    counts = [f"{ch[k]} {k}" for k in ("added", "changed", "removed") if ch.get(k)]
    lines: list[str] = []
    if counts:
        total = sum(ch.get(k, 0) for k in ("added", "changed", "removed"))
        lines.append(f"{tool} changed the workspace: {', '.join(counts)} "
                     f"({_names(list(ch.get('names') or []), total)})"
                     + (", undone" if _decided(ch, "undo") else ""))
    if ch.get("undo_note"):
        lines.append(f"Undo is partial: {ch['undo_note']}")
    held = list(ch.get("held") or [])
    for h in held:
        lines.append(f"{tool} {VERBS.get(h.get('kind', ''), 'changed')} `{h.get('path', '')}`, "
                     f"{h.get('reason', '')}: {held_state(ch)}")
    more = int(ch.get("held_count") or 0) - len(held)
    if more > 0:
        lines.append(f"and {more} more held change(s)")
    for d in ch.get("decided") or []:
        lines.append(("" if d.get("ok") else "refused: ") + str(d.get("message", "")))
    acts = open_actions(ch)
    if static and acts:
        rid = ch.get("record_id", "")
        lines.append("To decide, run in a new cell: " +
                     " or ".join(f"`%agent {a} {rid}`" for a in acts))
    return lines


def has_open_decisions(view: dict[str, Any]) -> bool:
    """Whether a tool card of ``view`` has a change row with a decision still open."""
    return any(i.get("kind") == "tool" and isinstance(i.get("changes"), dict)
               and open_actions(i["changes"]) for i in view.get("items") or [])
