"""A turn's store whose disk is full: the run goes on, unsaved, and says so in one line.

SQLite's "database or disk is full" used to end a cell in a raw traceback (38 of 40 cells on a
full disk). The store rolls the failed write back (``session.StoreFullError``: what was saved
before is intact); this wrapper turns it into one warning on the run's card and stops saving
the rest of the run, so the answer is still shown, marked not saved (docs/behaviour.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import cast

from ...session import Store, StoreFullError

__all__ = ["saving_store", "SavingStore"]

_WRITES = frozenset({
    "append_events", "append_messages", "bind_agent", "bind_model", "create_run",
    "ensure_session", "finish_turn", "set_status", "start_turn", "supersede_pending",
    "suspend", "save_batch_outcomes", "set_batch_status", "open_batch", "reset_session",
})
"""Store methods that write: skipped once a write found the disk full (a half-saved run,
events without their run row, would be worse than none)."""


class SavingStore:
    """``store`` for one turn: a write that finds the disk full is rolled back by the store,
    reported once through :attr:`on_full` (held until it is set) and ends the saving."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self.failed: str | None = None
        """The one line of the write that failed (``None``: saving)."""
        self._told = False
        self._on_full: Callable[[str], None] | None = None

    @property
    def on_full(self) -> Callable[[str], None] | None:
        """Called once with the line when a write failed (the run's warning)."""
        return self._on_full

    @on_full.setter
    def on_full(self, fn: Callable[[str], None] | None) -> None:
        self._on_full = fn
        self._tell()

    def _tell(self) -> None:
        if self.failed is not None and not self._told and self._on_full is not None:
            self._told = True  # before the call: the warning's own save is skipped, not retried
            self._on_full(self.failed)

    def _fail(self, exc: StoreFullError) -> None:
        if self.failed is None:
            self.failed = str(exc)
        self._tell()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """The store's transaction; a full disk at its commit ends the saving."""
        if self.failed is not None:
            yield
            return
        try:
            with self._store.transaction():
                yield
        except StoreFullError as exc:
            self._fail(exc)

    def __getattr__(self, name: str) -> object:
        attr = getattr(self._store, name)
        if not callable(attr):
            return attr

        def guarded(*args: object, **kwargs: object) -> object:
            if self.failed is not None and name in _WRITES:
                return None
            try:
                return attr(*args, **kwargs)
            except StoreFullError as exc:
                self._fail(exc)
                return None

        return guarded


def saving_store(store: Store | None) -> Store | None:
    """``store`` wrapped for one turn (``None`` stays ``None``; a wrapped one is not wrapped
    again). Typed as a ``Store``: it answers every method of one."""
    if store is None or isinstance(store, SavingStore):
        return store
    return cast(Store, SavingStore(store))
