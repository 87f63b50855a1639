"""The stop gate: may the planning agent finish now? (docs/behaviour.md §6.8)

Every time the model answers without tool calls (a stop candidate), the loop asks the gate.
A refusal comes with a user-role feedback message that tells the model what is still open; the
draft is withdrawn and the loop goes on. After ``max_rejections`` refusals, the next refused
candidate ends the run ``incomplete``: the draft is kept and the open items are listed.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from .constants import MAX_STOP_GATE_REJECTIONS, RESOLVED_STATUSES
from .state import Plan

__all__ = [
    "GateDecision",
    "StopGateCounter",
    "StopVerdict",
    "evaluate_stop_gate",
    "request_tool_choice",
    "would_allow_stop",
]

_OPEN = "<stop_gate_feedback>"
_CLOSE = "</stop_gate_feedback>"
_CANNOT_FINISH = "You cannot finish yet."
_REQUIRE_PLAN_FEEDBACK = (
    f"{_OPEN}\n{_CANNOT_FINISH}\n"
    "The user explicitly requested a plan, plan mode, step breakdown, or per-step plan "
    "updates.\n"
    "Call update_plan with action set_plan before final answer. Keep the plan concise, then "
    "execute or update the steps until resolved.\n"
    f"{_CLOSE}"
)


class GateDecision(BaseModel):
    """The gate's answer for one stop candidate."""

    allow: bool
    reason: str
    """``No active plan.``, ``Active plan is complete.``, or why stopping is refused."""
    feedback: str = ""
    """On refusal: the text of the user-role message added for the model."""
    missing: list[str] = Field(default_factory=list)
    """The unresolved items listed in the feedback, in order (a step can appear twice)."""


def _has_missing_items(plan: Plan) -> bool:
    """Whether :func:`_missing_items` would list anything (without writing the lines)."""
    return any(step.needs_replan or step.status not in RESOLVED_STATUSES
               or (step.status == "blocked" and not step.blocker) for step in plan.steps)


def _missing_items(plan: Plan) -> list[str]:
    items = [f"{step.line()} needs replan." for step in plan.steps if step.needs_replan]
    items += [step.line() for step in plan.steps if step.status not in RESOLVED_STATUSES]
    items += [
        f"{step.line()} is blocked without blocker."
        for step in plan.steps
        if step.status == "blocked" and not step.blocker
    ]
    return items


def evaluate_stop_gate(
    active_plan: Plan | None,
    *,
    require_plan: bool = False,
    runtime_tool_called_since_last_plan_update: bool = False,
) -> GateDecision:
    """Decide whether the run may stop now, and what to tell the model if not."""
    if active_plan is None:
        if require_plan:
            return GateDecision(
                allow=False,
                reason="Explicit plan requirement has no active plan.",
                feedback=_REQUIRE_PLAN_FEEDBACK,
            )
        return GateDecision(allow=True, reason="No active plan.")
    missing = _missing_items(active_plan)
    if not missing and not runtime_tool_called_since_last_plan_update:
        return GateDecision(allow=True, reason="Active plan is complete.")
    if missing:
        reason = "Active plan is not complete."
        body = ["The active plan still has unresolved items:", *missing]
    else:
        reason = "Runtime tool result is not recorded in active plan."
        body = [
            "The active plan is resolved, but recent runtime tool results are not recorded yet."
        ]
    hint = (
        "\nYou used runtime tools after the last plan update. Call update_plan to record the "
        "result before final answer."
        if runtime_tool_called_since_last_plan_update
        else ""
    )
    lines = [
        _OPEN,
        _CANNOT_FINISH,
        *body,
        hint,
        (
            "Continue the task. Use runtime tools if more information is needed, or call "
            "update_plan to complete, block, skip, or revise these steps."
        ),
        _CLOSE,
    ]
    # Empty lines are dropped, but the hint's own leading newline leaves a blank line.
    feedback = "\n".join(line for line in lines if line)
    return GateDecision(allow=False, reason=reason, feedback=feedback, missing=missing)


def would_allow_stop(
    active_plan: Plan | None,
    *,
    require_plan: bool = False,
    runtime_tool_called_since_last_plan_update: bool = False,
) -> bool:
    """True when the gate would let the run stop in the current state (what
    ``evaluate_stop_gate(...).allow`` says, without writing the feedback: this is asked before
    every request, and the feedback lists every open step)."""
    if active_plan is None:
        return not require_plan
    return not runtime_tool_called_since_last_plan_update and not _has_missing_items(active_plan)


def request_tool_choice(
    active_plan: Plan | None,
    *,
    require_plan: bool = False,
    runtime_tool_called_since_last_plan_update: bool = False,
) -> Literal["auto", "none"]:
    """``tool_choice`` for the next request: ``none`` forces a final answer.

    A final answer is forced only when a plan exists and the gate would allow stopping;
    without a plan the model is always free to call tools.
    """
    if active_plan is not None and would_allow_stop(
        active_plan,
        require_plan=require_plan,
        runtime_tool_called_since_last_plan_update=runtime_tool_called_since_last_plan_update,
    ):
        return "none"
    return "auto"


class StopVerdict(BaseModel):
    """What the loop does with one stop candidate."""

    action: Literal["stop", "retry", "incomplete"]
    """``stop``: finish with the draft. ``retry``: withdraw the draft, add the feedback
    message, go on. ``incomplete``: finish with the draft kept, status ``incomplete``."""
    decision: GateDecision
    rejections: int
    """Refusals so far in this run, including this one."""
    error: str | None = None
    """For ``incomplete``: ``Active plan is not complete after <n> stop checks.``"""

    def incomplete_summary(self) -> str:
        """The note shown under a kept draft: the error line, then the open items."""
        if self.action != "incomplete":
            return ""
        if self.decision.missing:
            return "\n".join([self.error or "", "Open items:", *self.decision.missing])
        return "\n".join([self.error or "", self.decision.reason])


class StopGateCounter(BaseModel):
    """Counts refusals within one run (a resume after an ask starts again at 0)."""

    max_rejections: int = MAX_STOP_GATE_REJECTIONS
    rejections: int = 0

    def check(
        self,
        active_plan: Plan | None,
        *,
        require_plan: bool = False,
        runtime_tool_called_since_last_plan_update: bool = False,
    ) -> StopVerdict:
        """Judge a stop candidate and count it if refused.

        The refusal that takes the count past ``max_rejections`` (the third, by default)
        gives ``incomplete`` instead of ``retry``.
        """
        decision = evaluate_stop_gate(
            active_plan,
            require_plan=require_plan,
            runtime_tool_called_since_last_plan_update=runtime_tool_called_since_last_plan_update,
        )
        if decision.allow:
            return StopVerdict(action="stop", decision=decision, rejections=self.rejections)
        self.rejections += 1
        if self.rejections > self.max_rejections:
            return StopVerdict(
                action="incomplete",
                decision=decision,
                rejections=self.rejections,
                error=f"Active plan is not complete after {self.rejections} stop checks.",
            )
        return StopVerdict(action="retry", decision=decision, rejections=self.rejections)
