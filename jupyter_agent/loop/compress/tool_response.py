"""Keep a tool result within its share of the window (docs/behaviour.md §8.3, §8.4).

Three tiers, cheapest first: a small result passes untouched; a larger one gets LLM-free
processing (JSON minify or structural summary, or lossy text cleanup); only a result still over
half the window goes through chunked LLM compression (:func:`compress_large_content`), whose
chunks run in parallel threads (a cell magic runs inside the kernel's event loop, so no asyncio).

Bounded on purpose (the reference is not): a result over ``TOOL_RESULT_MAX_CHARS`` is cut
head-and-tail before anything reads it, and one compression makes at most
``COMPRESSION_MAX_REQUESTS`` model calls (``COMPRESSION_MAX_CHUNKS`` chunks, then the merge
rounds), whatever the size of the result.
"""

from __future__ import annotations

import logging
import math
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Literal

from pydantic import BaseModel, Field

from jupyter_agent.base.jsontypes import JSONValue
from jupyter_agent.llm.tokens import count_text_tokens
from jupyter_agent.loop.compress.anchors import extract_anchors, render_anchor_block
from jupyter_agent.loop.compress.cleanup import (
    json_structural_summary,
    light_cleanup,
    minify_json,
    parse_json_truthy,
    remove_noise,
    remove_urls_and_base64,
)
from jupyter_agent.loop.compress.constants import (
    CHUNK_CONCURRENCY,
    CHUNK_SIZE_RATIO,
    COMPRESSION_MAX_CHUNKS,
    EXCERPT_MIN_REMAINING_TOKENS,
    EXCERPT_ROOM_RATIO,
    EXCERPT_SKIP_RATIO,
    EXCERPT_TARGET_RATIO,
    LARGE_CONTENT_PROMPT_ANCHOR_LIMIT,
    MERGED_COMPRESSION_BUDGET_RATIO,
    MERGED_COMPRESSION_LOW_GAIN_RATIO,
    MERGED_COMPRESSION_MAX_ROUNDS,
    MODULE_COMPRESS_TEXT,
    MODULE_TOOL_RESPONSE,
    PER_CHUNK_BUDGET_RATIO,
    SOURCE_ANCHOR_APPEND_MAX_COUNT,
    SOURCE_ANCHOR_APPEND_SKIP_RATIO,
    SOURCE_ANCHOR_TOTAL_CEILING_RATIO,
    TOOL_RESPONSE_DIRECT_RETURN_CONTEXT_RATIO,
    TOOL_RESPONSE_LIGHT_PROCESS_CONTEXT_RATIO,
    TOOL_RESULT_MAX_CHARS,
    ratio_limit,
)
from jupyter_agent.loop.compress.truncate import (
    cap_chars,
    char_budget,
    shrink_to_token_budget,
    truncate_by_chars,
    truncate_head_tail,
)
from jupyter_agent.loop.compress.types import (
    CompressLLM,
    CompressLLMError,
    CompressUsage,
    TokenCounter,
)

__all__ = [
    "LARGE_CONTENT_SYSTEM_PROMPT",
    "LargeContentResult",
    "ToolResponseCompression",
    "compress_large_content",
    "compress_tool_response",
]

logger = logging.getLogger(__name__)

LARGE_CONTENT_SYSTEM_PROMPT = """\
You compress long texts for an agent that must keep working from the result.

- Accuracy comes before style. Only delete, summarise or regroup what the text says; never add \
a fact that is not in it.
- Keep structural keys exactly: titles, field names, numbers, ids, paths, URLs, error codes, \
dates, and tool, function and parameter names.
- Keep semantic facts: entities, states, results, causes, conditions, timelines and comparisons.
- Write dense bullets of the form "topic -> fact", using the text's own labels as prefixes.
- Write in the language of the source; never translate names, keys, ids, paths or code.
- Never reduce a specific name, value or label to a vague word ("some items", "the tool").
- When the budget is tight, shorten explanations first; drop names, numbers and conclusions last.
- Output only the compressed text: no preamble, no explanation, no code fences."""

