"""``expand_query``: rewrite a question into a few search queries with one model call.

docs/behaviour.md §7.4: the result is distinct queries with the original first. The model
proposes up to ``n`` queries; ``k`` of them are chosen greedily for relevance to the question
plus diversity. Scoring uses a local lexical vector by default (words and character
trigrams); ``embed=`` plugs in real embeddings.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

from pydantic import BaseModel, Field

from ...llm.json_text import parse_json_array
from ...llm.protocol import ModelClient
from ...llm.tokens import count_text_tokens
from ...llm.types import Message, Usage
from ._call import History, call_model, history_messages, resolve_client
from .prompts import QUERY_SYSTEM_PROMPT, query_user_prompt

__all__ = [
    "Embed",
    "QueryExpansion",
    "clean_candidates",
    "expand_query",
    "history_text",
    "select_queries",
]

MODULE = "query_extension"
ALPHA = 0.3
"""Weight of relevance against diversity (the diversity term keeps weight 1, §7.4)."""
HISTORY_RESERVE = 1000
"""Tokens of the window kept free when fitting the history (docs/behaviour.md §7.4)."""

Embed = Callable[[list[str]], Sequence[Sequence[float]]]
"""``embed(texts) -> one vector per text``."""

Vector = TypeVar("Vector")
"""One text's vector: word and trigram counts (the default), or an embedding."""

_WORD = re.compile(r"\w+", re.UNICODE)


class QueryExpansion(BaseModel):
    """What ``expand_query`` returns; ``queries`` is what to search with."""

    query: str
    """The original question."""
    queries: list[str] = Field(default_factory=list)
    """Distinct search queries, the original first, then at most ``k`` chosen rewrites."""
    candidates: list[str] = Field(default_factory=list)
    """Every usable query the model proposed, trimmed, in its order."""
    raw: str = ""
    usage: Usage = Field(default_factory=Usage)
    cost: float = 0.0
    model: str = ""


def clean_candidates(value: Sequence[object] | None) -> list[str]:
    """Items as trimmed strings, blanks and non-scalars dropped (repeats are kept here)."""
    out = []
    for item in value or ():
        if isinstance(item, (str, int, float)) and not isinstance(item, bool):
            text = str(item).strip()
            if text:
                out.append(text)
    return out


def _dedupe_key(text: str) -> str:
    # Letters and digits only, case-folded: "Reset it?" and "reset it" are the same query.
    return "".join(ch for ch in text.casefold() if ch.isalnum())


def _lexical_vectors(texts: list[str]) -> list[Counter[str]]:
    vectors = []
    for t in texts:
        words = _WORD.findall(t.casefold())
        joined = f" {' '.join(words)} "
        grams = [joined[i:i + 3] for i in range(len(joined) - 2)]
        vectors.append(Counter(words) + Counter(grams))
    return vectors


def _count_cosine(a: Mapping[str, int], b: Mapping[str, int]) -> float:
    dot = sum(v * b.get(key, 0) for key, v in a.items())
    na, nb = math.sqrt(sum(v * v for v in a.values())), math.sqrt(sum(v * v for v in b.values()))
    return 0.0 if na == 0 or nb == 0 else dot / (na * nb)


def _dense_cosine(a: Sequence[float], b: Sequence[float]) -> float:
    if len(a) != len(b):
        raise ValueError(f"embedding lengths differ: {len(a)} != {len(b)}")
    dot = sum(x * y for x, y in zip(a, b))
    na, nb = math.sqrt(sum(x * x for x in a)), math.sqrt(sum(y * y for y in b))
    return 0.0 if na == 0 or nb == 0 else dot / (na * nb)


