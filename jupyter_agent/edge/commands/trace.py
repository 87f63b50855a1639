"""``%agent trace [URL|off]``: where runs are exported as OpenTelemetry spans (docs/tracing.md).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ...base.errors import MagicUsageError, ParameterError
from ...base.flags import text
from ._table import CommandTable

if TYPE_CHECKING:
    from ._table import Subparsers

__all__ = ["TABLE"]

TABLE = CommandTable()


@TABLE.parsers
def _parsers(sub: Subparsers) -> None:
    tr = sub.add_parser("trace")
    tr.add_argument("target", nargs="?", type=text)


@TABLE.command("trace", "Export every run as OpenTelemetry spans: trace URL | trace off | trace "
                        "(status).")
def _cmd_trace(args: argparse.Namespace, ns: dict[str, object]) -> None:
    from ... import tracing

    target = args.target
    if target is None:
        print(tracing.status())
        return
    if target.strip().lower() == "off":
        tracing.turn_off()
        print("Traces: off; runs are no longer exported.")
        return
    try:
        url = tracing.set_endpoint(target)
    except ParameterError as exc:
        raise MagicUsageError(f"%agent trace: {str(exc).replace('url must', 'URL must')}") from None
    print(f"Traces: every run is exported to {tracing.shown_url(url)}.")
