"""Comparing runs: a recording and its replay must tell the same story.

Times, durations, run ids and tool-call ids differ from one execution to the next; and the
results of tools run in parallel arrive in whatever order they finish. Everything else (event
types, texts, tool calls and their outputs, usage, statuses) must be equal.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["VOLATILE_FIELDS", "comparable_events", "comparable_text", "comparable_outputs"]

VOLATILE_FIELDS = frozenset({"t", "seconds", "run_id"})
"""Event fields left out of a comparison."""


def comparable_events(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``events`` (JSON dicts) without volatile fields, with tool-call and plan ids replaced
    by ``call#N`` / ``plan#N`` and each run of consecutive ``tool_returned`` events in call
    order."""
    ids: dict[str, str] = {}
    plans: dict[str, str] = {}
    out: list[dict[str, Any]] = []
    for e in events:
        d = {k: v for k, v in e.items() if k not in VOLATILE_FIELDS}
        if isinstance(d.get("call_id"), str):
            d["call_id"] = ids.setdefault(d["call_id"], f"call#{len(ids) + 1}")
        plan = d.get("plan")
        if isinstance(plan, dict) and "planId" in plan:  # generated at random by the agent
            d["plan"] = {**plan, "planId": plans.setdefault(plan["planId"], f"plan#{len(plans) + 1}")}
        out.append(d)
    i = 0
    while i < len(out):
        j = i
        while j < len(out) and out[j].get("type") == "tool_returned":
            j += 1
        if j - i > 1:  # parallel results finish in any order: put them in call order
            out[i:j] = sorted(out[i:j], key=lambda d: int(str(d["call_id"])[5:]))
        i = max(j, i + 1)
    return out


_VOLATILE_TEXT = [
    (re.compile(r"\brun_[0-9a-f]{12}\b"), "run_<id>"),
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
    run payloads by their comparable events, text with volatile parts masked, widget views
    and markdown renderings (drawn from the same events) left out."""
    from ..events import RUN_MIME_TYPE
    from ..view.payload import payload_events

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
                out.append(("run", comparable_events(payload_events(payload))))
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
