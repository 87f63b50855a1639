"""Comparing runs: a recording and its replay must tell the same story.

Times, durations, run ids and tool-call ids differ from one execution to the next; and the
results of tools run in parallel arrive in whatever order they finish. Everything else (event
types, texts, tool calls and their outputs, usage, statuses) must be equal.
"""

from __future__ import annotations

from typing import Any

__all__ = ["VOLATILE_FIELDS", "comparable_events"]

VOLATILE_FIELDS = frozenset({"t", "seconds", "run_id"})
"""Event fields left out of a comparison."""


def comparable_events(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``events`` (JSON dicts) without volatile fields, with tool-call ids replaced by
    ``call#N`` and each run of consecutive ``tool_returned`` events in call order."""
    ids: dict[str, str] = {}
    out: list[dict[str, Any]] = []
    for e in events:
        d = {k: v for k, v in e.items() if k not in VOLATILE_FIELDS}
        if isinstance(d.get("call_id"), str):
            d["call_id"] = ids.setdefault(d["call_id"], f"call#{len(ids) + 1}")
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
