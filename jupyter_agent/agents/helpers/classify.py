"""``classify``: route a text to one of a few categories with one model call.

docs/behaviour.md §7.2: an answer that is exactly a category id wins; otherwise the first
category (in list order) whose id, then whose description, appears in the answer; otherwise the
last category, flagged as the fallback.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from pydantic import BaseModel, Field

from ...llm.protocol import ModelClient
from ...llm.types import Message, Usage
from ._call import EmptyInputError, History, call_model, history_messages, squeeze_newlines
from .prompts import classify_system_prompt

__all__ = [
    "Categories",
    "Category",
    "ClassifyResult",
    "classify",
    "match_category",
    "normalize_categories",
]

MODULE = "classify"

Categories = Mapping[str, str] | Sequence[tuple[str, str]] | Sequence[str] | Sequence["Category"]
"""``{id: description}``, ``[(id, description), …]``, ``[id, …]`` (the id describes itself) or
:class:`Category` objects."""

# Wrappers a model puts around a bare id: quotes, backticks, brackets, a final full stop.
_WRAPPERS = " \t\r\n\"'`*[]()<>.:;"


class Category(BaseModel):
    """One class: the id the model answers with and what it covers."""

    id: str
    description: str


class ClassifyResult(BaseModel):
    """What ``classify`` returns; ``str(result)`` is the category id."""

    category: str
    """The chosen category's id."""
    label: str
    """The chosen category's description."""
    index: int
    """Position of the category in the list given, from 0."""
    fallback: bool = False
    """True when nothing in the answer matched and the last category was used."""
    raw: str = ""
    """The model's answer text."""
    usage: Usage = Field(default_factory=Usage)
    cost: float = 0.0
    model: str = ""

    def __str__(self) -> str:
        return self.category


def normalize_categories(categories: Categories) -> list[Category]:
    """The categories as a list of ``Category``, in the order given; ids must be unique."""
    if isinstance(categories, Mapping):
        items = [(str(k), str(v)) for k, v in categories.items()]
    elif isinstance(categories, (str, bytes)):
        raise TypeError("categories must be a dict or a list, not a single string")
    else:
        items = []
        for c in categories:
            if isinstance(c, str):
                items.append((c, c))
            elif isinstance(c, Category):
                items.append((c.id, c.description))
            else:
                key, desc = c
                items.append((str(key), str(desc)))
    cats = [Category(id=k.strip(), description=v.strip()) for k, v in items]
    if not cats:
        raise ValueError("classify needs at least one category")
    ids = [c.id for c in cats]
    if "" in ids or len(set(ids)) != len(ids):
        raise ValueError(f"category ids must be unique and non-empty: {ids}")
    return cats


def match_category(answer: str, categories: list[Category]) -> tuple[int, bool]:
    """Index of the category ``answer`` names, and whether that is the fallback (the last)."""
    bare = answer.strip(_WRAPPERS)
    picks: tuple[Callable[[Category], bool], ...] = (
        lambda c: c.id == bare, lambda c: c.id.casefold() == bare.casefold())
    for pick in picks:
        for i, c in enumerate(categories):
            if pick(c):
                return i, False
    # Substrings in list order (§7.2): "billing" also matches a key "bill" listed first.
    for i, c in enumerate(categories):
        if c.id in answer:
            return i, False
    for i, c in enumerate(categories):
        if c.description and c.description in answer:
            return i, False
    return len(categories) - 1, True


def _previous(previous: ClassifyResult | str | None, categories: list[Category]
              ) -> dict[str, str] | None:
    if previous is None:
        return None
    key = previous.category if isinstance(previous, ClassifyResult) else str(previous)
    for c in categories:
        if c.id == key:
            return {"id": c.id, "description": c.description}
    return None


def classify(
    text: str,
    categories: Categories,
    *,
    history: History = None,
    model: str | None = None,
    client: ModelClient | None = None,
    system: str | None = None,
    previous: ClassifyResult | str | None = None,
) -> ClassifyResult:
    """Decide which category ``text`` belongs to, with one model call.

    Args:
        text: The question or message to classify.
        categories: ``{id: description}``, ``[(id, description), …]`` or ``[id, …]``. The last
            one is the fallback when the answer names none.
        history: Earlier conversation (OpenAI-format messages); the last 6 rounds are sent, so
            a follow-up keeps its topic's class.
        model: Profile name or model id; default ``JUPYTER_AGENT_MODEL``.
        client: A ``ModelClient`` to use instead of the default one.
        system: Background knowledge for the classifier.
        previous: The last classification in this conversation (a result or a category id).

    Returns:
        A ``ClassifyResult``: ``category`` (id), ``label``, ``fallback``, ``raw``, usage, cost.

    Raises:
        EmptyInputError: ``text`` is empty.
        ModelRequestError: The provider failed after retries.
    """
    if not text or not text.strip():
        raise EmptyInputError()
    cats = normalize_categories(categories)
    prompt = classify_system_prompt([c.model_dump() for c in cats], background=system,
                                    previous=_previous(previous, cats))
    messages: list[Message] = [{"role": "system", "content": squeeze_newlines(prompt)},
                               *history_messages(history), {"role": "user", "content": text}]
    call = call_model(MODULE, messages, model=model, client=client)
    index, fallback = match_category(call.text, cats)
    chosen = cats[index]
    return ClassifyResult(category=chosen.id, label=chosen.description, index=index,
                          fallback=fallback, raw=call.text, usage=call.usage, cost=call.cost,
                          model=call.model)

