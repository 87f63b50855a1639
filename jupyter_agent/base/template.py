"""The ``{field}`` placeholders of a prompt: one reading for a plain cell and a ``--over``
template, so both refuse the same things (docs/security.md: the same rules everywhere).

The ground floor: imports only the ground floor.
"""

from __future__ import annotations

import string

from .errors import ParameterError
from .secrets import is_secret_name

__all__ = ["prompt_fields"]


def prompt_fields(text: str, where: str) -> list[str]:
    """The root names of ``text``'s ``{field}`` placeholders, in order, without repeats.

    Args:
        text: A cell or a template.
        where: How the messages name it (``the cell``, ``the template``).

    Raises:
        ParameterError: unbalanced braces, an empty or positional ``{}``, or a field whose name
            looks like a secret (``{api_key}``): a key must never reach a prompt.
    """
    try:
        parts = list(string.Formatter().parse(text))
    except ValueError as exc:
        raise ParameterError(f"Bad braces in {where} ({exc}); write {{{{ and }}}} for literal "
                             "braces.") from None
    out: list[str] = []
    for _, field, _, _ in parts:
        if field is None:
            continue
        root = field.split(".")[0].split("[")[0]
        if not root or root.isdigit():
            raise ParameterError(f"Empty {{}} in {where}: name a field, or write {{{{ and }}}} "
                                 "for literal braces.")
        if is_secret_name(root):
            raise ParameterError(f"{{{root}}} looks like a secret: it is never put into a "
                                 "prompt.")
        if root not in out:
            out.append(root)
    return out
