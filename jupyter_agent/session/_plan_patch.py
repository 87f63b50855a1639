"""A stored ``plan_updated`` holds the steps that changed, not the whole plan.

Each ``update_plan`` round emits ``plan_updated`` with the whole plan (docs/behaviour.md §6).
Written whole, a 100-step plan is 15 KB per round and a 1,000-step plan 150 KB: the write, and
the checkpoints of the file it fills, grow with the plan though one step changed. So the store
writes a plan whose steps are the frozen steps (``_frozen_json``) of the run's previous stored
plan, but for a few, as a patch of that plan:

    {"type": "plan_updated", "t": ..., "plan": {"planId": ..., "steps": null, ...},
     "steps_patch": {"base": 41, "parts": [[0, 57], {"id": "58", ...}, [58, 100]]}}

``base`` is the sequence number of the event whose steps it patches (an event that is
committed: the writer learns it only then), and each part is either a ``[start, end)`` range
of the base's steps or a new step. :func:`expand` gives every reader the whole plan back; the
steps an event shares with its base are frozen, so no reader can change one event through
another. A plan written by another process, after a restart or a resume, is written whole.
"""

from __future__ import annotations

from collections.abc import Callable

from ..base.frozen_json import FrozenDict, FrozenList, freeze
from ..base.jsontypes import JSONArray, JSONObject

__all__ = ["PATCH_KEY", "Base", "compact", "expand"]

PATCH_KEY = "steps_patch"

Base = tuple[int, FrozenList]
"""A stored plan's sequence number and its steps (the objects that were written)."""


def _plan(event: object) -> JSONObject | None:
    """The plan of a ``plan_updated`` event dict (``None``: not one, or no plan dict)."""
    if type(event) is dict and event.get("type") == "plan_updated":
        plan = event.get("plan")
        if isinstance(plan, dict):
            return plan
    return None


def _steps(event: object) -> FrozenList | None:
    """The frozen steps of a ``plan_updated`` event dict (``None``: not one, or not frozen)."""
    plan = _plan(event)
    steps = plan.get("steps") if plan is not None else None
    return steps if type(steps) is FrozenList else None


def _parts(steps: FrozenList, base: FrozenList) -> JSONArray | None:
    """``steps`` as ranges of ``base`` and new steps; ``None`` when most steps are new.

    A step is reused only when it is the same frozen object (it cannot have changed since). A
    part that is a list is a range, so a new step must be a dict (a plan's steps are) or the
    plan is written whole.
    """
    if len(steps) == len(base):  # update_step: the same places, one of them replaced
        changed = [i for i, (a, b) in enumerate(zip(steps, base, strict=True))
                   if a is not b or type(a) is not FrozenDict]
        if 2 * len(changed) > len(steps) or not all(isinstance(steps[i], dict) for i in changed):
            return None
        parts: JSONArray = []
        start = 0
        for i in changed:
            if i > start:
                parts.append([start, i])
            parts.append(steps[i])
            start = i + 1
        if start < len(steps):
            parts.append([start, len(steps)])
        return parts
    where = {id(s): j for j, s in enumerate(base) if type(s) is FrozenDict}
    parts, new = [], 0
    for s in steps:
        j = where.get(id(s)) if type(s) is FrozenDict else None
        if j is None:
            if not isinstance(s, dict):
                return None
            parts.append(s)
            new += 1
        elif parts and type(parts[-1]) is list and parts[-1][1] == j:
            parts[-1][1] = j + 1
        else:
            parts.append([j, j + 1])
    return None if 2 * new > len(steps) else parts


def compact(event: object, base: Base | None) -> tuple[object, FrozenList | None]:
    """The form of ``event`` to store, given the run's last stored plan, and the steps it
    writes (``None``: not a plan with frozen steps, so it becomes no base)."""
    steps = _steps(event)
    if steps is None or base is None:
        return event, steps
    parts = _parts(steps, base[1])
    whole = _plan(event)
    if parts is None or whole is None or type(event) is not dict:  # (a plan: _steps found it)
        return event, steps
    plan = dict(whole)
    plan["steps"] = None  # kept in its place: the plan reads back with its keys in order
    return {**event, "plan": plan, PATCH_KEY: {"base": base[0], "parts": parts}}, steps


def _apply(base: JSONArray, parts: JSONArray) -> FrozenList:
    steps: JSONArray = []
    for part in parts:
        if isinstance(part, list):
            start, end = part
            if not (isinstance(start, int) and isinstance(end, int)):
                raise ValueError(f"a plan patch holds the range {part!r}: a damaged event log")
            steps.extend(base[start:end])
        else:
            steps.append(freeze(part))
    return FrozenList(steps)


def _patch_of(event: JSONObject) -> tuple[int, JSONArray] | None:
    """The patch a stored ``plan_updated`` carries, as its base's sequence number and its
    parts (``None``: it holds its whole plan)."""
    plan = _plan(event)
    if plan is None or plan.get("steps") is not None:
        return None
    patch = event.get(PATCH_KEY)
    if isinstance(patch, dict):
        base, parts = patch.get("base"), patch.get("parts")
        if type(base) is int and type(parts) is list:
            return base, parts
    return None


def expand(rows: list[tuple[int, JSONObject]],
           earlier: Callable[[int], list[tuple[int, JSONObject]]],
           bases: dict[int, JSONObject] | None = None) -> list[JSONObject]:
    """The events of ``rows`` (sequence number, decoded event; in order) with every stored
    patch made a whole plan again. ``earlier(seq)`` reads the run's rows before ``seq``, for
    a patch whose base is not among ``rows`` (a read that starts after it).

    Steps a plan shares with the plan it patches are frozen in both (neither can be changed
    through the other); a plan no patch reads from keeps plain lists and dicts.
    """
    bases = {} if bases is None else bases  # seq -> the plan (dict) stored there
    out, looked_back = [], False
    for seq, event in rows:
        patch = _patch_of(event)
        plan = _plan(event)
        if patch is not None and plan is not None:  # (a patch is in a plan: _patch_of)
            at, parts = patch
            base = bases.get(at)
            if base is None and not looked_back and rows:
                looked_back = True
                expand(earlier(rows[0][0]), earlier, bases)
                base = bases.get(at)
            if base is None:
                raise ValueError(f"the session store holds no plan at event {at} "
                                 f"(event {seq} patches it): a damaged event log")
            steps = base["steps"]
            if type(steps) is not FrozenList:
                steps = base["steps"] = freeze(steps)  # shared from now on
            del event[PATCH_KEY]
            plan["steps"] = _apply(steps, parts)
        if plan is not None and isinstance(plan.get("steps"), list):
            bases[seq] = plan
        out.append(event)
    return out
