"""Scoring answers: against an expected field of the row, or with the user's function.

``expect`` compares the answer with the row's field: ``exact`` (the same text, outer spaces
aside), ``icase`` (the same, ignoring case) or ``contains`` (the expected text appears in the
answer, ignoring case). ``score`` is a notebook function called as ``score(answer, row)`` (or
``score(answer)`` when it takes one argument) that returns a number or a bool. An item without
an answer (failed, waiting, not run) gets no score; the comparison counts it as wrong.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING

from .inputs import is_missing
from .item import FINISHED, Outcome, one_line

if TYPE_CHECKING:
    from ..llm.structured import Checked
    from .spec import Item

__all__ = ["matches", "score_outcomes"]


def matches(answer: object, expected: object, mode: str) -> bool:
    """Whether ``answer`` matches ``expected`` under ``mode`` (``exact``/``icase``/``contains``)."""
    got = str(answer).strip()
    want = str(expected).strip()
    if mode == "exact":
        return got == want
    if mode == "icase":
        return got.casefold() == want.casefold()
    return want.casefold() in got.casefold()


def _arity(fn: Callable[..., object]) -> int:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 2
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return 2
    return 1 if len(positional) == 1 else 2


def _number(value: object) -> float:
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    item = getattr(value, "item", None)  # a numpy scalar
    if callable(item) and not isinstance(value, (int, float)):
        value = item()
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float)):
        return float(value)
    raise TypeError(f"the score function returned a {type(value).__name__}, not a number or "
                    "a bool")


def score_outcomes(outcomes: list[Outcome], items: list[Item],
                   rows: list[dict[Hashable, object]], *, expect: str | None, match: str,
                   score: Callable[..., object] | None,
                   checks: list[Checked | None] | None = None) -> list[float | None]:
    """One score per outcome (``None`` when the item has no answer to score).

    A score function that raises (or returns something else than a number) gives no score;
    the item's ``error`` column says why, its status is unchanged.

    ``checks`` (a typed batch: each item's :class:`~jupyter_agent.llm.structured.Checked`):
    ``expect`` naming a field of the schema compares that field, and ``score`` gets the
    validated instance instead of the text.
    """
    if expect is None and score is None:
        return [None] * len(outcomes)
    arity = _arity(score) if score is not None else 0
    out: list[float | None] = []
    for n, (outcome, item) in enumerate(zip(outcomes, items)):
        if outcome["status"] not in FINISHED:
            out.append(None)
            continue
        row = rows[item.row]
        answer: object = outcome["answer"] or ""
        check = checks[n] if checks is not None else None
        if check is not None:
            if expect is not None and check.valid and expect in check.data:
                answer = check.data[expect]
            elif score is not None and check.valid:
                answer = check.value
        if expect is not None:
            want = row.get(expect)
            out.append(None if is_missing(want) else float(matches(answer, want, match)))
            continue
        try:
            # ``score`` takes one or two arguments (``arity``, read from its signature).
            value = score(answer) if arity == 1 else score(answer, dict(row))  # type: ignore[misc]
            out.append(_number(value))
        except Exception as exc:  # the user's function failed on this item: note it, go on
            out.append(None)
            note = f"score: {one_line(exc)}"
            outcome["error"] = f"{outcome['error']}; {note}" if outcome.get("error") else note
    return out
