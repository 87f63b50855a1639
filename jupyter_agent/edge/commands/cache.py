"""``%agent cache`` (entries, size, this kernel's hits) and ``%agent cache clear``."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ._table import CommandTable

if TYPE_CHECKING:
    from ._table import Subparsers

__all__ = ["TABLE"]

TABLE = CommandTable()


@TABLE.parsers
def _parsers(sub: Subparsers) -> None:
    p = sub.add_parser("cache")
    p.add_argument("action", nargs="?", choices=["clear"])


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} bytes"
    size = float(n)
    for unit in ("KB", "MB", "GB"):
        size /= 1024
        if size < 1024 or unit == "GB":
            break
    return f"{size:.1f} {unit}"


@TABLE.command("cache", "The answer cache: cache (size and hits) | cache clear.")
def _cmd_cache(args: argparse.Namespace, ns: dict[str, object]) -> None:
    from ...base.config import settings
    from ...clients.cache import ResponseCache, cache_dir, cache_stats, clear_cache

    if args.action == "clear":
        print(f"Answer cache cleared: {clear_cache()} entries removed.")
        return
    entries, size = ResponseCache(cache_dir()).size()
    st = cache_stats()
    state = "on" if settings.cache else "off (--cache on a cell, or %config AgentMagics.cache = True)"
    print(f"Answer cache: {entries} entries, {_size(size)}; this kernel: {st.hits} hits, "
          f"{st.misses} misses, {st.ignored} ignored, saved ${st.saved:.4f}. Default: {state}.")
