"""Value types for the flags of the magics and of ``%agent``: each checks its allowed range.

They are argparse ``type=`` callables, so a bad value becomes one argparse error line that
names the flag and what it accepts ("argument --max-rounds: must be an integer of 1 or more,
not 0"); the magics show it as a one-line ``UsageError`` before anything reaches a model.
An empty string is never a value: ``--model ''`` is an error, not "use the default".

IPython splits a magic line without removing quotes (``--system "Be brief."`` arrives with
its quotes), so every type first strips one pair of matching quotes.
"""

from __future__ import annotations

import argparse
import keyword
import math
import re
from typing import Callable

from .errors import JupyterAgentError, ParameterError

__all__ = ["unquote", "text", "integer", "number", "amount", "identifier", "name_list",
           "usage_message"]


def unquote(value: str) -> str:
    """``value`` without one pair of matching outer quotes (``'x'`` or ``"x"``)."""
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def _bad(message: str) -> argparse.ArgumentTypeError:
    return argparse.ArgumentTypeError(message)


def text(value: str) -> str:
    """A non-empty string (a model, session, prompt text, path...)."""
    value = unquote(value)
    if not value.strip():
        raise _bad("must not be empty")
    return value


def _range(minimum: float, maximum: float | None) -> str:
    return f"of {minimum:g} or more" if maximum is None else f"from {minimum:g} to {maximum:g}"


def integer(minimum: int, maximum: int | None = None) -> Callable[[str], int]:
    """An integer in ``[minimum, maximum]`` (no upper bound when ``maximum`` is None)."""

    def parse(value: str) -> int:
        raw = unquote(value).strip()
        try:
            number_ = int(raw)
        except ValueError:
            raise _bad(f"must be an integer {_range(minimum, maximum)}, not {value!r}") from None
        if number_ < minimum or (maximum is not None and number_ > maximum):
            raise _bad(f"must be an integer {_range(minimum, maximum)}, not {number_}")
        return number_

    parse.__name__ = "integer"
    return parse


def number(minimum: float, maximum: float) -> Callable[[str], float]:
    """A finite number in ``[minimum, maximum]`` (``nan`` and ``inf`` are refused)."""

    def parse(value: str) -> float:
        raw = unquote(value).strip()
        try:
            result = float(raw)
        except ValueError:
            raise _bad(f"must be a number {_range(minimum, maximum)}, not {value!r}") from None
        if not math.isfinite(result) or not minimum <= result <= maximum:
            raise _bad(f"must be a number {_range(minimum, maximum)}, not {raw}")
        return result

    parse.__name__ = "number"
    return parse


def amount(value: str) -> float:
    """A finite number above 0 (``--max-cost``)."""
    raw = unquote(value).strip()
    try:
        result = float(raw)
    except ValueError:
        raise _bad(f"must be a number above 0, not {value!r}") from None
    if not math.isfinite(result) or result <= 0:
        raise _bad(f"must be a number above 0, not {raw}")
    return result


def identifier(value: str) -> str:
    """A Python variable name (``--out`` stores the answer under it)."""
    value = unquote(value).strip()
    if not value.isidentifier() or keyword.iskeyword(value):
        raise _bad(f"must be a Python variable name, not {value!r}")
    return value


def name_list(value: str) -> str:
    """Comma-separated names with at least one name (``--tools a,b``)."""
    value = unquote(value)
    if not [n for n in value.split(",") if n.strip()]:
        raise _bad(f"must name at least one tool (comma-separated), not {value!r}")
    return value


_FLAGS = {"context": "--with", "output": "--schema"}
"""Parameters whose flag is not their name with dashes."""


def usage_message(exc: JupyterAgentError) -> str:
    """The one line a magic shows for ``exc``: a parameter's name becomes its flag
    (``max_rounds`` -> ``--max-rounds``); the layers below speak of parameters."""
    text_ = str(exc)
    if isinstance(exc, ParameterError):
        for name in exc.parameters:
            flag = _FLAGS.get(name, "--" + name.replace("_", "-"))
            text_ = re.sub(rf"(?<![\w-]){re.escape(name)}(?!\w)", flag, text_, count=1)
    return text_


def variable_list(value: str) -> str:
    """Comma-separated notebook variable names, at least one (``--with sales,regions``);
    an attribute path (``model.config``) is allowed."""
    value = unquote(value)
    names = [n.strip() for n in value.split(",") if n.strip()]
    if not names:
        raise _bad(f"must name at least one variable (comma-separated), not {value!r}")
    for name in names:
        if not all(part.isidentifier() and not keyword.iskeyword(part)
                   for part in name.split(".")):
            raise _bad(f"must be notebook variable names, not {name!r}")
    return ",".join(names)

