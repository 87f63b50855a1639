"""``%agent record [PATH]``, ``%agent replay [PATH]``, ``%agent live`` (and ``%agent cassette``).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from ...base.flags import text
from ._table import CommandTable

if TYPE_CHECKING:
    from ...clients.cassette import Cassette
    from ._table import Subparsers

__all__ = ["TABLE"]

TABLE = CommandTable()


@TABLE.parsers
def _parsers(sub: Subparsers) -> None:
    rec = sub.add_parser("record")
    rec.add_argument("path", nargs="?", type=text)
    rec.add_argument("--model", type=text)
    rec.add_argument("--append", action="store_true")
    rec.add_argument("--keep-store", action="store_true")
    rep = sub.add_parser("replay")
    rep.add_argument("path", nargs="?", type=text)
    rep.add_argument("--model", type=text)
    rep.add_argument("--timing", type=text, choices=["fast", "recorded"], default="fast")
    rep.add_argument("--keep-store", action="store_true")
    sub.add_parser("live")
    sub.add_parser("cassette")


def _shown(path: str | None, cassette: Cassette) -> str:
    # The path as the user wrote it: an absolute machine path has no place in a saved output.
    return path or Path(cassette.location).name


@TABLE.command("record", "Record model calls and ask answers: record [PATH] [--model NAME] [--append].")
def _cmd_record(args: argparse.Namespace, ns: dict[str, object]) -> None:
    from ...replay.mode import start

    c = start("record", args.path, model=args.model, append=args.append,
              keep_store=args.keep_store)
    from ...clients.factory import resolve_model

    print(f"Recording model calls ({resolve_model().name}) and answers into "
          f"{_shown(args.path, c)}. `%agent live` stops.")


@TABLE.command("replay", "Replay recorded model calls, no key needed: replay [PATH] [--timing recorded].")
def _cmd_replay(args: argparse.Namespace, ns: dict[str, object]) -> None:
    from ...replay.mode import start

    c = start("replay", args.path, model=args.model, timing=args.timing,
              keep_store=args.keep_store)
    print(f"Replaying {len(c.interactions)} recorded model call(s) of {c.model} from "
          f"{_shown(args.path, c)}: no API key needed. `%agent live` calls the model again.")


@TABLE.command("live", "Stop recording or replaying: model calls go to the model again.")
def _cmd_live(args: argparse.Namespace, ns: dict[str, object]) -> None:
    from ...replay.mode import go_live

    was = go_live()
    if was is None:
        print("live: model calls go to the model.")
    else:
        print(f"live: model calls go to the model again ({len(was.interactions)} call(s) in "
              f"{Path(was.location).name}).")


@TABLE.command("cassette", "Show whether model calls are live, recorded or replayed.")
def _cmd_cassette(args: argparse.Namespace, ns: dict[str, object]) -> None:
    from ...replay.mode import describe

    print(describe())
