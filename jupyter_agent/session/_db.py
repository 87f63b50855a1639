"""SQLite plumbing: one connection per thread, explicit transactions, JSON with secrets masked.

Why the settings are what they are:

- WAL lets readers go on while one writer commits, and a process killed mid-write leaves only
  uncommitted WAL frames, which the next opener ignores.
- Every write starts with ``BEGIN IMMEDIATE``: the write lock is taken up front, so the busy
  timeout applies to it. A deferred transaction that upgrades from read to write can fail at
  once with "database is locked" whatever the timeout, which is the classic two-kernel bug.
- ``synchronous=NORMAL`` is durable against process crashes in WAL mode (only a power cut can
  lose the last commits), and much cheaper than ``FULL``.
- sqlite3 connections must not be shared between threads mid-transaction, so each thread gets
  its own; a forked child never touches its parent's connections.
- The file is created 0600 in a folder created 0700 (SQLite gives ``-wal`` and ``-shm`` the
  database file's mode): other local users read no transcript. A store that cannot be opened
  (not a database, locked, a folder in its place) is never replaced: the open fails with one
  line naming the path and what to do (:func:`open_failure`).
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeAlias, Union

from pydantic import BaseModel

from ..base.errors import ConfigError
from ..base.frozen_json import dumps as _json_text
from ..base.jsontypes import JSONObject, JSONValue, as_object
from ..base.secrets import mask_json
from ._migrations import migrate
from .paths import APP_NAME, HOME_ENV

__all__ = ["Database", "Row", "SQLValue", "StoreFullError", "dumps", "loads", "loads_object",
           "open_failure", "prepare_store_file", "is_full_disk"]

SQLValue: TypeAlias = Union[None, int, float, str, bytes]
"""What sqlite3 binds as a parameter and gives back in a column."""

Row: TypeAlias = tuple[SQLValue, ...]
"""A row as sqlite3 returns it (its columns in ``SELECT`` order); a record narrows it once,
through its pydantic model."""

_PRIVATE_FILE = 0o600
_PRIVATE_DIR = 0o700
_COMPANIONS = ("-wal", "-shm", "-journal")


def _tighten(path: Path, mode: int) -> None:
    """Drop group and other permissions from our own ``path`` (an older version made it
    world-readable); a file someone else owns is left alone."""
    try:
        st = path.stat()
        if st.st_uid == os.getuid() and st.st_mode & 0o077:
            os.chmod(path, mode)
    except OSError:
        pass


def prepare_store_file(path: Path) -> None:
    """Make the store's folder (0700) and an empty file (0600) before SQLite opens it.

    An existing folder is tightened only when it is the agent's own (named ``jupyter-agent``):
    ``JUPYTER_AGENT_HOME`` may name a folder shared with other things.

    Raises:
        OSError: the folder cannot be made (a file in its place, no permission).
    """
    folder = path.parent
    if not folder.exists():
        # exist_ok: another process opening a new store at the same moment may make it first.
        folder.mkdir(parents=True, mode=_PRIVATE_DIR, exist_ok=True)
    elif folder.name == APP_NAME and hasattr(os, "getuid"):
        _tighten(folder, _PRIVATE_DIR)
    if path.is_dir():
        raise IsADirectoryError(21, "a folder is in its place")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, _PRIVATE_FILE)
    except FileExistsError:
        pass
    else:
        os.close(fd)
    if hasattr(os, "getuid"):
        for p in (path, *(path.with_name(path.name + s) for s in _COMPANIONS)):
            if p.exists() and not p.is_symlink():
                _tighten(p, _PRIVATE_FILE)


def open_failure(path: Path, exc: BaseException) -> ConfigError:
    """The one line a store that cannot be opened gives: its path, what is wrong, what to do."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if isinstance(exc, OSError) and exc.strerror:
        text = exc.strerror
    low = text.lower()
    if "not a database" in low or "malformed" in low or "disk image" in low:
        what = "it is damaged or not a jupyter-agent store"
    elif "locked" in low or "busy" in low:
        what = "another process holds it locked"
    elif isinstance(exc, IsADirectoryError) or path.is_dir():
        what = "a folder is in its place"
    else:
        what = text
    return ConfigError(
        f"The session store {path} cannot be opened ({what}); nothing was changed. Move it "
        f"aside (or end the process that holds it), or set {HOME_ENV} to another folder.")