Method = Literal["unchanged", "json", "cleanup", "llm", "truncate"]


class LargeContentResult(BaseModel):
    """What :func:`compress_large_content` produced."""

    text: str
    usage: list[CompressUsage] = Field(default_factory=list)
    """One entry per LLM call that was billed (including calls of a run that later failed)."""
    used_llm: bool = False
    method: Method = "unchanged"
    """``unchanged``, ``cleanup`` (rules were enough), ``llm``, or ``truncate`` (no LLM, or the
    LLM failed: head-and-tail truncation to the limit)."""
    error: str | None = None
    """Why LLM compression failed, when it did."""


class ToolResponseCompression(BaseModel):
    """A tool result made ready for the model's context."""

    text: str
    usage: list[CompressUsage] = Field(default_factory=list)
    used_llm: bool = False
    seconds: float = 0.0
    method: Method = "unchanged"
    """``unchanged``, ``json`` (minified or summarised), ``cleanup``, ``llm`` or ``truncate``."""
    tokens_before: int = 0
    tokens_after: int = 0


def compress_tool_response(
    text: str,
    max_context: int,
    llm: CompressLLM | None = None,
    *,
    count_tokens: TokenCounter = count_text_tokens,
    max_chars: int = TOOL_RESULT_MAX_CHARS,
) -> ToolResponseCompression:
    """Fit one tool result into ``max_context``'s tool-result budget (docs/behaviour.md §8.3).

    A result longer than ``max_chars`` characters is first cut to that length (head and tail
    around a marker naming how much was left out), so a huge result costs no more than one of
    ``max_chars``.

    At or below 20% of the window (``direct``) the text is returned unchanged. Above it, JSON
    (that parses to a truthy value) is minified, or summarised structurally when minifying is
    not enough; other text goes through the lossy light cleanup. If that result is at most 50%
    of the window it is returned with no LLM call; otherwise it is compressed to ``direct`` with
    :func:`compress_large_content` (usage module ``tool_response_compress``). With ``llm=None``
    that last step truncates head and tail instead.
    """
    start = time.perf_counter()
    capped = len(text) > max_chars
    if capped:
        text = cap_chars(text, max_chars)
    tokens = count_tokens(text) if text else 0
    direct = ratio_limit(max_context, TOOL_RESPONSE_DIRECT_RETURN_CONTEXT_RATIO)
    if not text or tokens <= direct:
        return ToolResponseCompression(
            text=text, method="truncate" if capped else "unchanged", tokens_before=tokens,
            tokens_after=tokens, seconds=_since(start)
        )

    is_json, value = parse_json_truthy(text)
    if is_json:
        light_text = _json_light(value, direct, count_tokens)
        method: Method = "json"
    else:
        light_text = light_cleanup(text)
        method = "cleanup"
    light_tokens = count_tokens(light_text)
    if light_tokens <= ratio_limit(max_context, TOOL_RESPONSE_LIGHT_PROCESS_CONTEXT_RATIO):
        return ToolResponseCompression(
            text=light_text,
            method=method,
            tokens_before=tokens,
            tokens_after=light_tokens,
            seconds=_since(start),
        )

    result = compress_large_content(
        light_text, direct, max_context, llm, module=MODULE_TOOL_RESPONSE, count_tokens=count_tokens
    )
    after = count_tokens(result.text)
    if after > direct:
        logger.info("tool response still over budget after compression: %d > %d", after, direct)
    return ToolResponseCompression(
        text=result.text,
        usage=result.usage,
        used_llm=result.used_llm,
        method=method if result.method in ("unchanged", "cleanup") else result.method,
        tokens_before=tokens,
        tokens_after=after,
        seconds=_since(start),
    )


def _json_light(value: JSONValue, direct: int, count_tokens: TokenCounter) -> str:
    """Minified JSON if it fits ``direct``, else a smaller structural summary that fits, else
    the minified JSON."""
    minified = minify_json(value)
    minified_tokens = count_tokens(minified)
    if minified_tokens <= direct:
        return minified
    summary = json_structural_summary(value, direct)
    summary_tokens = count_tokens(summary)
    if summary_tokens <= direct and summary_tokens < minified_tokens:
        return summary
    return minified


