"""One-call model helpers: ``classify``, ``extract`` and ``expand_query`` (docs/behaviour.md §7).

Each makes one model call (``extract`` at most two), returns a pydantic result carrying the
answer, usage and cost, and reports its usage to the running run when there is one
(``jupyter_agent.llm.usage_context``). They are plain functions, so ``@tool`` can wrap them.
"""

from __future__ import annotations

from ._call import EmptyInputError, call_model
from .classify import Category, ClassifyResult, classify
from .extract import ExtractResult, FieldError, extract
from .query import QueryExpansion, expand_query

__all__ = [
    "Category",
    "ClassifyResult",
    "EmptyInputError",
    "ExtractResult",
    "FieldError",
    "QueryExpansion",
    "call_model",
    "classify",
    "expand_query",
    "extract",
]
