"""The store's tables and their migrations.

The schema version lives in ``PRAGMA user_version``. ``MIGRATIONS[i]`` upgrades a database
from version ``i`` to ``i + 1``; a new change appends one script and never edits an old one,
so every existing file can be brought forward step by step.
"""

from __future__ import annotations

import sqlite3

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "migrate"]

_V1 = """
CREATE TABLE IF NOT EXISTS sessions (
    name        TEXT PRIMARY KEY,
    group_name  TEXT,
    agent       TEXT,
    workspace   TEXT,
    model       TEXT,
    created     REAL NOT NULL,
    updated     REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS sessions_group ON sessions(group_name);

-- The full OpenAI-format message dict is kept as JSON in ``content``; ``role`` is copied
-- out so history windows can be found without decoding every row.
CREATE TABLE IF NOT EXISTS messages (
    session  TEXT NOT NULL,
    seq      INTEGER NOT NULL,
    role     TEXT NOT NULL,
    content  TEXT NOT NULL,
    turn_id  TEXT,
    created  REAL NOT NULL,
    PRIMARY KEY (session, seq)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS turns (
    id             TEXT PRIMARY KEY,
    session        TEXT NOT NULL,
    run_id         TEXT,
    mode           TEXT NOT NULL,
    agent          TEXT,
    intent         TEXT,
    model          TEXT,
    profile        TEXT,
    started        REAL NOT NULL,
    duration       REAL,
    input_tokens   INTEGER NOT NULL DEFAULT 0,
    output_tokens  INTEGER NOT NULL DEFAULT 0,
    cost           REAL NOT NULL DEFAULT 0,
    status         TEXT NOT NULL DEFAULT 'running',
    error          TEXT
);
CREATE INDEX IF NOT EXISTS turns_session ON turns(session, started);

CREATE TABLE IF NOT EXISTS runs (
    run_id           TEXT PRIMARY KEY,
    session          TEXT,
    kind             TEXT NOT NULL,
    status           TEXT NOT NULL,
    created          REAL NOT NULL,
    updated          REAL NOT NULL,
    pending          TEXT,
    pending_call_id  TEXT,
    pending_version  INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS runs_session_status ON runs(session, status);

-- Append-only: adding an event is one small insert, never a rewrite of the run row.
CREATE TABLE IF NOT EXISTS run_events (
    run_id  TEXT NOT NULL,
    seq     INTEGER NOT NULL,
    event   TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS permissions (
    session   TEXT NOT NULL,
    tool      TEXT NOT NULL,
    decision  TEXT NOT NULL,
    updated   REAL NOT NULL,
    PRIMARY KEY (session, tool)
) WITHOUT ROWID;
"""

# Run liveness: which process owns a running run (pid, host, boot id, process start time), so
# a store opened after that process died can mark the run ``interrupted``; ``error`` keeps the
# one-line reason of an ``error``/``interrupted`` ending.
_V2 = """
ALTER TABLE runs ADD COLUMN owner_pid INTEGER;
ALTER TABLE runs ADD COLUMN owner_host TEXT;
ALTER TABLE runs ADD COLUMN owner_boot TEXT;
ALTER TABLE runs ADD COLUMN owner_start TEXT;
ALTER TABLE runs ADD COLUMN error TEXT;
CREATE INDEX IF NOT EXISTS runs_status ON runs(status);
"""

# The cell a run started from (the front end's cell id, when the kernel was told it): a new
# run supersedes only the questions waiting from its own cell (docs/behaviour.md).
_V3 = """
ALTER TABLE runs ADD COLUMN origin TEXT;
"""

# What a turn did, kept short (docs/behaviour.md §12): each tool result cut to 500 + 500
# characters (``tools``, JSON) and the conversation as text, at most 10000 (``history_preview``).
_V4 = """
ALTER TABLE turns ADD COLUMN tools TEXT;
ALTER TABLE turns ADD COLUMN history_preview TEXT;
"""

# Batches (``jupyter_agent/batch/``): one row per run of a batch cell, one row per finished
# item. An item is found again by what it computes (the spec hash: agent, template, options;
# the item hash: its prompt and which occurrence of that prompt it is; the model), so a re-run
# of the same cell, even over a table with rows added, skips what is already done.
_V5 = """
CREATE TABLE IF NOT EXISTS batches (
    batch_id     TEXT PRIMARY KEY,
    spec_key     TEXT NOT NULL,
    inputs_hash  TEXT NOT NULL,
    kind         TEXT NOT NULL,
    template     TEXT NOT NULL,
    options      TEXT NOT NULL,
    models       TEXT NOT NULL,
    n_items      INTEGER NOT NULL,
    status       TEXT NOT NULL,
    created      REAL NOT NULL,
    updated      REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS batches_spec ON batches(spec_key, inputs_hash);

CREATE TABLE IF NOT EXISTS batch_items (
    spec_key       TEXT NOT NULL,
    item_key       TEXT NOT NULL,
    model          TEXT NOT NULL,
    batch_id       TEXT NOT NULL,
    status         TEXT NOT NULL,
    run_id         TEXT,
    answer         TEXT NOT NULL DEFAULT '',
    rounds         INTEGER NOT NULL DEFAULT 0,
    input_tokens   INTEGER NOT NULL DEFAULT 0,
    output_tokens  INTEGER NOT NULL DEFAULT 0,
    cost           REAL NOT NULL DEFAULT 0,
    seconds        REAL NOT NULL DEFAULT 0,
    error          TEXT,
    updated        REAL NOT NULL,
    PRIMARY KEY (spec_key, item_key, model)
) WITHOUT ROWID;
"""

# ``%agent sessions`` shows the most recently updated sessions a page at a time: these indexes
# give a page without sorting every session (a store can hold tens of thousands).
_V6 = """
CREATE INDEX IF NOT EXISTS sessions_updated ON sessions(updated DESC, name);
CREATE INDEX IF NOT EXISTS sessions_group_updated ON sessions(group_name, updated DESC, name);
"""

MIGRATIONS: list[str] = [_V1, _V2, _V3, _V4, _V5, _V6]
"""``MIGRATIONS[i]`` takes the schema from version ``i`` to ``i + 1``."""

SCHEMA_VERSION = len(MIGRATIONS)


def migrate(conn: sqlite3.Connection) -> int:
    """Bring the database up to ``SCHEMA_VERSION``; the caller holds a write transaction.

    Returns the version found before migrating. A file written by a newer release is left
    alone (its extra columns are ignored by this code) rather than refused.
    """
    found = int(conn.execute("PRAGMA user_version").fetchone()[0])
    for version in range(found, SCHEMA_VERSION):
        # executescript would COMMIT the caller's transaction, so run statement by statement.
        for statement in _statements(MIGRATIONS[version]):
            conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {version + 1}")
    return found


def _statements(script: str) -> list[str]:
    """Split a migration script into statements (scripts hold no ``;`` inside literals)."""
    lines = [line for line in script.splitlines() if not line.lstrip().startswith("--")]
    return [part.strip() for part in "\n".join(lines).split(";") if part.strip()]