def _json_default(obj: object) -> object:
    """Encode the few non-JSON values callers naturally pass (models, paths, sets)."""
    if isinstance(obj, BaseModel):
        return obj.model_dump(mode="json")
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    raise TypeError(f"cannot store a {type(obj).__name__} in the session store (not JSON)")


def dumps(obj: object) -> str:
    """JSON text of ``obj`` with every known secret masked (docs/security.md)."""
    return mask_json(  # a plan's unchanged steps reuse their text (_frozen_json)
        _json_text(obj, ensure_ascii=False, separators=(",", ":"), default=_json_default))


def loads(text: str | None) -> JSONValue:
    """Decode JSON text written by ``dumps`` (``None`` stays ``None``)."""
    if text is None:
        return None
    value: JSONValue = json.loads(text)
    return value


def loads_object(text: SQLValue) -> JSONObject | None:
    """A column holding a JSON object (written by ``dumps``) decoded; ``None`` for a NULL, and
    for anything else than an object's text (a damaged row reads as empty, never raises)."""
    return as_object(loads(text)) if isinstance(text, str) else None


class _ThreadState(threading.local):
    """Per-thread connection and transaction nesting."""

    conn: sqlite3.Connection | None = None
    pid: int = 0
    depth: int = 0
    """Number of open ``write``/``read`` blocks on this thread's connection."""
    writing: bool = False
    """True when the outermost open block is a write (so nested writes may join it)."""
    committed: list[Callable[[], None]] | None = None
    """What to do once the open write transaction commits (:meth:`Database.on_commit`)."""


class StoreFullError(ConfigError):
    """A write the store's disk had no room for (one line naming the store and the cause).
    The transaction was rolled back: what the file held before is intact."""


_FULL_ERRNOS = frozenset({28, 27, 122})  # ENOSPC, EFBIG, EDQUOT
_SQLITE_FULL = 13  # SQLite's result code (sqlite3.SQLITE_FULL, not in every typeshed)


def is_full_disk(exc: BaseException) -> bool:
    """Whether ``exc`` says the disk (or the file-size limit, or a quota) had no room."""
    if isinstance(exc, OSError) and exc.errno in _FULL_ERRNOS:
        return True
    if isinstance(exc, sqlite3.Error):
        code = getattr(exc, "sqlite_errorcode", None)
        return code == _SQLITE_FULL or "disk is full" in str(exc).lower()
    return False


def full_failure(path: Path, exc: BaseException) -> StoreFullError:
    """The one line a write the disk had no room for gives."""
    cause = "the file is larger than this process may write" if (
        isinstance(exc, OSError) and exc.errno == 27) else "no space left on its disk"
    return StoreFullError(
        f"The session store {path} could not be written ({cause}); this run is not saved, "
        f"what was saved before is intact. Free space there, or set {HOME_ENV} to another "
        "folder.")


