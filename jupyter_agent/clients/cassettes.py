"""The cassettes this process has loaded: one object per file, shared by every client.

Recording clients add to, and replay clients read from, the same :class:`~.cassette.Cassette`
object, so answers recorded by one cell are there for the next. Which file is in use is
``settings.cassette_path`` (set by ``%agent record`` / ``%agent replay``, see
:mod:`jupyter_agent.replay.mode`); ``None`` means the default one beside the notebook.
"""

from __future__ import annotations

import threading
from pathlib import Path

from ..base import config
from ..base.state import STATE
from .cassette import Cassette
from .storage import default_cassette_path, load_cassette

__all__ = ["cassette_at", "active_cassette", "forget_cassettes", "resolve_cassette_path"]

_lock = threading.RLock()
_cassettes: dict[str, Cassette] = STATE.slot("clients.cassettes", dict)


def resolve_cassette_path(path: str | Path | None) -> Path:
    """``path`` made absolute; ``None`` is :func:`~.storage.default_cassette_path`."""
    return Path(path if path else default_cassette_path()).expanduser().resolve()


def cassette_at(path: str | Path | None, *, reload: bool = False) -> Cassette:
    """The cassette stored at ``path`` (default: beside the running notebook), loaded once per
    process and shared; ``reload`` reads the file again."""
    p = resolve_cassette_path(path)
    with _lock:
        c = _cassettes.get(str(p))
        if c is None or reload:
            c = _cassettes[str(p)] = load_cassette(p)
        return c


def active_cassette() -> Cassette:
    """The cassette of the current mode (``settings.cassette_path``, else the default one)."""
    return cassette_at(config.settings.cassette_path)


def forget_cassettes() -> None:
    """Drop every loaded cassette (the next use reads the files again)."""
    with _lock:
        _cassettes.clear()
