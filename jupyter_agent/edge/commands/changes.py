"""``%agent changes``, ``%agent keep ID``, ``%agent discard ID``, ``%agent undo ID``: a
person's decisions on what sandboxed commands changed (docs/sandbox.md). Typed in a cell (or
sent by a card's button through the same road), never by a model."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

from ...base.errors import MagicUsageError
from ._table import CommandTable

if TYPE_CHECKING:
    from ._table import Subparsers

__all__ = ["TABLE"]

TABLE = CommandTable()


@TABLE.parsers
def _parsers(sub: Subparsers) -> None:
    p = sub.add_parser("changes")
    p.add_argument("workspace", nargs="?", default=".")
    for name in ("keep", "discard", "undo"):
        sub.add_parser(name).add_argument("id")


def _decide(action: str, rec_id: str) -> None:
    from ... import sandbox

    try:
        print(sandbox.decide(action, rec_id))
    except sandbox.DecisionError as exc:
        raise MagicUsageError(f"%agent {action}: {exc}") from None


@TABLE.command("changes", "What sandboxed commands changed here, and what is held.")
def _cmd_changes(args: argparse.Namespace, ns: dict[str, object]) -> None:
    from ...sandbox import changes_text

    print(changes_text(os.path.realpath(os.path.expanduser(args.workspace))))


@TABLE.command("keep", "keep ID: apply the changes a sandboxed command had held.")
def _cmd_keep(args: argparse.Namespace, ns: dict[str, object]) -> None:
    _decide("keep", args.id)


@TABLE.command("discard", "discard ID: delete the changes a sandboxed command had held.")
def _cmd_discard(args: argparse.Namespace, ns: dict[str, object]) -> None:
    _decide("discard", args.id)


@TABLE.command("undo", "undo ID: revert what a sandboxed command changed.")
def _cmd_undo(args: argparse.Namespace, ns: dict[str, object]) -> None:
    _decide("undo", args.id)