class Database:
    """A SQLite file shared by threads and processes."""

    def __init__(self, path: Path, *, busy_timeout: float = 10.0) -> None:
        self.path = path
        self.busy_timeout = busy_timeout
        self._local = _ThreadState()
        self._lock = threading.Lock()
        self._registry: list[tuple[threading.Thread, sqlite3.Connection]] = []
        # Connections inherited through fork: kept referenced, never closed, never used.
        self._orphans: list[sqlite3.Connection] = []
        self._pid = os.getpid()
        self._closed = False
        try:
            prepare_store_file(path)
            self.journal_mode = self._set_wal(self.connection())
            with self.write() as conn:
                migrate(conn)
        except (sqlite3.Error, OSError) as exc:
            self.close()
            raise open_failure(path, exc) from None

    def _set_wal(self, conn: sqlite3.Connection) -> str:
        """Switch the file to WAL (persistent in the file; a no-op once another process did).

        Two processes opening a new file at once can both try the switch: SQLite then answers
        one of them "database is locked" at once, without waiting through the busy timeout. So
        the switch is retried, with a short growing pause, for up to the busy timeout.
        """
        deadline = time.monotonic() + self.busy_timeout
        pause = 0.01
        while True:
            try:
                return str(conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]).lower()
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() + pause > deadline:
                    raise
                time.sleep(pause)
                pause = min(pause * 2, 0.2)

    # -- connections -----------------------------------------------------------------------

    def connection(self) -> sqlite3.Connection:
        """This thread's connection, opened on first use."""
        if self._closed:
            raise RuntimeError(f"the session store {self.path} is closed")
        local = self._local
        pid = os.getpid()
        if local.conn is not None and local.pid == pid:
            return local.conn
        if pid != self._pid:
            self._forget_parent_connections(pid)
        conn = self._open()
        local.conn, local.pid, local.depth, local.writing = conn, pid, 0, False
        with self._lock:
            self._prune_dead_threads()
            self._registry.append((threading.current_thread(), conn))
        return conn

    def _open(self) -> sqlite3.Connection:
        # isolation_level=None: the module issues no implicit BEGIN; we manage transactions.
        conn = sqlite3.connect(
            self.path,
            timeout=self.busy_timeout,
            isolation_level=None,
            check_same_thread=False,
        )
        conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
        conn.execute("PRAGMA synchronous = NORMAL")
        return conn

    def _forget_parent_connections(self, pid: int) -> None:
        """After a fork: drop (without closing) every connection the parent opened."""
        with self._lock:
            if self._pid == pid:
                return
            self._orphans.extend(conn for _, conn in self._registry)
            self._registry = []
            self._pid = pid
            self._lock = threading.Lock()

    def _prune_dead_threads(self) -> None:
        """Close connections of threads that ended (their thread-local is gone)."""
        alive = []
        for thread, conn in self._registry:
            if thread.is_alive():
                alive.append((thread, conn))
            else:
                conn.close()
        self._registry = alive

    def close(self) -> None:
        """Close every connection this process opened; the store is unusable afterwards."""
        with self._lock:
            self._closed = True
            if os.getpid() == self._pid:
                for _, conn in self._registry:
                    conn.close()
            self._registry = []

    # -- transactions ----------------------------------------------------------------------

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction (``BEGIN IMMEDIATE``); nested blocks become savepoints."""
        conn = self.connection()
        local = self._local
        if local.depth:
            if not local.writing:
                raise RuntimeError("cannot write inside a read-only store transaction")
            with self._savepoint(conn):
                yield conn
            return
        conn.execute("BEGIN IMMEDIATE")
        local.depth, local.writing, local.committed = 1, True, []
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if is_full_disk(exc):  # rolled back: the file holds what it held before
                raise full_failure(self.path, exc) from None
            raise
        finally:
            committed, local.committed = local.committed, None
            local.depth, local.writing = 0, False
        for fn in committed:  # only reached after COMMIT
            fn()

    def on_commit(self, fn: Callable[[], None]) -> None:
        """Call ``fn`` once this thread's open write transaction has committed; never when it
        (or the savepoint ``fn`` was registered in) rolls back. For in-memory state that must
        describe only what the file holds."""
        committed = self._local.committed
        if committed is None:
            raise RuntimeError("on_commit needs an open write transaction")
        committed.append(fn)

    @contextmanager
    def _savepoint(self, conn: sqlite3.Connection) -> Iterator[None]:
        local = self._local
        name = f"sp{local.depth}"
        conn.execute(f"SAVEPOINT {name}")
        local.depth += 1
        mark = len(local.committed or ())
        try:
            yield
            conn.execute(f"RELEASE {name}")
        except BaseException:
            conn.execute(f"ROLLBACK TO {name}")
            conn.execute(f"RELEASE {name}")
            if local.committed is not None:
                del local.committed[mark:]  # what the savepoint wrote is gone
            raise
        finally:
            local.depth -= 1

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """A read transaction: several queries see one consistent snapshot."""
        conn = self.connection()
        local = self._local
        if local.depth:
            local.depth += 1
            try:
                yield conn
            finally:
                local.depth -= 1
            return
        conn.execute("BEGIN")
        local.depth = 1
        try:
            yield conn
        finally:
            local.depth = 0
            if conn.in_transaction:
                conn.execute("COMMIT")