def select_queries(query: str, candidates: list[str], *, k: int = 3, alpha: float = ALPHA,
                   embed: Embed | None = None) -> list[str]:
    """Pick ``min(k, len(candidates))`` candidates, relevant to ``query`` and unlike each other.

    gain(c) = ``alpha·cos(query, c)``, plus ``1 − max cos(c, s)`` over the already selected
    ``s`` once something is selected (§7.4). Each step takes the candidate with the
    highest gain. A *lazy* greedy pick (accept a popped candidate when its recomputed gain
    has not dropped) would never re-rank, since this gain only grows, and would pick the k
    most relevant, near-duplicates included. Recomputing every gain (k·n cosines, a few
    dozen here) gives the diversity the formula intends. Repeated candidates can both be
    chosen (§14.48); ``expand_query`` removes repeats before calling this.
    """
    k = min(k, len(candidates))
    if not query.strip() or k <= 0:
        return []
    if embed is not None:
        return _pick(candidates, list(embed([query, *candidates])), _dense_cosine, k, alpha)
    return _pick(candidates, _lexical_vectors([query, *candidates]), _count_cosine, k, alpha)


def _pick(candidates: list[str], vectors: Sequence[Vector],
          cosine: Callable[[Vector, Vector], float], k: int, alpha: float) -> list[str]:
    """The greedy pick of :func:`select_queries` over ``vectors`` (the query's first)."""
    qv, cvs = vectors[0], vectors[1:]
    relevance = [alpha * cosine(qv, v) for v in cvs]
    selected: list[int] = []
    while len(selected) < k:
        best, best_gain = -1, -math.inf
        for i in range(len(cvs)):
            if i in selected:
                continue
            gain = relevance[i]
            if selected:
                gain += 1 - max(cosine(cvs[i], cvs[s]) for s in selected)
            if gain > best_gain:  # strict: ties go to the earlier candidate (the model's order)
                best, best_gain = i, gain
        selected.append(best)
    return [candidates[i] for i in selected]


def history_text(history: History, *, budget: int) -> str:
    """``role: text`` lines of the user and assistant messages, newest kept within ``budget``
    tokens."""
    lines: list[str] = []
    used = 0
    for msg in reversed(history_messages(history, rounds=1 << 30)):
        line = f"{msg['role']}: {msg['content']}"
        used += count_text_tokens(line)
        if used > budget:
            break
        lines.append(line)
    return "\n".join(reversed(lines))


def expand_query(
    query: str,
    *,
    history: History = None,
    model: str | None = None,
    client: ModelClient | None = None,
    n: int = 10,
    k: int = 3,
    background: str | None = None,
    embed: Embed | None = None,
) -> QueryExpansion:
    """Rewrite ``query`` into distinct search queries, resolving references to the history.

    Args:
        query: The user's question.
        history: Earlier conversation (OpenAI-format messages) that the question may refer to.
        model: Profile name or model id; default ``JUPYTER_AGENT_MODEL``.
        client: A ``ModelClient`` to use instead of the default one.
        n: How many rewrites to ask the model for.
        k: How many rewrites to keep (the most relevant and diverse).
        background: What the conversation is about, if known.
        embed: ``embed(texts) -> vectors`` for the selection; default a local lexical vector.

    Returns:
        A ``QueryExpansion``: ``queries`` is the original first, then at most ``k`` rewrites.
        A blank query gives no queries and no call; an answer that cannot be parsed gives
        just the original.

    Raises:
        ModelRequestError: The provider failed after retries.
    """
    if not query or not query.strip():
        return QueryExpansion(query=query or "")
    client = resolve_client(model, client)
    budget = max(0, client.profile.max_context - HISTORY_RESERVE)
    messages: list[Message] = [
        {"role": "system", "content": QUERY_SYSTEM_PROMPT},
        {"role": "user", "content": query_user_prompt(
            query, count=n, background=background,
            history_text=history_text(history, budget=budget) or None)},
    ]
    call = call_model(MODULE, messages, model=model, client=client)
    candidates = clean_candidates(parse_json_array(call.text))[:max(n, 0)]
    seen = {_dedupe_key(query)}
    distinct = []
    for c in candidates:
        key = _dedupe_key(c)
        if key and key not in seen:
            seen.add(key)
            distinct.append(c)
    chosen = select_queries(query, distinct, k=k, embed=embed)
    return QueryExpansion(query=query, queries=[query.strip(), *chosen], candidates=candidates,
                          raw=call.text, usage=call.usage, cost=call.cost, model=call.model)
