"""``%agent`` subcommands about batches: ``batches`` (the stored ones) and ``show RUN_ID``
(any stored run's full card, e.g. one item of a batch)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ...base.flags import text
from ._table import CommandTable

if TYPE_CHECKING:
    from ._table import Subparsers

__all__ = ["TABLE"]

TABLE = CommandTable()


@TABLE.parsers
def _parsers(sub: Subparsers) -> None:
    s = sub.add_parser("show")
    s.add_argument("run_id", type=text)
    sub.add_parser("batches")


@TABLE.command("show", "Show a stored run's full card (e.g. a batch item): show RUN_ID.")
def _cmd_show(args: argparse.Namespace, ns: dict[str, object]) -> None:
    from IPython.display import display

    from ...batch.cards import run_card

    display(run_card(args.run_id))


@TABLE.command("batches", "List the stored batches: their status and item counts.")
def _cmd_batches(args: argparse.Namespace, ns: dict[str, object]) -> None:
    import time

    from ...session import default_store

    rows = default_store().list_batches()
    if not rows:
        print("No batch has run yet.")
    for b in rows:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(b.updated))
        models = ", ".join(b.models)
        first = " ".join(b.template.split())[:60]
        print(f"{b.batch_id} {b.kind} over {b.n_items} items on {models}: {b.status} "
              f"({when})\n    {first}")
