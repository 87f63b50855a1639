"""One ``%agent`` command module's table: its subcommands and the parsers they need.

Each module of ``commands/`` fills one :class:`CommandTable` when it is imported;
``commands/__init__.py`` joins the tables explicitly (no loader by name, no shared registry).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import NoReturn, TypeAlias

from ...base.errors import MagicUsageError

__all__ = ["Command", "CommandTable", "Parser", "Subparsers"]

Command = Callable[[argparse.Namespace, dict[str, object]], object]
"""``fn(args, user_ns)``: runs one parsed ``%agent`` line; what it returns is shown (or given
to a Python caller) as it is."""


class Parser(argparse.ArgumentParser):
    """argparse that reports a bad line as one ``UsageError`` line instead of exiting."""

    def error(self, message: str) -> NoReturn:
        raise MagicUsageError(f"%agent: {message} (see `%agent help`)")


# argparse names the type of ``add_subparsers()``'s value privately (typeshed declares it), and
# it is generic only for type checkers: a string here.
Subparsers: TypeAlias = "argparse._SubParsersAction[Parser]"
"""What ``add_subparsers`` returns: a module's parser builder adds its subcommands to it."""


class CommandTable:
    """The subcommands of one module (name -> function and one-line help) and its parsers."""

    def __init__(self) -> None:
        self.commands: dict[str, tuple[Command, str]] = {}
        self.parser_builders: list[Callable[[Subparsers], None]] = []
        self.printed: set[str] = set()
        """Commands whose printed lines are their whole output in a cell: the value they
        return is for Python callers, and the magic does not show it again."""

    def command(self, name: str, help: str, *, printed: bool = False
                ) -> Callable[[Command], Command]:
        """Decorator: ``fn`` runs ``%agent name`` (``printed``: see :attr:`printed`)."""

        def wrap(fn: Command) -> Command:
            self.commands[name] = (fn, help)
            if printed:
                self.printed.add(name)
            return fn

        return wrap

    def parsers(self, fn: Callable[[Subparsers], None]) -> Callable[[Subparsers], None]:
        """Decorator: ``fn(subparsers)`` adds this module's subcommand parsers."""
        self.parser_builders.append(fn)
        return fn
