"""``%agent SUBCOMMAND``: every subcommand, parsed with argparse, at the edge of the package.

Each module holds one topic's :class:`~jupyter_agent.edge.commands._table.CommandTable`:
``runs`` (pending, resume, model), ``session`` (sessions, agents, history, export…),
``permissions`` (permissions, clear), ``replay`` (record, replay, live, cassette) and
``batch`` (batches, show), ``changes`` (changes, keep, discard, undo). Add a subcommand
to a table; this module joins them.
"""

from __future__ import annotations

import argparse
import shlex

from ...base.errors import MagicUsageError
from ._table import Command, CommandTable, Parser

__all__ = ["run_command", "all_commands", "shows_result"]


def _tables() -> list[CommandTable]:
    # Imported on the first %agent line, not with the magics: %load_ext stays cheap.
    from . import batch, cache, changes, permissions, replay, runs, session, trace

    return [runs.TABLE, session.TABLE, permissions.TABLE, replay.TABLE, batch.TABLE, cache.TABLE,
            trace.TABLE, changes.TABLE]


def all_commands() -> dict[str, tuple[Command, str]]:
    """Every subcommand: name -> (function, one-line help)."""
    out: dict[str, tuple[Command, str]] = {"help": (_cmd_help, "List the %agent commands.")}
    for table in _tables():
        out.update(table.commands)
    return out


def shows_result(line: str) -> bool:
    """Whether the ``%agent`` magic shows what ``line``'s command returned (False for a
    command whose printed table is its output: the value would be printed under it again)."""
    try:
        name = (shlex.split(line) or ["help"])[0]
    except ValueError:
        return True
    return not any(name in table.printed for table in _tables())


def _parser() -> Parser:
    p = Parser(prog="%agent", add_help=False)
    sub = p.add_subparsers(dest="cmd", parser_class=Parser)
    for table in _tables():
        for build in table.parser_builders:
            build(sub)
    return p


def run_command(line: str, ns: dict[str, object]) -> object:
    """Parse and run one ``%agent`` line (``ns``: the user's namespace)."""
    try:
        argv = shlex.split(line)
    except ValueError as exc:
        raise MagicUsageError(f"%agent: {exc}") from None
    if not argv:
        argv = ["help"]
    args = _parser().parse_args(argv)
    entry = all_commands().get(args.cmd)
    if entry is None:
        raise MagicUsageError(f"%agent: unknown command {argv[0]!r} (see `%agent help`)")
    return entry[0](args, ns)


def _cmd_help(args: argparse.Namespace, ns: dict[str, object]) -> None:
    lines = ["%agent commands:"] + [f"  {name:<10} {h}"
                                    for name, (_, h) in sorted(all_commands().items())]
    print("\n".join(lines))
