"""The plan state machine of ``%%plan`` (docs/behaviour.md §6.5–6.7).

The model maintains its plan only through ``update_plan``. One call is an atomic batch of
operations (``set_plan``, ``update_step``, ``replace_plan``): either every operation applies or
none does, and the plan the loop holds never changes on failure.

Attributes are snake_case; the JSON (tool arguments, events, saved state) uses the
camelCase names (``planId``, ``acceptanceCriteria``, ``outputSummary``, ``needsReplan``).
"""

from __future__ import annotations

import json
import secrets
import string
from collections.abc import Mapping
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ...base.jsontypes import JSONObject
from ._validation import format_validation_error, parse_arguments_text
from .constants import RANDOM_ID_LENGTH

__all__ = [
    "Evidence",
    "EvidenceKind",
    "Plan",
    "PlanOperation",
    "PlanStep",
    "PlanUpdateResult",
    "ReplacePlanOperation",
    "SetPlanOperation",
    "StepStatus",
    "UpdatePlanArgs",
    "UpdateStepOperation",
    "apply_plan_update",
    "fallback_plan",
    "merge_stable_completed_steps",
    "parse_update_plan_args",
    "progress_line",
    "random_id",
]

StepStatus = Literal["pending", "in_progress", "done", "blocked", "skipped"]
"""Where a step stands. A status may move to any other (there is no transition table)."""

EvidenceKind = Literal["tool_result", "model_output", "user_input", "manual"]
"""Where a piece of evidence came from."""

_ID_FIRST = string.ascii_letters
_ID_REST = string.ascii_letters + string.digits


def random_id(length: int = RANDOM_ID_LENGTH) -> str:
    """A random id of ``length`` characters (letters and digits, starting with a letter)."""
    return secrets.choice(_ID_FIRST) + "".join(secrets.choice(_ID_REST) for _ in range(length - 1))


