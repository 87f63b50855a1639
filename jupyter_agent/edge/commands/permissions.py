"""``%agent permissions [revoke NAME]`` and ``%agent clear``: the grants of this kernel.

"Allow for this session" (and a remembered deny) lives in the kernel's memory
(:mod:`jupyter_agent.runtime.grants`): it lasts until the kernel restarts or ``%agent clear``,
and these commands show and take it back.
"""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING

from ...base.errors import MagicUsageError
from ...base.flags import text
from ._table import CommandTable

if TYPE_CHECKING:
    from ...runtime.grants import Grant
    from ._table import Subparsers

__all__ = ["TABLE"]

TABLE = CommandTable()


@TABLE.parsers
def _parsers(sub: Subparsers) -> None:
    p = sub.add_parser("permissions")
    p.add_argument("action", nargs="?", choices=["revoke"])
    p.add_argument("name", nargs="?", type=text)
    p.add_argument("--session", type=text)
    sub.add_parser("clear")


@TABLE.command("permissions", "The tools allowed or denied for a session in this kernel; "
                              "permissions revoke NAME [--session S] takes one back (an MCP "
                              "tool also as mcp:SERVER/TOOL).",
               printed=True)
def _cmd_permissions(args: argparse.Namespace, ns: dict[str, object]) -> list[Grant]:
    from ...runtime.grants import GRANTS, AmbiguousNameError

    if args.action == "revoke":
        if not args.name:
            raise MagicUsageError("%agent permissions revoke: name the tool (see "
                                  "`%agent permissions`).")
        try:
            gone = GRANTS.revoke(args.name, args.session)
        except AmbiguousNameError as exc:
            raise MagicUsageError(f"%agent permissions revoke: {exc}") from None
        if not gone:
            raise MagicUsageError(f"%agent permissions revoke: no grant for {args.name!r}"
                                  + (f" in session {args.session!r}" if args.session else "")
                                  + "; nothing changed.")
        for g in gone:
            print(f"Revoked: {g.decision} {g.name} [{g.identity}] in session {g.session!r}; "
                  "its next call asks again.")
        return gone
    if args.name:
        raise MagicUsageError(f"%agent permissions: unexpected {args.name!r} (did you mean "
                              f"`%agent permissions revoke {args.name}`?)")
    grants = [g for g in GRANTS.listing() if args.session in (None, g.session)]
    if not grants:
        print("No tool is allowed or denied for a session in this kernel: every call that "
              "needs approval shows a card.")
    for g in grants:
        when = time.strftime("%H:%M:%S", time.localtime(g.since))
        print(f"{g.decision:<5} {g.name}  [{g.identity}]  session {g.session!r}, since {when}")
    return grants


@TABLE.command("clear", "Forget every approval remembered in this kernel (Allow for this "
                        "session, and what cells approved).")
def _cmd_clear(args: argparse.Namespace, ns: dict[str, object]) -> None:
    from ...runtime.grants import GRANTS

    n = len(GRANTS.listing())
    GRANTS.clear()
    print(f"Forgot {n} remembered permission{'s' if n != 1 else ''}: every call that needs "
          "approval shows a card again.")
