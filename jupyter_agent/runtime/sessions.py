"""The current session: the one a cell uses when it gives no ``--session``.

``%agent session NAME`` and ``%agent new`` switch it for the following cells of this kernel.
It lives in ``config.settings.session`` (default ``"default"``).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..session.store import Store

__all__ = ["current_session", "set_current_session", "new_session_name"]


def current_session() -> str:
    """The session cells use when they name none."""
    from ..base.config import settings

    return settings.session


def set_current_session(name: str) -> str:
    """Make ``name`` the current session; returns it."""
    from ..base.config import settings

    name = name.strip()
    if not name:
        raise ValueError("a session needs a non-empty name")
    settings.session = name
    return name


def new_session_name(store: Store) -> str:
    """A fresh session name (``session-YYYYMMDD-HHMMSS``, suffixed if already taken)."""
    base = time.strftime("session-%Y%m%d-%H%M%S")
    name, n = base, 1
    while store.get_session(name) is not None:
        n += 1
        name = f"{base}-{n}"
    return name
