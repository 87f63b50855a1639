"""The embedded session store: one SQLite file, no server.

Holds sessions (history, bindings), turn records, runs with their
event logs, the pending state of suspended asks, and batches with their finished items. Safe to use from several threads of one
kernel and from several kernels (processes) on the same file at once. Secrets never reach
the file: every JSON value and error text written is masked by
:func:`jupyter_agent.base.secrets.mask` (secret-looking environment values, the configured key,
values given to ``register_secret``; docs/security.md).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Union

from ..base.state import STATE, Box
from ._batches import BatchesMixin, BatchItemRecord
from ._db import Database, StoreFullError, open_failure
from ._migrations import SCHEMA_VERSION
from ._recovery import RecoveryMixin
from ._runs import RunsMixin
from ._sessions import SessionsMixin
from ._transcript import TranscriptMixin
from ._turns import TurnsMixin
from .paths import default_store_path

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["Store", "StoreChoice", "StoreFullError", "BatchItemRecord", "default_store", "reset_default_store",
           "swap_default_store"]


class Store(SessionsMixin, TurnsMixin, RunsMixin, RecoveryMixin, TranscriptMixin, BatchesMixin):
    """A session store backed by the SQLite file at ``path``.

    ``path`` defaults to ``<data dir>/store.sqlite3`` (see ``paths.default_data_dir``). The
    file (0600) and its directory (0700) are created, and the schema migrated, on open; a file
    that cannot be opened raises ``ConfigError`` with one line naming it, and is left as it was. Opening also marks
    ``interrupted`` every run whose process died while it was ``running`` (see
    ``recover_interrupted_runs``).
    """

    schema_version = SCHEMA_VERSION
    """Schema version this code writes (``PRAGMA user_version`` of the file)."""

    def __init__(self, path: str | Path | None = None, *, busy_timeout: float = 10.0) -> None:
        self.path = Path(path).expanduser() if path is not None else default_store_path()
        self._plan_bases = {}
        self._db = Database(self.path, busy_timeout=busy_timeout)
        # Run ids this open marked ``interrupted`` (their process had died).
        try:
            self.recovered_runs: list[str] = self.recover_interrupted_runs()
        except sqlite3.Error as exc:  # locked by another process past the busy timeout
            self._db.close()
            raise open_failure(self.path, exc) from None

    def __repr__(self) -> str:
        return f"Store({str(self.path)!r})"

    @property
    def journal_mode(self) -> str:
        """``wal`` normally; another value only where the file system cannot do WAL."""
        return self._db.journal_mode

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Group several store calls into one atomic write (nested blocks are savepoints).

        Example: finish a turn, append its messages and set the run's status all or nothing.
        """
        with self._db.write():
            yield

    def close(self) -> None:
        """Close the store's connections (all threads of this process)."""
        self._db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _close_default(box: Box[Store]) -> None:
    with _default_lock:
        store, box.value = box.value, None
    if store is not None:
        store.close()


StoreChoice = Union[Store, Literal["default"], None]
"""A store argument: a :class:`Store`, ``"default"`` (the process-wide one) or ``None`` (none)."""

_default_lock = threading.Lock()
_default: Box[Store] = STATE.slot("session.default_store", Box, reset=_close_default)
"""The process-wide store (``value``; ``None`` until first used)."""


def default_store() -> Store:
    """The process-wide store at the default path, opened on first call.

    ``$JUPYTER_AGENT_HOME`` is read at that first call; later changes need
    ``reset_default_store()``.
    """
    with _default_lock:
        if _default.value is None:
            _default.value = Store()
        return _default.value


def reset_default_store() -> None:
    """Close and forget the process-wide store (tests, or after changing the data dir)."""
    _close_default(_default)


def swap_default_store(store: Store | None) -> Store | None:
    """Make ``store`` the process-wide store and return the previous one, left open.

    ``None`` means "the store at the default path, opened on next use". Record/replay mode
    (``jupyter_agent.replay``) runs on a scratch store this way, so a replay starts from the
    same empty sessions as its recording.
    """
    with _default_lock:
        previous, _default.value = _default.value, store
        return previous
