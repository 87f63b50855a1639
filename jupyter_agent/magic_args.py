"""IPython's ``magic_arguments`` decorators, with the types IPython does not declare.

``magic_arguments()`` and ``argument(...)`` return the function they decorate (they attach
an argument parser to it), so typed as ``Callable[[F], F]`` a decorated magic keeps its
signature under mypy's strict mode; ``parse_argstring`` gives back an
:class:`argparse.Namespace`.
"""

from __future__ import annotations

import argparse
from typing import Any, Callable, TypeVar, cast

from IPython.core import magic_arguments as _ipython

__all__ = ["argument", "magic_arguments", "parse_argstring"]

F = TypeVar("F", bound=Callable[..., Any])


def magic_arguments(name: str | None = None) -> Callable[[F], F]:
    """Mark a magic as taking ``@argument`` flags (IPython's ``magic_arguments``)."""
    return cast("Callable[[F], F]", _ipython.magic_arguments(name))


def argument(*args: Any, **kwargs: Any) -> Callable[[F], F]:
    """One flag of a magic, as :meth:`argparse.ArgumentParser.add_argument` takes it."""
    return cast("Callable[[F], F]", _ipython.argument(*args, **kwargs))


def parse_argstring(magic: Callable[..., Any], line: str) -> argparse.Namespace:
    """The flags of ``line`` parsed by ``magic``'s parser (``UsageError`` on a bad flag)."""
    return cast(argparse.Namespace, _ipython.parse_argstring(magic, line))
