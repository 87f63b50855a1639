"""Comparing runs: a recording and its replay must tell the same story.

Times, durations, run ids and tool-call ids differ from one execution to the next; and the
results of tools run in parallel arrive in whatever order they finish. Everything else (event
types, texts, tool calls and their outputs, usage, statuses) must be equal. A saved notebook
holds a run's view, not its events (``view/bundle.py``): notebooks compare by view.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["VOLATILE_FIELDS", "comparable_events", "comparable_view", "payload_view",
           "comparable_text", "comparable_outputs"]

VOLATILE_FIELDS = frozenset({"t", "seconds", "run_id"})
"""Event fields left out of a comparison."""


_TOOL_RUN = frozenset({"tool_started", "tool_returned"})


def comparable_events(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``events`` (JSON dicts) without volatile fields, with tool-call and plan ids replaced
    by ``call#N`` / ``plan#N`` and each run of consecutive ``tool_started`` /
    ``tool_returned`` events in one order (starts, then results, in call order)."""
    ids: dict[str, str] = {}
    plans: dict[str, str] = {}
    cells: dict[str, str] = {}
    out: list[dict[str, Any]] = []
    for e in events:
        d = {k: v for k, v in e.items() if k not in VOLATILE_FIELDS}
        if isinstance(d.get("call_id"), str):
            d["call_id"] = ids.setdefault(d["call_id"], f"call#{len(ids) + 1}")
        plan = d.get("plan")
        if isinstance(plan, dict) and "planId" in plan:  # generated at random by the agent
            d["plan"] = {**plan, "planId": plans.setdefault(plan["planId"], f"plan#{len(plans) + 1}")}
        proposal = d.get("proposal")
        if isinstance(proposal, dict) and "id" in proposal:  # a proposed cell's random id
            d["proposal"] = {**proposal, "id": cells.setdefault(proposal["id"],
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


def payload_view(payload: Any) -> dict[str, Any]:
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


def comparable_view(view: dict[str, Any]) -> Any:
    """A run's view state (what a saved run holds) without what differs from one execution to
    the next: times, durations and run ids left out, tool-call and plan ids replaced by
    ``call#N`` / ``plan#N`` in order of appearance. Tool cards are in call order already."""
    ids: dict[str, str] = {}
    plans: dict[str, str] = {}
    cells: dict[str, str] = {}

    def scrub(value: Any) -> Any:
        if isinstance(value, list):
            return [scrub(v) for v in value]
        if not isinstance(value, dict):
            return value
        out: dict[str, Any] = {}
        for key, v in sorted(value.items()):  # a saved notebook's JSON has its keys sorted
            if key in _VOLATILE_VIEW_FIELDS:
                continue
            if key == "call_id" and isinstance(v, str):
                out[key] = ids.setdefault(v, f"call#{len(ids) + 1}")
            elif key == "planId" and isinstance(v, str):
                out[key] = plans.setdefault(v, f"plan#{len(plans) + 1}")
            elif key == "proposal" and isinstance(v, dict) and isinstance(v.get("id"), str):
                # A proposed cell's id is random: numbered in order, like call ids.
                numbered = {**v, "id": cells.setdefault(v["id"], f"cell#{len(cells) + 1}")}
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


def comparable_outputs(outputs: list[dict[str, Any]]) -> list[Any]:
    """A notebook cell's outputs as they must agree between a recording and its replay:
    run payloads by their comparable view (every format holds it), text with volatile parts
    masked, widget views and markdown renderings (drawn from the same view) left out."""
    from ..base.events import RUN_MIME_TYPE

    out: list[Any] = []
    for o in outputs:
        kind = o.get("output_type")
        if kind == "stream":
            out.append(("stream", o.get("name"), comparable_text(_joined(o.get("text")))))
        elif kind in ("display_data", "execute_result"):
            data = o.get("data") or {}
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
    merged: list[Any] = []
    for item in out:
        if merged and item[0] == "stream" and merged[-1][0] == "stream" and \
                merged[-1][1] == item[1]:
            merged[-1] = ("stream", item[1], merged[-1][2] + item[2])
        else:
            merged.append(item)
    return merged


def _joined(text: Any) -> str:
    return "".join(text) if isinstance(text, list) else str(text or "")
