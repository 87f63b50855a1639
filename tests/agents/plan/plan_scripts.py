"""Argument builders for scripted ``update_plan`` / ``ask_agent`` calls, and event helpers."""

from __future__ import annotations

from typing import Any

OPTIONS = ["Option A", "Option B", "Option C"]


def step(sid: str, title: str = "a", status: str = "pending") -> dict[str, Any]:
    """One plan step as the model sends it."""
    return {"id": sid, "title": title, "description": "x", "acceptanceCriteria": [],
            "status": status}


def set_plan(*ids: str) -> dict[str, Any]:
    """``update_plan`` arguments that set a plan with pending steps ``ids``."""
    return {"updates": [{"action": "set_plan", "plan": {
        "task": "T", "description": "D", "steps": [step(i) for i in ids or ("1",)]}}]}


def step_done(*ids: str) -> dict[str, Any]:
    """``update_plan`` arguments marking steps done (with a summary, so no warning)."""
    return {"updates": [{"action": "update_step", "stepId": i, "status": "done",
                         "outputSummary": "ok"} for i in ids]}


def ask(question: str = "Which one?", options: list[str] | None = None) -> dict[str, Any]:
    """Valid ``ask_agent`` arguments."""
    return {"reason": "r", "blockerType": "ambiguous_goal", "question": question,
            "options": list(options or OPTIONS)}


def events_of(run: Any, kind: str) -> list[Any]:
    """The run's events of one ``type``."""
    return [e for e in run.events if e.type == kind]


def tool_names(request: dict[str, Any]) -> list[str]:
    """Names of the tools a recorded request offered, in order."""
    return [t["function"]["name"] for t in request.get("tools") or []]