def compress_large_content(
    content: str,
    limit: int,
    max_context: int,
    llm: CompressLLM | None,
    *,
    module: str = MODULE_COMPRESS_TEXT,
    count_tokens: TokenCounter = count_text_tokens,
) -> LargeContentResult:
    """Bring ``content`` to at most ``limit`` tokens: rules first, then chunked LLM compression.

    Stage 1 removes URLs and base64; stage 2 images, paths, ids, timestamps and extra
    whitespace. If still too large, the text is cut into chunks (by characters) compressed in
    parallel, merged, re-compressed up to twice if the merge is over ``limit``, truncated as a
    last resort, then topped up with a source excerpt and exact anchors when it came out short.

    Without an LLM, or when a call raises, the text is truncated head-and-tail to ``limit``
    (never returned over budget), and calls that completed before a failure keep their usage
    (they were billed); docs/behaviour.md §8.4.
    """
    if count_tokens(content) <= limit:
        return LargeContentResult(text=content)
    content = remove_urls_and_base64(content)
    if count_tokens(content) <= limit:
        return LargeContentResult(text=content.strip(), method="cleanup")
    content = remove_noise(content)
    if count_tokens(content) <= limit:
        return LargeContentResult(text=content.strip(), method="cleanup")
    if llm is None:
        text = shrink_to_token_budget(content, limit, count_tokens)
        return LargeContentResult(text=text, method="truncate")

    usages: list[CompressUsage] = []
    try:
        text = _chunk_and_compress(content, limit, max_context, llm, module, count_tokens, usages)
    except Exception as exc:  # noqa: BLE001 - the injected LLM may raise anything
        logger.warning("chunk compression failed, truncating instead: %s", exc)
        text = shrink_to_token_budget(content, limit, count_tokens)
        return LargeContentResult(
            text=text, usage=usages, used_llm=bool(usages), method="truncate", error=str(exc)
        )
    return LargeContentResult(text=text.strip(), usage=usages, used_llm=True, method="llm")


def _chunk_and_compress(
    content: str,
    limit: int,
    max_context: int,
    llm: CompressLLM,
    module: str,
    count_tokens: TokenCounter,
    usages: list[CompressUsage],
) -> str:
    chunk_tokens = min(
        math.floor(max_context * CHUNK_SIZE_RATIO), max(1, math.floor((max_context - limit) / 2))
    )
    size = max(1, char_budget(chunk_tokens))
    # At most COMPRESSION_MAX_CHUNKS calls: a longer text loses its middle first (the cut is
    # marked), so the number of requests never grows with the size of the result.
    content = truncate_by_chars(content, size * COMPRESSION_MAX_CHUNKS)
    chunks = [content[i : i + size] for i in range(0, len(content), size)]
    per_chunk = max(1, math.floor(limit * PER_CHUNK_BUDGET_RATIO / max(1, len(chunks))))
    merged = "\n\n".join(_compress_chunks(chunks, per_chunk, llm, module, usages))

    tokens = count_tokens(merged)
    source_tokens = count_tokens(content)
    if tokens > limit:
        low_gain = False
        for _ in range(MERGED_COMPRESSION_MAX_ROUNDS):
            previous_len = len(merged)
            budget = max(1, math.floor(limit * MERGED_COMPRESSION_BUDGET_RATIO))
            merged = _compress_one(merged, budget, llm, module, usages)
            tokens = count_tokens(merged)
            if tokens <= limit:
                break
            if len(merged) >= previous_len * MERGED_COMPRESSION_LOW_GAIN_RATIO:
                low_gain = True  # the model is only rephrasing: another round won't help
                break
        if low_gain or tokens > limit:
            merged = truncate_head_tail(merged, limit, tokens)
            merged = shrink_to_token_budget(merged, limit, count_tokens)
    merged = _append_source_excerpt(merged, content, source_tokens, limit, count_tokens)
    return _append_anchors(merged, content, limit, count_tokens)


