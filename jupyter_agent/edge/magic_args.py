"""IPython's ``magic_arguments`` decorators, with the types IPython does not declare.

``magic_arguments()`` and ``argument(...)`` return the function they decorate (they attach
an argument parser to it), so typed as ``Callable[[F], F]`` a decorated magic keeps its
signature under mypy's strict mode; ``parse_argstring`` gives back an
:class:`argparse.Namespace`.
"""

from __future__ import annotations

import argparse
import difflib
from collections.abc import Callable
from typing import TypeVar, cast

from IPython.core import magic as _magic
from IPython.core import magic_arguments as _ipython

__all__ = ["argument", "cell_magic", "magic_arguments", "parse_argstring"]

F = TypeVar("F", bound=Callable[..., object])
"""A magic function (any signature): the decorators give it back unchanged."""


def magic_arguments(name: str | None = None) -> Callable[[F], F]:
    """Mark a magic as taking ``@argument`` flags (IPython's ``magic_arguments``)."""
    return cast("Callable[[F], F]", _ipython.magic_arguments(name))


def cell_magic(fn: F) -> F:
    """IPython's ``@cell_magic``, bare: it marks ``fn`` and gives it back (IPython declares one
    type for the bare and the ``@cell_magic("name")`` forms, a union of both results)."""
    return cast("F", _magic.cell_magic(fn))


def argument(*args: str, **kwargs: object) -> Callable[[F], F]:
    """One flag of a magic, as :meth:`argparse.ArgumentParser.add_argument` takes it."""
    return cast("Callable[[F], F]", _ipython.argument(*args, **kwargs))


def parse_argstring(magic: Callable[..., object], line: str) -> argparse.Namespace:
    """The flags of ``line`` parsed by ``magic``'s parser (``UsageError`` on a bad flag). An
    unknown flag also gets the closest known one ("unrecognized arguments: --max-rouns; did
    you mean --max-rounds?"): argparse before Python 3.14 names the typo, not the fix."""
    from IPython.core.error import UsageError

    try:
        return cast(argparse.Namespace, _ipython.parse_argstring(magic, line))
    except UsageError as exc:
        hint = _did_you_mean(magic, str(exc))
        if hint is None:
            raise
        raise UsageError(f"{exc}; did you mean {hint}?") from None


def _did_you_mean(magic: Callable[..., object], message: str) -> str | None:
    """The closest known flag of each unknown one in argparse's ``message``, if any."""
    if "unrecognized arguments:" not in message:
        return None
    # IPython attaches the parser to the magic function at run time: no declared attribute
    known = sorted(o for o in magic.parser._option_string_actions  # type: ignore[attr-defined]
                   if o.startswith("--"))
    typos = [w.split("=", 1)[0] for w in message.split("unrecognized arguments:", 1)[1].split()
             if w.startswith("-")]
    hints = [f"{t} -> {close[0]}" if len(typos) > 1 else close[0] for t in typos
             if (close := difflib.get_close_matches("--" + t.lstrip("-"), known, 1, 0.6))]
    return ", ".join(hints) or None
