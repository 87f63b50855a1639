"""Local token estimates (``llm/tokens.py``): ASCII text is split by a pattern without the CJK
class, and the counts are the same as one pattern with it would give, for any text."""

from __future__ import annotations

import re

import pytest

from jupyter_agent.llm import tokens
from jupyter_agent.llm.tokens import count_text_tokens

# The estimate as it was defined: one pattern, CJK class included.
_ONE_PATTERN = re.compile(
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]|\w+|[^\w\s]")


def _reference(text: str) -> int:
    return sum(1 if len(p) <= 4 else (len(p) + 3) // 4 for p in _ONE_PATTERN.findall(text))


SAMPLES = [
    "Say hello.",
    "The quick brown fox jumps over the lazy dog; internationalization!",
    'def f(x):\n    return {"a": [1, 2, 3]}  # comment',
    "漢字かなカナ한국어",
    "abc漢字",  # a word run that starts in Latin letters stays one piece
    "漢字abc",  # one that starts with CJK splits
    "café naïve Zürich",  # non-ASCII with no CJK at all
    "emoji 🎉🎉 and ¿qué?",
    "mixed: 東京 is Tokyo, 서울 is Seoul.",
    "",
    " \t\n ",
]


@pytest.mark.parametrize("text", SAMPLES)
def test_the_estimate_is_what_one_pattern_with_the_cjk_class_gives(text: str) -> None:
    assert count_text_tokens(text) == _reference(text)


def test_ascii_text_does_not_compile_the_cjk_class() -> None:
    tokens._piece.cache_clear()
    assert count_text_tokens("Plain English, with punctuation: 42 words-ish.") > 0
    assert tokens._piece.cache_info().currsize == 0
    assert count_text_tokens("日本語") == 3  # compiled at the first text that may need it
    assert tokens._piece.cache_info().currsize == 1
