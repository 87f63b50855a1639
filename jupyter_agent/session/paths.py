"""Where the store lives on disk.

``$JUPYTER_AGENT_HOME`` wins, so tests and users can point every kernel at one directory.
Otherwise the per-user data directory: through ``platformdirs`` (a dependency of
``jupyter_core``, so normally present), else the XDG default ``~/.local/share/jupyter-agent``.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["APP_NAME", "HOME_ENV", "STORE_FILENAME", "default_data_dir", "default_store_path"]

APP_NAME = "jupyter-agent"
HOME_ENV = "JUPYTER_AGENT_HOME"
"""Environment variable naming the data directory (overrides the per-user default)."""
STORE_FILENAME = "store.sqlite3"


def default_data_dir() -> Path:
    """The data directory: ``$JUPYTER_AGENT_HOME``, else the per-user data dir."""
    home = os.environ.get(HOME_ENV)
    if home:
        return Path(home).expanduser()
    try:
        import platformdirs
    except ImportError:
        xdg = os.environ.get("XDG_DATA_HOME")
        base = Path(xdg) if xdg else Path.home() / ".local" / "share"
        return base / APP_NAME
    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))


def default_store_path() -> Path:
    """The default database file: ``<data dir>/store.sqlite3``."""
    return default_data_dir() / STORE_FILENAME
