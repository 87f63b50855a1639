"""Structural anchors: exact strings a summary must not paraphrase (docs/behaviour.md §8.6).

Field names, headings, ids, paths, URLs, dates and numbers are what a later step needs verbatim,
and what an LLM summary most often rewrites. They are extracted by pattern, listed in the
compression prompts, and appended to a compressed text that has room left.
"""

from __future__ import annotations

import regex

from jupyter_agent.loop.compress.constants import (
    ANCHOR_MAX_CHARS,
    ANCHOR_MIN_CHARS,
    ANCHOR_SCAN_CHARS,
    LARGE_CONTENT_PROMPT_ANCHOR_LIMIT,
)

__all__ = ["extract_anchors", "render_anchor_block"]

# \w and \b are ASCII-only in these patterns (JavaScript semantics): "用户user_id"
# still yields "user_id". Patterns without \p{..} therefore use the ASCII flag to match that.
_A = regex.ASCII
_M = regex.MULTILINE
_LABEL_CHARS = r"[\p{L}\p{N}_ .()\[\]【】《》「」'\"/-]"

_PATTERNS: tuple[regex.Pattern[str], ...] = (
    # 1. inline code
    regex.compile(r"`([^`\n]{3,120})`", _A),
    # 2-3. JSON keys in double or single quotes
    regex.compile(r"\"([A-Za-z_][A-Za-z0-9_-]{2,})\"\s*:", _A),
    regex.compile(r"'([A-Za-z_][A-Za-z0-9_-]{2,})'\s*:", _A),
    # 4. Markdown headings
    regex.compile(r"^\s{0,3}#{1,6}\s+([^#\n]{3,120})$", _A | _M),
    # 5. "label:" at line start, any script, ASCII or full-width colon
    regex.compile(r"^\s*[-*]?\s*([\p{L}\p{N}_]" + _LABEL_CHARS + r"{1,59})\s*[:：]", _M),
    # 6. numbered and outline headings: 1.2 x, 1. x, 1) x, 1、x, 一、x
    regex.compile(
        r"^\s*(?:(?:\d+(?:\.\d+)+)\s+|\d+[.)、]\s*|[一二三四五六七八九十百千]+[、.]\s*)"
        r"([\p{L}\p{N}_]" + _LABEL_CHARS + r"{2,79})$",
        _M,
    ),
    # 7. text in CJK brackets
    regex.compile(r"[【「《]([^】」》\n]{2,80})[】」》]"),
    # 8. ASCII "label:" at line start
    regex.compile(r"^\s*[-*]?\s*([A-Za-z_][A-Za-z0-9_ -]{2,60})\s*:", _A | _M),
    # 9. XML/HTML tag names
    regex.compile(r"</?([A-Za-z][A-Za-z0-9_-]{2,})\b[^>]*>", _A),
    # 10. URLs
    regex.compile(r"https?://[^\s\"'(),}\]]+", _A | regex.IGNORECASE),
    # 11. upper-case acronyms, optionally hyphenated (HTTP, ERR-404)
    regex.compile(r"\b[A-Z]{2,}(?:-[A-Z0-9]+)*\b", _A),
    # 12. snake_case
    regex.compile(r"\b[A-Za-z_][A-Za-z0-9_]*_[A-Za-z0-9_]+\b", _A),
    # 13. kebab-case
    regex.compile(r"\b[A-Za-z][A-Za-z0-9]+-[A-Za-z0-9-]+\b", _A),
    # 14. UUIDs
    regex.compile(
        r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b",
        _A | regex.IGNORECASE,
    ),
    # 15. ISO dates and datetimes
    regex.compile(
        r"\b\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})?)?\b", _A
    ),
    # 16. numbers, with units or %
    regex.compile(r"\b\d+(?:[.,:/-]\d+)*(?:%|[A-Za-z]+)?\b", _A),
    # 17. paths starting with /, ./ or ../
    regex.compile(r"(?:^|\s)((?:\.{0,2}/|/)[\w@./-]{3,})", _A),
)

_SPACES = regex.compile(r"\s+")


def extract_anchors(content: str, limit: int = LARGE_CONTENT_PROMPT_ANCHOR_LIMIT) -> list[str]:
    """Up to ``limit`` distinct anchors from the first 12000 characters of ``content``.

    Patterns run in the order of §8.6; an anchor is kept when, trimmed and with whitespace
    collapsed, it is 3 to 120 characters long and not already taken (ignoring case).
    """
    anchors: list[str] = []
    if limit <= 0:
        return anchors
    seen: set[str] = set()
    source = content[:ANCHOR_SCAN_CHARS]
    for pattern in _PATTERNS:
        for match in pattern.finditer(source):
            text = match.group(1) if pattern.groups else match.group(0)
            anchor = _SPACES.sub(" ", (text or "").strip())
            if not ANCHOR_MIN_CHARS <= len(anchor) <= ANCHOR_MAX_CHARS:
                continue
            key = anchor.lower()
            if key in seen:
                continue
            seen.add(key)
            anchors.append(anchor)
            if len(anchors) >= limit:
                return anchors
    return anchors


def render_anchor_block(content: str, limit: int) -> str:
    """The ``<structural_anchor_candidates>`` prompt block plus a blank line, or ``""``."""
    anchors = extract_anchors(content, limit)
    if not anchors:
        return ""
    lines = "\n".join(f"- {a}" for a in anchors)
    return f"<structural_anchor_candidates>\n{lines}\n</structural_anchor_candidates>\n\n"