def _compress_chunks(
    chunks: list[str], budget: int, llm: CompressLLM, module: str, usages: list[CompressUsage]
) -> list[str]:
    """Compress every chunk in parallel threads, in order; usage is kept even if one fails."""
    if len(chunks) == 1:
        return [_compress_one(chunks[0], budget, llm, module, usages)]
    per_call: list[list[CompressUsage]] = [[] for _ in chunks]
    with ThreadPoolExecutor(max_workers=min(CHUNK_CONCURRENCY, len(chunks))) as pool:
        futures = [
            pool.submit(_compress_one, chunk, budget, llm, module, per_call[i])
            for i, chunk in enumerate(chunks)
        ]
        results: list[str] = []
        error: BaseException | None = None
        for future in futures:
            try:
                results.append(future.result())
            except Exception as exc:  # noqa: BLE001 - re-raised below, after all usage is in
                error = error or exc
    for entries in per_call:
        usages.extend(entries)
    if error is not None:
        raise error
    return results


def _compress_one(
    chunk: str, budget: int, llm: CompressLLM, module: str, usages: list[CompressUsage]
) -> str:
    """One compression call; an empty answer keeps the raw chunk."""
    user_prompt = (
        f"<content>\n{chunk}\n</content>\n\n"
        f"<output_budget>\nTarget maximum output tokens: {budget}.\n"
        "Use compact bullets; preserve original labels, names, numbers and conclusions first.\n"
        "</output_budget>\n\n"
        f"{render_anchor_block(chunk, LARGE_CONTENT_PROMPT_ANCHOR_LIMIT)}"
        "Compress the content now."
    )
    try:
        answer, usage = llm(LARGE_CONTENT_SYSTEM_PROMPT, user_prompt, budget)
    except CompressLLMError as exc:
        if exc.usage is not None:
            usages.append(CompressUsage(module=module, usage=exc.usage))
        raise
    usages.append(CompressUsage(module=module, usage=usage))
    answer = (answer or "").strip()
    return answer or chunk


def _append_source_excerpt(
    compressed: str, source: str, source_tokens: int, limit: int, count_tokens: TokenCounter
) -> str:
    """Add head-and-tail source excerpts when the model's summary came out far too short."""
    target = max(1, math.floor(limit * EXCERPT_TARGET_RATIO))
    tokens = count_tokens(compressed)
    if tokens >= math.floor(target * EXCERPT_SKIP_RATIO):
        return compressed
    remaining = target - tokens
    if remaining < EXCERPT_MIN_REMAINING_TOKENS or source_tokens <= limit:
        return compressed
    excerpt = truncate_head_tail(source, math.floor(remaining * EXCERPT_ROOM_RATIO), source_tokens)
    parts = [compressed.strip(), "Source excerpts for exact labels and facts:", excerpt]
    return shrink_to_token_budget("\n\n".join(p for p in parts if p), target, count_tokens)


def _append_anchors(compressed: str, source: str, limit: int, count_tokens: TokenCounter) -> str:
    """Append exact source anchors the summary lost, while the total stays within 96% of limit."""
    current = compressed.strip()
    if count_tokens(current) >= max(1, math.floor(limit * SOURCE_ANCHOR_APPEND_SKIP_RATIO)):
        return current
    lowered = current.lower()
    anchors = extract_anchors(source, SOURCE_ANCHOR_APPEND_MAX_COUNT)
    candidates = [a for a in anchors if a.lower() not in lowered]
    ceiling = max(1, math.floor(limit * SOURCE_ANCHOR_TOTAL_CEILING_RATIO))
    selected: list[str] = []
    for anchor in candidates:
        candidate = _with_anchors(current, [*selected, anchor])
        if count_tokens(candidate) > ceiling:
            break
        selected.append(anchor)
    return _with_anchors(current, selected) if selected else current


def _with_anchors(text: str, anchors: list[str]) -> str:
    listing = "\n".join(f"- {a}" for a in anchors)
    return f"{text}\n\nSource labels / exact anchors:\n\n{listing}".strip()


def _since(start: float) -> float:
    return time.perf_counter() - start
