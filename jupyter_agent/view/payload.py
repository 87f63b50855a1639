"""The saved run payload's event log, without the text the view already holds.

A saved run (``application/vnd.jupyter-agent.run+json``) carries its view (what every renderer
draws) and its event log (what replay comparison and tools read). Both hold every tool output,
tool argument and answer text, so a long run was saved twice over. Since format version 2 an
event field whose text is exactly the same as its view item's is left out and named in the
event's ``from_view`` list; :func:`payload_events` puts it back. Nothing is lost: a field is
left out only when its item is found again without doubt (the one tool card with that
``call_id``, the one text or reasoning item of that round) and holds the very same string,
and the saved view is the one the events are restored from.

Short fields (under :data:`MIN_SHARED_CHARS`) stay inline: they cost little and keep the log
readable on its own.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ..events import merge_deltas

__all__ = ["MIN_SHARED_CHARS", "share_with_view", "payload_events"]

MIN_SHARED_CHARS = 64
"""Fields shorter than this stay in the event."""

# event type -> (the field, the view item kind that holds it, how the item is found)
_SHARED = {
    "tool_returned": ("output", "tool", "call_id"),
    "tool_called": ("arguments", "tool", "call_id"),
    "text_delta": ("text", "text", "round"),
    "reasoning_delta": ("text", "reasoning", "round"),
}


def _index(view: dict[str, Any]) -> dict[tuple[str, Any], dict[str, Any] | None]:
    """View items by (kind, call_id or round); None where the key is not unique."""
    counts: Counter[tuple[str, Any]] = Counter()
    found: dict[tuple[str, Any], dict[str, Any] | None] = {}
    for item in view.get("items") or []:
        if not isinstance(item, dict):
            continue
        kind = item.get("kind")
        key = (kind, item.get("call_id") if kind == "tool" else item.get("round"))
        counts[key] += 1
        found[key] = item if counts[key] == 1 else None
    return found


def _item_for(event: dict[str, Any], index: dict[tuple[str, Any], dict[str, Any] | None]
              ) -> tuple[str, dict[str, Any]] | None:
    spec = _SHARED.get(event.get("type", ""))
    if spec is None:
        return None
    field, kind, by = spec
    item = index.get((kind, event.get(by)))
    return (field, item) if item is not None else None


def share_with_view(view: dict[str, Any], events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``events`` (JSON, deltas merged) with the fields the view holds left out.

    The input events are not modified.
    """
    index = _index(view)
    out: list[dict[str, Any]] = []
    for event in merge_deltas(events):
        hit = _item_for(event, index)
        if hit is not None:
            field, item = hit
            value = event.get(field)
            if (isinstance(value, str) and len(value) >= MIN_SHARED_CHARS
                    and item.get(field) == value):
                event = {k: v for k, v in event.items() if k != field}
                event["from_view"] = [field]
        out.append(event)
    return out


def payload_events(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """The full event log of a saved run payload, any format version.

    Version 1 payloads hold it as is; later ones have fields restored from the view. An event
    whose item cannot be found (a payload edited by hand) keeps the field out, never a wrong
    value.
    """
    events = payload.get("events") or []
    if not any(isinstance(e, dict) and "from_view" in e for e in events):
        return list(events)
    view = payload.get("view") if isinstance(payload.get("view"), dict) else {}
    index = _index(view)
    out: list[dict[str, Any]] = []
    for event in events:
        if isinstance(event, dict) and "from_view" in event:
            hit = _item_for(event, index)
            event = {k: v for k, v in event.items() if k != "from_view"}
            if hit is not None and isinstance(hit[1].get(hit[0]), str):
                event[hit[0]] = hit[1][hit[0]]
        out.append(event)
    return out
