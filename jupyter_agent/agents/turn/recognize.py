"""Recognising a turn's intent: by the rules of ``runtime/intent.py``, or by one ``classify``
call when the rules say so (``INTENT_RULES.use_model``).

The rules and categories are policy data (``runtime/``); asking a model is an agent's act, so it
lives here (docs/behaviour.md, intent).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...runtime.intent import (
    CATEGORIES,
    CATEGORY_DESCRIPTIONS,
    INTENT_RULES,
    IntentResult,
    IntentRules,
    as_category,
    intent_by_rules,
)

if TYPE_CHECKING:
    from ...llm.protocol import ModelClient

__all__ = ["intent_by_model", "recognize_intent"]


def intent_by_model(text: str, rules: IntentRules | None = None, *, model: str | None = None,
                    client: ModelClient | None = None) -> IntentResult:
    """Recognise the intent with one ``classify`` call (its usage goes to the current run).

    The model gives no confidence: a named category counts 0.8, the fallback (``unknown``) 0.
    The rule keywords found in the text are still reported.
    """
    from ..helpers import classify

    rules = rules or INTENT_RULES
    result = classify(text, {c: CATEGORY_DESCRIPTIONS[c] for c in CATEGORIES}, model=model,
                      client=client)
    category = "unknown" if result.fallback else as_category(result.category)
    hits = rules.matches(text).get(category, [])
    return IntentResult(category=category, confidence=0.0 if category == "unknown" else 0.8,
                        keywords=hits, source="model",
                        needs_tools=category in rules.needs_tools)


def recognize_intent(text: str, rules: IntentRules | None = None, *, use_model: bool | None = None,
                     model: str | None = None, client: ModelClient | None = None
                     ) -> IntentResult:
    """The intent of the user's raw ``text`` (never the mode), by rules or by the model.

    ``use_model`` defaults to ``rules.use_model``; when the model call fails the rules answer.
    """
    rules = rules or INTENT_RULES
    if use_model if use_model is not None else rules.use_model:
        try:
            return intent_by_model(text, rules, model=model, client=client)
        except Exception:  # a hint is not worth failing the turn for
            pass
    return intent_by_rules(text, rules)
