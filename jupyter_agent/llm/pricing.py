"""Tiered prices (docs/behaviour.md §9.5–9.6): each call is priced alone, then prices are summed.

Tiers are chosen by the call's input tokens. ``price_unit`` is how many tokens a price covers
(1,000,000 for our profiles; 1,000 in the per-1K convention) and ``bound_unit`` the unit of a
tier's ``max_input_tokens`` (1 for our profiles: plain tokens; 1,000 per-1K).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from pydantic import BaseModel

__all__ = ["PriceTier", "sanitize_price_tiers", "select_tier", "price_call"]


class PriceTier(BaseModel):
    """One price tier: prices apply to calls with at most ``max_input_tokens`` input tokens."""

    max_input_tokens: float | None = None
    """Upper bound (inclusive) in ``bound_unit``; ``None`` or 0 means open-ended."""
    input_price: float = 0.0
    output_price: float = 0.0
    min_input_tokens: float = 0.0
    """Set by cleaning: the previous tier's maximum."""


def _number(x: object) -> float | None:
    """``x`` when it is a finite number (a bool is not one), else ``None``."""
    if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x):
        return x
    return None


def sanitize_price_tiers(tiers: Sequence[Mapping[str, object] | PriceTier]) -> list[PriceTier]:
    """Clean a tier list (docs/behaviour.md §9.5: first tier kept, non-increasing bounds skipped,
    a bound-less tier with a price closes the list, a priceless one ends it)."""
    raw = [t.model_dump() if isinstance(t, PriceTier) else dict(t) for t in tiers]
    out: list[PriceTier] = []
    for i, t in enumerate(raw):
        mx = _number(t.get("max_input_tokens"))
        given_in, given_out = _number(t.get("input_price")), _number(t.get("output_price"))
        inp = given_in if given_in is not None else 0.0
        outp = given_out if given_out is not None else 0.0
        if i == 0:
            out.append(PriceTier(max_input_tokens=max(0, mx) if mx is not None else None,
                                 input_price=inp, output_price=outp, min_input_tokens=0))
            continue
        prev_max = out[-1].max_input_tokens or 0
        if mx is None:
            if given_in is not None or given_out is not None:
                out.append(PriceTier(max_input_tokens=None, input_price=inp, output_price=outp,
                                     min_input_tokens=prev_max))
            break
        if mx <= prev_max:
            continue
        out.append(PriceTier(max_input_tokens=mx, input_price=inp, output_price=outp,
                             min_input_tokens=prev_max))
    return out


def select_tier(tiers: list[PriceTier], input_tokens: int, bound_unit: float = 1) -> PriceTier | None:
    """The first tier that is open-ended or whose maximum covers the call; else the last."""
    if not tiers:
        return None
    x = input_tokens / bound_unit
    for t in tiers:
        if not t.max_input_tokens or t.max_input_tokens >= x:
            return t
    return tiers[-1]


def price_call(
    tiers: list[PriceTier],
    input_tokens: int,
    output_tokens: int,
    *,
    price_unit: float = 1_000_000,
    bound_unit: float = 1,
) -> float:
    """Price one call. No rounding: rounding per call would drift when summed."""
    tier = select_tier(tiers, input_tokens, bound_unit)
    if tier is None:
        return 0.0
    return tier.input_price * (input_tokens / price_unit) + tier.output_price * (
        output_tokens / price_unit
    )