class _SpecModel(BaseModel):
    """Base of every plan shape: drops unknown keys, speaks the plan's JSON names.

    Numbers are accepted where strings are expected because models often write ``"id": 1``;
    refusing that would cost a round for no gain.
    """

    model_config = ConfigDict(
        extra="ignore",
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        coerce_numbers_to_str=True,
    )

    def to_json(self) -> JSONObject:
        """The JSON form with the camelCase names; unset optional fields are left out."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class Evidence(_SpecModel):
    """One piece of evidence that a step was carried out."""

    kind: EvidenceKind
    ref: str | None = None
    """Where to find it (a tool-call id, a file, a URL)."""
    summary: str


class PlanStep(_SpecModel):
    """One step of a plan."""

    id: str = Field(default_factory=random_id)
    title: str
    description: str
    acceptance_criteria: list[str] = Field(default_factory=list, alias="acceptanceCriteria")
    status: StepStatus = "pending"
    evidence: list[Evidence] = Field(default_factory=list)
    output_summary: str | None = Field(default=None, alias="outputSummary")
    blocker: str | None = None
    """Why the step cannot go on; the stop gate wants one on every ``blocked`` step."""
    needs_replan: bool | None = Field(default=None, alias="needsReplan")

    def line(self) -> str:
        """The step as the stop gate lists it: ``- <id>: <title> (<status>)``."""
        return f"- {self.id}: {self.title} ({self.status})"


class Plan(_SpecModel):
    """The active plan: a task and at least one step."""

    plan_id: str = Field(default_factory=random_id, alias="planId")
    task: str
    description: str
    background: str | None = None
    steps: list[PlanStep] = Field(min_length=1)


class SetPlanOperation(_SpecModel):
    """Replace any plan completely (progress and ``planId`` are not kept)."""

    action: Literal["set_plan"]
    plan: Plan
    reason: str | None = None


class UpdateStepOperation(_SpecModel):
    """Change the status (and evidence, summary, blocker) of exactly one step."""

    action: Literal["update_step"]
    step_id: str = Field(alias="stepId")
    status: StepStatus
    evidence: list[Evidence] | None = None
    output_summary: str | None = Field(default=None, alias="outputSummary")
    blocker: str | None = None
    needs_replan: bool | None = Field(default=None, alias="needsReplan")
    reason: str | None = None


class ReplacePlanOperation(_SpecModel):
    """Revise the plan, keeping its ``planId`` and every completed step."""

    action: Literal["replace_plan"]
    plan: Plan
    reason: str | None = None


PlanOperation = Annotated[
    SetPlanOperation | UpdateStepOperation | ReplacePlanOperation,
    Field(discriminator="action"),
]
"""One operation of an ``update_plan`` call, told apart by ``action``."""


class UpdatePlanArgs(_SpecModel):
    """The arguments of ``update_plan``: at least one operation."""

    updates: list[PlanOperation] = Field(min_length=1)
    reason: str | None = None


class PlanUpdateResult(BaseModel):
    """What one ``update_plan`` call did.

    ``plan`` is the plan the loop holds afterwards: the new plan on success, the unchanged
    current plan (possibly ``None``) on failure. The fallback plan of a failure (§6.7) is
    kept apart in ``display_plan`` so it can never be adopted.
    """

    ok: bool
    plan: Plan | None
    message: str
    """The tool response the model receives, success or not."""
    warnings: list[str] = Field(default_factory=list)
    failed_operation: int | None = None
    """1-based index of the operation that failed a batch."""
    fallback_label: str | None = None

    @property
    def display_plan(self) -> Plan | None:
        """The plan to show for this result: ``plan``, or the fallback plan on failure."""
        if self.plan is None and self.fallback_label is not None:
            return fallback_plan(self.fallback_label)
        return self.plan


def fallback_plan(label: str) -> Plan:
    """The placeholder plan shown for a failed update when no plan exists (never adopted)."""
    return Plan(
        task=label,
        description="",
        steps=[
            PlanStep(
                id="invalid_update",
                title="Invalid plan update",
                description="The model called update_plan with invalid or incomplete arguments.",
                acceptance_criteria=[
                    "Call update_plan with a valid set_plan or update_step payload."
                ],
                status="blocked",
                blocker="Invalid update_plan arguments.",
            )
        ],
    )


def progress_line(plan: Plan) -> str:
    """``Plan progress: D done, I in progress, P pending, B blocked, S skipped.``"""
    statuses = [step.status for step in plan.steps]  # then one C-level count per status
    counts = {status: statuses.count(status)
              for status in ("done", "in_progress", "pending", "blocked", "skipped")}
    return (
        f"Plan progress: {counts['done']} done, {counts['in_progress']} in progress, "
        f"{counts['pending']} pending, {counts['blocked']} blocked, {counts['skipped']} skipped."
    )


def _evidence_key(item: Evidence) -> str:
    return json.dumps(item.to_json(), ensure_ascii=False, separators=(",", ":"))


def _merge_evidence(old: list[Evidence], new: list[Evidence]) -> list[Evidence]:
    """Old evidence first, then new, each item once (compared by its exact JSON form)."""
    seen: set[str] = set()
    merged: list[Evidence] = []
    for item in [*old, *new]:
        key = _evidence_key(item)
        if key not in seen:
            seen.add(key)
            merged.append(item.model_copy(deep=True))
    return merged


def merge_stable_completed_steps(current: Plan, revised: Plan) -> tuple[list[PlanStep], list[str]]:
    """Merge a revised plan's steps into the current one so completed work survives.

    New step ids start ``pending`` with no evidence (the model cannot invent progress); steps
    that were ``done`` stay done; completed steps the revision dropped are appended at the end,
    each with a warning. Returns the merged steps and the warnings.
    """
    # With duplicate ids the last step wins here (update_step matches the first),
    # docs/behaviour.md §6.6; duplicates are allowed, so both behaviours are observable.
    by_id = {step.id: step for step in current.steps}
    merged: list[PlanStep] = []
    for step in revised.steps:
        old = by_id.get(step.id)
        if old is None:
            merged.append(
                step.model_copy(
                    deep=True,
                    update={
                        "status": "pending",
                        "evidence": [],
                        "output_summary": None,
                        "blocker": None,
                        "needs_replan": None,
                    },
                )
            )
        elif old.status == "done":
            merged.append(
                step.model_copy(
                    deep=True,
                    update={
                        "status": "done",
                        "evidence": _merge_evidence(old.evidence, step.evidence),
                        "output_summary": (
                            step.output_summary
                            if step.output_summary is not None
                            else old.output_summary
                        ),
                        "blocker": None,
                        "needs_replan": None,
                    },
                )
            )
        else:
            merged.append(
                step.model_copy(
                    deep=True, update={"evidence": _merge_evidence(old.evidence, step.evidence)}
                )
            )
    warnings: list[str] = []
    revised_ids = {step.id for step in revised.steps}
    for step in current.steps:
        if step.status == "done" and step.id not in revised_ids:
            merged.append(step.model_copy(deep=True))
            warnings.append(f'Reviser dropped completed step "{step.id}", merged it back.')
    return merged, warnings


class _OperationFailed(Exception):
    """One operation of a batch failed; the message goes to the model."""


def _update_step(plan: Plan | None, op: UpdateStepOperation) -> tuple[Plan, list[str]]:
    if plan is None:
        raise _OperationFailed(
            "Cannot update a plan step because no active plan exists. Use set_plan first."
        )
    try:  # the first step with the id (§6.6), found by a C-level scan
        index = [step.id for step in plan.steps].index(op.step_id)
    except ValueError:
        raise _OperationFailed(f"Unknown plan step: {op.step_id}") from None
    old = plan.steps[index]
    blocker = (op.blocker or "").strip() or (op.reason or "").strip()
    if op.status == "blocked" and not blocker:
        raise _OperationFailed("Blocked plan step must include blocker or reason.")
    warnings: list[str] = []
    summary = op.output_summary if op.output_summary is not None else old.output_summary
    # Existing evidence does not silence the warning: a step marked done should say why now.
    if op.status == "done" and not op.evidence and not summary:
        warnings.append("Done plan step should include evidence or outputSummary.")
    new_step = old.model_copy(
        deep=True,
        update={
            "status": op.status,
            "evidence": [*old.evidence, *(op.evidence or [])],
            "output_summary": summary,
            # blocker and needsReplan are cleared unless this update sends them again.
            "blocker": blocker if op.status == "blocked" else None,
            "needs_replan": True if op.needs_replan is True else None,
        },
    )
    steps = list(plan.steps)
    steps[index] = new_step
    return plan.model_copy(update={"steps": steps}), warnings


def _apply_operation(plan: Plan | None, op: PlanOperation) -> tuple[Plan, list[str]]:
    if isinstance(op, SetPlanOperation):
        return op.plan.model_copy(deep=True), []
    if isinstance(op, ReplacePlanOperation):
        if plan is None:
            return op.plan.model_copy(deep=True), []
        steps, warnings = merge_stable_completed_steps(plan, op.plan)
        revised = op.plan.model_copy(deep=True, update={"plan_id": plan.plan_id, "steps": steps})
        return revised, warnings
    return _update_step(plan, op)


def parse_update_plan_args(args: str | Mapping[str, object] | UpdatePlanArgs | None
                           ) -> UpdatePlanArgs:
    """Decode and validate ``update_plan`` arguments (raw text is decoded leniently).

    Raises ``ValueError`` with the one-line reason (no ``Invalid ...`` prefix) on failure.
    """
    if isinstance(args, UpdatePlanArgs):
        return args
    data: object
    if args is None or isinstance(args, str):
        try:
            data = parse_arguments_text(args)
        except ValueError as exc:
            raise ValueError(f"Arguments are not valid JSON: {exc}") from None
    else:
        data = dict(args)
    if isinstance(data, dict) and isinstance(data.get("updates"), str):
        # Some models encode the array as a string; decode it once more.
        try:
            data["updates"] = parse_arguments_text(data["updates"])
        except ValueError:
            pass
    try:
        return UpdatePlanArgs.model_validate(data)
    except ValidationError as exc:
        raise ValueError(format_validation_error(exc)) from None


def apply_plan_update(
    active_plan: Plan | None,
    args: str | Mapping[str, object] | UpdatePlanArgs | None,
    *,
    isolate: bool = True,
) -> PlanUpdateResult:
    """Apply one ``update_plan`` call to ``active_plan`` as an atomic batch.

    ``args`` may be the raw arguments text, a decoded dict or parsed ``UpdatePlanArgs``.
    ``active_plan`` is never modified. On success ``result.plan`` is the new plan; on any
    failure it is ``active_plan`` unchanged and ``result.message`` says why.
    ``isolate=False`` lets the new plan share unchanged steps with ``active_plan`` (every
    operation copies what it changes), for an owner that drops the old plan; a deep copy of
    a 100-step plan costs several milliseconds per update.
    """
    try:
        parsed = parse_update_plan_args(args)
    except ValueError as exc:
        return PlanUpdateResult(
            ok=False,
            plan=active_plan,
            message=f"Invalid update_plan arguments: {exc}",
            fallback_label="Invalid plan",
        )
    # A private deep copy: the result never shares objects with the caller's plan.
    working = active_plan.model_copy(deep=True) if active_plan is not None and isolate else (
        active_plan
    )
    warnings: list[str] = []
    total = len(parsed.updates)
    for index, op in enumerate(parsed.updates, start=1):
        try:
            working, op_warnings = _apply_operation(working, op)
        except _OperationFailed as exc:
            return PlanUpdateResult(
                ok=False,
                plan=active_plan,
                message=(
                    f"Batch update failed at operation {index}/{total}. "
                    f"No changes were applied.\n{exc}"
                ),
                warnings=warnings,
                failed_operation=index,
                fallback_label="Batch update failed",
            )
        warnings.extend(op_warnings)
    assert working is not None  # every successful operation yields a plan
    noun = "update" if total == 1 else "updates"
    message = "\n".join([f"Applied {total} plan {noun}.", progress_line(working), *warnings])
    return PlanUpdateResult(ok=True, plan=working, message=message, warnings=warnings)
