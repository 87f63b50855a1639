"""What a store holds, read straight from its SQLite file (tests only).

The product reads history through ``Store.history_messages`` (finished turns, in the order
they started); tests also need the raw rows, unfinished turns included, in the order they were
written, to assert what a crash or a resume left on disk.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from jupyter_agent.session.store import Store


def stored_messages(store: Store, session: str) -> list[dict[str, Any]]:
    """Every message stored for ``session``, in the order it was written."""
    conn = sqlite3.connect(f"file:{store.path}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT content FROM messages WHERE session = ? ORDER BY seq", (session,)
        ).fetchall()
    finally:
        conn.close()
    return [json.loads(content) for (content,) in rows]
