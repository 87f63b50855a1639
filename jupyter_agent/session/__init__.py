"""Sessions and their persistence: the embedded SQLite session store.

``Store`` keeps sessions, message history, turn records, runs with their events, suspended
asks in one file shared safely by threads and kernels.
``default_store()`` is the process-wide instance the magics use.
"""

from __future__ import annotations

from ..base.secrets import register_secret
from .models import (
    TERMINAL_RUN_STATUSES,
    Mode,
    PermissionDecision,
    RunRecord,
    SessionRecord,
    StoredRunStatus,
    TranscriptDict,
    TranscriptEntry,
    TurnRecord,
    UsageTotals,
)
from .paths import HOME_ENV, default_data_dir, default_store_path
from .store import Store, StoreFullError, default_store, reset_default_store

__all__ = [
    "HOME_ENV",
    "TERMINAL_RUN_STATUSES",
    "Mode",
    "PermissionDecision",
    "RunRecord",
    "SessionRecord",
    "Store",
    "StoreFullError",
    "StoredRunStatus",
    "TranscriptDict",
    "TranscriptEntry",
    "TurnRecord",
    "UsageTotals",
    "default_data_dir",
    "default_store",
    "default_store_path",
    "register_secret",
    "reset_default_store",
]
