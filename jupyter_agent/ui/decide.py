"""A click on a change row's Keep, Discard or Undo button (docs/sandbox.md).

The widget sends ``{type: "decide", call_id, action}``; the command's id comes from the
kernel's own view of that call (the data its ``workspace_changed`` event carried), never from
the message, so a front end cannot name another command. The decision goes through
:func:`jupyter_agent.sandbox.decide`, the same function ``%agent keep|discard|undo ID`` calls;
its one line (done, or refused and why) is added to the row.
"""

from __future__ import annotations

from typing import Any

__all__ = ["decide_click"]


def decide_click(view: dict[str, Any], msg: dict[str, Any]) -> dict[str, Any] | None:
    """Apply the click ``msg`` to the row of its call in ``view``; the outcome appended to
    the row's ``decided`` (``{"action", "ok", "message"}``), or None when the click names no
    row with changes (nothing happens)."""
    from ..sandbox import ACTIONS, DecisionError, decide

    call_id, action = msg.get("call_id"), msg.get("action")
    card = next((i for i in reversed(view.get("items") or [])
                 if i.get("kind") == "tool" and i.get("call_id") == call_id
                 and isinstance(i.get("changes"), dict)), None)
    if card is None or not isinstance(action, str):
        return None
    changes = card["changes"]
    if action not in ACTIONS:
        outcome = {"action": action[:20], "ok": False, "message": f"Unknown decision {action[:20]!r}."}
    else:
        try:
            outcome = {"action": action, "ok": True,
                       "message": decide(action, str(changes["record_id"]))}
        except (DecisionError, OSError) as exc:
            outcome = {"action": action, "ok": False, "message": str(exc).splitlines()[0]}
    changes.setdefault("decided", []).append(outcome)
    return outcome
