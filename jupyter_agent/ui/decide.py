"""A click on a change row's Keep, Discard or Undo button (docs/sandbox.md).

The widget sends ``{type: "decide", call_id, action}``; the command's id comes from the
kernel's own view of that call (the data its ``workspace_changed`` event carried), never from
the message, so a front end cannot name another command. The decision goes through
:func:`jupyter_agent.sandbox.decide`, the same function ``%agent keep|discard|undo ID`` calls;
its one line (done, or refused and why) is added to the row.
"""

from __future__ import annotations

from ..base.jsontypes import JSONObject, ReadOnlyJSON, as_list, as_object

__all__ = ["decide_click"]


def decide_click(view: JSONObject, msg: ReadOnlyJSON) -> JSONObject | None:
    """Apply the click ``msg`` to the row of its call in ``view``; the outcome appended to
    the row's ``decided`` (``{"action", "ok", "message"}``), or None when the click names no
    row with changes (nothing happens)."""
    from ..sandbox import ACTIONS, DecisionError, decide

    call_id, action = msg.get("call_id"), msg.get("action")
    changes = next((ch for i in reversed(as_list(view.get("items")))
                    if isinstance(i, dict) and i.get("kind") == "tool"
                    and i.get("call_id") == call_id
                    and (ch := as_object(i.get("changes"))) is not None), None)
    if changes is None or not isinstance(action, str):
        return None
    outcome: JSONObject
    if action not in ACTIONS:
        outcome = {"action": action[:20], "ok": False, "message": f"Unknown decision {action[:20]!r}."}
    else:
        try:
            outcome = {"action": action, "ok": True,
                       "message": decide(action, str(changes.get("record_id")))}
        except (DecisionError, OSError) as exc:
            outcome = {"action": action, "ok": False, "message": str(exc).splitlines()[0]}
    decided = changes.get("decided")
    if not isinstance(decided, list):
        decided = changes["decided"] = []
    decided.append(outcome)
    return outcome
