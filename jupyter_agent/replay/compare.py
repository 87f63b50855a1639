"""Comparing runs: a recording and its replay must tell the same story.

Times, durations, run ids and tool-call ids differ from one execution to the next; and the
results of tools run in parallel arrive in whatever order they finish. Everything else (event
types, texts, tool calls and their outputs, usage, statuses) must be equal. A saved notebook
holds a run's view, not its events (``view/bundle.py``): notebooks compare by view.
"""

from __future__ import annotations

import json
import re

from ..base.jsontypes import JSONObject, JSONValue, object_field

__all__ = ["VOLATILE_FIELDS", "comparable_events", "comparable_view", "payload_view",
           "comparable_text", "comparable_outputs"]

VOLATILE_FIELDS = frozenset({"t", "seconds", "run_id"})
"""Event fields left out of a comparison."""


_TOOL_RUN = frozenset({"tool_started", "tool_returned"})


def comparable_events(events: list[JSONObject]) -> list[JSONObject]:
    """``events`` (JSON dicts) without volatile fields, with tool-call and plan ids replaced
    by ``call#N`` / ``plan#N`` and each run of consecutive ``tool_started`` /
    ``tool_returned`` events in one order (starts, then results, in call order)."""
    ids: dict[str, str] = {}
    plans: dict[str, str] = {}
    cells: dict[str, str] = {}
    out: list[JSONObject] = []
    for e in events:
        d = {k: v for k, v in e.items() if k not in VOLATILE_FIELDS}
        call_id = d.get("call_id")
        if isinstance(call_id, str):
            d["call_id"] = ids.setdefault(call_id, f"call#{len(ids) + 1}")
        plan = d.get("plan")
        plan_id = plan.get("planId") if isinstance(plan, dict) else None
        if isinstance(plan, dict) and isinstance(plan_id, str):  # generated at random
            d["plan"] = {**plan, "planId": plans.setdefault(plan_id, f"plan#{len(plans) + 1}")}
        proposal = d.get("proposal")
        cell_id = proposal.get("id") if isinstance(proposal, dict) else None
        if isinstance(proposal, dict) and isinstance(cell_id, str):  # a proposed cell's id
            d["proposal"] = {**proposal, "id": cells.setdefault(cell_id,
                                                                f"cell#{len(cells) + 1}")}
        out.append(d)
    i = 0
    while i < len(out):
        j = i
        while j < len(out) and out[j].get("type") in _TOOL_RUN:
            j += 1
        if j - i > 1:
            # Parallel calls start and finish in any order: starts first, then results, each
            # in call order.
            out[i:j] = sorted(out[i:j], key=lambda d: (d["type"] != "tool_started",
                                                       int(str(d["call_id"])[5:])))
        i = max(j, i + 1)
    return out


def payload_view(payload: JSONValue) -> JSONObject:
    """The view a saved run payload stands for, as this version draws it.

    A format-1 payload also holds its events: they are reduced again, so a recording made
    before a change to the reducer still compares with a replay made after it. A later
    payload holds the view only: a reducer change that alters views needs the notebook
    re-recorded (``replay/rerecord.py``).
    """
    from ..base.events import EVENT_ADAPTER
    from ..view.reduce import reduce_events

    if not isinstance(payload, dict):
        return {}
    events = payload.get("events")
    if payload.get("version", 1) == 1 and isinstance(events, list) and events:
        try:
            return reduce_events([EVENT_ADAPTER.validate_python(e) for e in events])
        except (ValueError, KeyError, TypeError):  # not events this version reads: the view
            pass
    view = payload.get("view")
    return view if isinstance(view, dict) else {}


_VOLATILE_VIEW_FIELDS = frozenset({"run_id", "started_at", "seconds"})


