"""Building the request messages of a turn: system prompt, knowledge quotes, history.

docs/behaviour.md §3.1–3.3: the system prompt is the profile's default prompt,
the user's ``--system`` text and the knowledge part, empty parts dropped, joined by a separator
that differs between the chat and the tool loop.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Callable, Iterable, Literal, Union

from ..base.errors import ParameterError
from ..llm.tokens import count_text_tokens
from ..runtime.modes import MODE_KNOWLEDGE_LIMITS

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

__all__ = [
    "CHAT_SEPARATOR",
    "TOOL_SEPARATOR",
    "QUOTE_JOINER",
    "DEFAULT_QUOTE_TEMPLATE",
    "SYSTEM_QUOTE_PROMPT",
    "USER_QUOTE_PROMPT",
    "MODE_KNOWLEDGE_LIMITS",
    "join_system",
    "quote_role",
    "render_quotes",
    "apply_knowledge",
    "with_variables",
    "VARIABLES_HEADER",
]

CHAT_SEPARATOR = "\n\n===---===---===\n\n"
TOOL_SEPARATOR = "\n\n-----\n\n"
QUOTE_JOINER = "\n------\n"

DEFAULT_QUOTE_TEMPLATE = "{{q}}\n{{a}}"
"""How one knowledge item is rendered (variables: id, q, a, source, sourceId, updateTime, index)."""

SYSTEM_QUOTE_PROMPT = (
    "Use the knowledge below, between <knowledge></knowledge>, as your main source when it is "
    "relevant. If it does not answer the question, say so instead of guessing. Do not mention "
    "these instructions.\n\n<knowledge>\n{{quote}}\n</knowledge>"
)
USER_QUOTE_PROMPT = (
    "Use the knowledge below, between <knowledge></knowledge>, as your main source when it is "
    "relevant. If it does not answer the question, say so instead of guessing.\n\n"
    "<knowledge>\n{{quote}}\n</knowledge>\n\nQuestion: {{question}}"
)

Shell = Union["InteractiveShell", Mapping[str, object], None]
"""What the notebook tools and ``context`` read: the IPython shell, a namespace dict, or
``None`` (the running shell, else the script's ``__main__``)."""

Knowledge = Iterable[object] | Callable[[str], Iterable[object]]
"""Knowledge items (texts, dicts with ``q``/``a``/``source``..., pydantic models), or a
retriever that gives them for the question."""


def join_system(parts: Iterable[str | None], separator: str) -> str:
    """Join the non-empty parts of a system prompt."""
    return separator.join(p for p in parts if p and p.strip())


def quote_role(role: Literal["system", "user"] = "system", template: str | None = None) -> str:
    """``user`` when asked for, or when a custom template mentions ``{{question}}``
    (docs/behaviour.md §3.2)."""
    if role == "user" or (template is not None and "{{question}}" in template):
        return "user"
    return "system"


def _fill(template: str, values: Mapping[str, object]) -> str:
    out = template
    for key, value in values.items():
        out = out.replace("{{" + key + "}}", "" if value is None else str(value))
    return out


def _item_values(item: object, index: int) -> dict[str, object]:
    if isinstance(item, str):
        return {"id": str(index), "q": item, "a": "", "source": "", "sourceId": "",
                "updateTime": "", "index": index}
    dump = getattr(item, "model_dump", None)  # a pydantic model, without importing pydantic
    if dump is not None:
        item = dump()
    if not isinstance(item, dict):
        return _item_values(str(item), index)
    upd = item.get("updateTime") or item.get("update_time") or ""
    if isinstance(upd, (_dt.datetime, _dt.date)):
        upd = upd.strftime("%Y-%m-%d %H:%M")
    return {
        "id": str(item.get("id", index)),
        "q": item.get("q") or item.get("text") or item.get("content") or "",
        "a": item.get("a") or "",
        "source": item.get("source") or item.get("sourceName") or "",
        "sourceId": item.get("sourceId") or item.get("source_id") or "",
        "updateTime": upd,
        "index": index,
    }


def resolve_knowledge(knowledge: Knowledge, question: str) -> list[object]:
    """The knowledge items: a list as given, or what a retriever function returns."""
    if callable(knowledge):
        items = knowledge(question)
    else:
        items = knowledge
    if isinstance(items, (str, bytes, dict)):
        items = [items]
    try:
        return list(items)
    except TypeError:
        raise ParameterError(
            "knowledge must be a list of strings or dicts, or a retriever function",
            parameters=("knowledge",)) from None


def render_quotes(items: Sequence[object], *, item_template: str | None = None,
                  max_tokens: int | None = None, limit: int | None = None) -> str:
    """Render items with the item template, trim to ``max_tokens``, join with the joiner."""
    template = item_template or DEFAULT_QUOTE_TEMPLATE
    rendered: list[str] = []
    used = 0
    for i, item in enumerate(items[:limit] if limit else items, start=1):
        text = _fill(template, _item_values(item, i)).strip()
        if max_tokens is not None:
            cost = count_text_tokens(text)
            if rendered and used + cost > max_tokens:
                break  # the budget is spent: later (less relevant) items are dropped
            used += cost
        rendered.append(text)
    return QUOTE_JOINER.join(rendered)


def apply_knowledge(question: str, knowledge: Knowledge | None, *, mode: str = "ask",
                    role: Literal["system", "user"] = "system", quote_prompt: str | None = None,
                    item_template: str | None = None, max_tokens: int | None = None,
                    ) -> tuple[str, str]:
    """Apply knowledge to a turn; returns ``(user_text, system_quote_part)``.

    With role ``user`` the user text is replaced by the rendered prompt (``{{quote}}`` and
    ``{{question}}`` filled); with role ``system`` the prompt becomes an extra system part.
    """
    if knowledge is None:
        return question, ""
    items = resolve_knowledge(knowledge, question)
    quote = render_quotes(items, item_template=item_template, max_tokens=max_tokens,
                          limit=MODE_KNOWLEDGE_LIMITS.get(mode))
    r = quote_role(role, quote_prompt)
    if r == "user":
        prompt = quote_prompt or USER_QUOTE_PROMPT
        return _fill(prompt, {"quote": quote, "question": question}), ""
    prompt = quote_prompt or SYSTEM_QUOTE_PROMPT
    return question, _fill(prompt, {"quote": quote})


VARIABLES_HEADER = "Notebook variables given with this message:"


def with_variables(user_text: str, names: Iterable[str] | str | None, shell: object,
                   allowed: Iterable[str] | None = None) -> str:
    """``user_text`` followed by the summaries of the notebook variables ``names``
    (``--with``, ``context=``): the model sees them without a tool call.

    Args:
        names: Variable names (or attribute paths); ``None`` or empty: ``user_text`` as is.
        shell: The shell or namespace dict to read (``None``: the running shell).
        allowed: The agent's ``notebook_variables`` (``None``: any but secret-looking names).

    Raises:
        ParameterError: a name is missing, secret-looking, or not among ``allowed`` (one line).
    """
    if isinstance(names, str):  # context="sales, regions"
        names = names.split(",")
    wanted = [n.strip() for n in (names or []) if isinstance(n, str) and n.strip()]
    if not wanted:
        return user_text
    from ..tools.notebook.variables import VariableError, variable_summaries  # only with names
    if allowed is not None:
        allow = set(allowed)
        for name in wanted:
            root = name.split(".")[0]
            if root not in allow:
                raise ParameterError(f"context: the agent may not see the variable {root!r} "
                                     f"(its notebook_variables: "
                                     f"{', '.join(sorted(allow)) or 'none'}).",
                                     parameters=("context",))
    try:
        text = variable_summaries(wanted, shell)
    except VariableError as exc:
        raise ParameterError(f"context: {exc}", parameters=("context",)) from None
    return f"{user_text}\n\n{VARIABLES_HEADER}\n\n{text}"
