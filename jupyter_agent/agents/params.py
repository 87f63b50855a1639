"""Checks of the parameters every agent entry point takes (``chat``, ``toolloop``, ``plan``).

A value that cannot mean anything (``max_rounds=0``, ``model=""``) is refused with a
:class:`~jupyter_agent.base.errors.ParameterError` (a ``ValueError``) naming the *parameter*: this
layer is called from plain Python, where there are no flags. The magics check their flags
first (``jupyter_agent/base/flags.py``), so these errors reach only script callers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypedDict

from ..base.errors import ParameterError

__all__ = ["Checks", "check_parameters"]


class Checks(TypedDict, total=False):
    """The parameters an entry point takes besides its options, checked with them."""

    max_rounds: int
    option: int | None
    tool_choice: str | None


def _count(name: str, value: object, minimum: int) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ParameterError(f"{name} must be an integer of {minimum} or more, not {value!r}.",
                             parameters=(name,))


def _temperature(value: object) -> None:
    # The OpenAI scale, as the --temperature flag: a value above the model's own maximum is
    # clamped to it (docs/behaviour.md §9.7), one outside 0..2 means nothing.
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 2:
        raise ParameterError(f"temperature must be a number from 0 to 2, not {value!r}.",
                             parameters=("temperature",))


def _quotes(options: Mapping[str, object]) -> None:
    role = options.get("quote_role", "system")
    if role not in ("system", "user"):
        raise ParameterError(f"quote_role must be system or user, not {role!r}.",
                             parameters=("quote_role",))
    for name in ("quote_prompt", "quote_template"):
        value = options.get(name)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise ParameterError(f"{name} must be a non-empty template string, not {value!r}.",
                                 parameters=(name,))
    prompt = options.get("quote_prompt")
    if isinstance(prompt, str) and "{{quote}}" not in prompt:
        raise ParameterError("quote_prompt must contain {{quote}} (where the knowledge goes).",
                             parameters=("quote_prompt",))
    given = [n for n in ("quote_prompt", "quote_template") if options.get(n) is not None]
    if role == "user":
        given.insert(0, "quote_role")
    if given and options.get("knowledge") is None:
        raise ParameterError(f"{given[0]} applies to knowledge: give knowledge too.",
                             parameters=(given[0], "knowledge"))


def check_parameters(options: Mapping[str, object], *, max_rounds: object = None,
                     option: object = None, tool_choice: object = None) -> None:
    """Raise :class:`ParameterError` for a value outside its range; return quietly otherwise.

    ``options`` are the keyword options of the entry point (``model``, ``history``,
    ``max_tokens``...); ``max_rounds`` and ``option`` are checked when given.
    """
    model = options.get("model")
    if isinstance(model, str) and not model.strip():
        raise ParameterError("model must be a model or profile name, not an empty string "
                             "(pass None for the default model).", parameters=("model",))
    _count("history", options.get("history"), 0)
    _temperature(options.get("temperature"))
    _quotes(options)
    _count("max_tokens", options.get("max_tokens"), 1)
    _count("schema_retries", options.get("schema_retries"), 0)
    _count("max_rounds", max_rounds, 1)
    _count("option", option, 1)
    if tool_choice is not None and (not isinstance(tool_choice, str) or not tool_choice.strip()):
        raise ParameterError("tool_choice must be auto, required, none or a tool name, not "
                             f"{tool_choice!r}.", parameters=("tool_choice",))
