"""The helpers as tools another run can call, with JSON-friendly arguments.

The helpers themselves take Python objects (a pydantic class, a client, a history), which a
model cannot send, so each tool here is a thin function over one helper. Their usage reaches
the calling run through the usage sink like any helper call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .classify import classify
from .extract import extract
from .query import expand_query

if TYPE_CHECKING:
    from ...base.jsontypes import JSONObject
    from ...llm.protocol import ModelClient
    from ...tools.registry import AnyTool

__all__ = ["helper_tools"]


def helper_tools(*, model: str | None = None, client: ModelClient | None = None) -> list[AnyTool]:
    """``classify_text``, ``extract_fields`` and ``expand_search_query`` as unregistered tools.

    Args:
        model: Model the helpers call (default: the configured default model).
        client: A ``ModelClient`` to use instead of the default one.
    """
    from ...tools.registry import Tool  # lazy: keeps ``helpers`` importable on its own

    def classify_text(text: str, categories: dict[str, str]) -> dict[str, str | bool]:
        """Classify a text into one of the given categories.

        Args:
            text: The text to classify.
            categories: Category id -> what the category covers. The last one is the fallback.
        """
        r = classify(text, categories, model=model, client=client)
        return {"category": r.category, "label": r.label, "fallback": r.fallback}

    def extract_fields(text: str, json_schema: dict[str, object]) -> JSONObject | str:
        """Extract structured fields from a text.

        Args:
            text: The text to extract from.
            json_schema: A JSON schema of an object (properties, required), or a plain
                {field: description} object.
        """
        r = extract(text, json_schema, model=model, client=client)
        return r.data if r.success else str(r)

    def expand_search_query(query: str) -> list[str]:
        """Rewrite a question into a few distinct search queries (the original first).

        Args:
            query: The question to search for.
        """
        return expand_query(query, model=model, client=client).queries

    return [Tool(fn) for fn in (classify_text, extract_fields, expand_search_query)]