def comparable_view(view: JSONObject) -> JSONValue:
    """A run's view state (what a saved run holds) without what differs from one execution to
    the next: times, durations and run ids left out, tool-call and plan ids replaced by
    ``call#N`` / ``plan#N`` in order of appearance. Tool cards are in call order already."""
    ids: dict[str, str] = {}
    plans: dict[str, str] = {}
    cells: dict[str, str] = {}

    def scrub(value: JSONValue) -> JSONValue:
        if isinstance(value, list):
            return [scrub(v) for v in value]
        if not isinstance(value, dict):
            return value
        out: JSONObject = {}
        for key, v in sorted(value.items()):  # a saved notebook's JSON has its keys sorted
            if key in _VOLATILE_VIEW_FIELDS:
                continue
            if key == "call_id" and isinstance(v, str):
                out[key] = ids.setdefault(v, f"call#{len(ids) + 1}")
            elif key == "planId" and isinstance(v, str):
                out[key] = plans.setdefault(v, f"plan#{len(plans) + 1}")
            elif key == "proposal" and isinstance(v, dict) and isinstance(v.get("id"), str):
                # A proposed cell's id is random: numbered in order, like call ids.
                numbered = {**v, "id": cells.setdefault(str(v["id"]), f"cell#{len(cells) + 1}")}
                out[key] = scrub(numbered)
            else:
                out[key] = scrub(v)
        return out

    return scrub(view)


_VOLATILE_TEXT = [
    # A batch's speed is shown only once it ran a second (batch/progress.py): whether a replay
    # took that long depends on the machine, so the whole part is volatile.
    (re.compile(r" · [\d,]+\.\d+ items/min"), ""),
    (re.compile(r"\brun_[0-9a-f]{12}(?:[0-9a-f]{4})?\b"), "run_<id>"),
    (re.compile(r"\b\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2}(\.\d+)?)?\b"), "<date>"),
    (re.compile(r"\d+\.\d+"), "<number>"),
    (re.compile(r"\bmodel_id\W+[0-9a-f]{32}\b"), "model_id <id>"),
]


def comparable_text(text: str) -> str:
    """``text`` with run ids, dates and decimal numbers (durations, costs) masked."""
    for pattern, repl in _VOLATILE_TEXT:
        text = pattern.sub(repl, text)
    return text


def comparable_outputs(outputs: list[JSONObject]) -> list[tuple[object, ...]]:
    """A notebook cell's outputs as they must agree between a recording and its replay:
    run payloads by their comparable view (every format holds it), text with volatile parts
    masked, widget views and markdown renderings (drawn from the same view) left out. The
    items are only compared: ``("stream", name, text)``, ``("run", view)``,
    ``("plain", text)`` or ``("error", name, text)``."""
    from ..base.events import RUN_MIME_TYPE

    out: list[tuple[object, ...]] = []
    for o in outputs:
        kind = o.get("output_type")
        if kind == "stream":
            out.append(("stream", o.get("name"), comparable_text(_joined(o.get("text")))))
        elif kind in ("display_data", "execute_result"):
            data = object_field(o, "data")
            if RUN_MIME_TYPE in data:
                payload = data[RUN_MIME_TYPE]
                if isinstance(payload, str):
                    payload = json.loads(payload)
                out.append(("run", comparable_view(payload_view(payload))))
            elif "text/plain" in data:
                out.append(("plain", comparable_text(_joined(data["text/plain"]))))
        elif kind == "error":
            out.append(("error", o.get("ename"), comparable_text(str(o.get("evalue")))))
    # Output text printed by a stream in pieces may be split differently: merge neighbours.
    merged: list[tuple[object, ...]] = []
    for item in out:
        if merged and item[0] == "stream" and merged[-1][0] == "stream" and \
                merged[-1][1] == item[1]:
            merged[-1] = ("stream", item[1], f"{merged[-1][2]}{item[2]}")  # two texts
        else:
            merged.append(item)
    return merged


def _joined(text: JSONValue) -> str:
    return "".join(map(str, text)) if isinstance(text, list) else str(text or "")
