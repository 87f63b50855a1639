"""What sandboxed commands changed, what is held, and the previous versions Undo restores.

Everything lives in a private folder (0700) per workspace beside the agent's store
(``<store folder>/sandbox/<workspace hash>/``), which no sandboxed command can see:

* ``held/<id>/``: one held layer, an overlay upper holding only the changes a person must
  decide on; stacked under the next commands' upper layers so they see what they did;
* ``undo/<id>/``: the previous versions of what a command overwrote or removed;
* ``records/<id>.json``: one :class:`Record` per command.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import time
import uuid
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from ..base.private_dir import private_dir

__all__ = ["Entry", "Record", "all_states", "held_layers", "load", "new_id", "records", "save", "state_dir"]

KEEP_RECORDS = 50
"""Records (and their undo data) kept per workspace; older ones are pruned."""


class Entry(BaseModel):
    """One path a command added, changed or removed (relative to the workspace)."""

    path: str
    kind: Literal["added", "changed", "removed"]
    reason: str = ""
    """Why it is held (empty for an applied change)."""
    is_dir: bool = False
    prev: bool = False
    """A previous version was moved aside and Undo can restore it."""
    after: tuple[int, int, int] | None = None
    """(inode, mtime ns, size) of what was applied: Undo refuses when it changed since."""
    tree: bool = False
    """A new folder applied whole (one rename); Undo refuses when anything in it has a change
    time after ``applied_ns``."""
    files: int = 1
    """Entries this change stands for (a whole new folder: everything in it)."""
    applied_ns: int = 0


class Record(BaseModel):
    """One sandboxed command's changes."""

    id: str
    root: str = ""
    """The workspace (canonical)."""
    tool: str
    label: str
    time: float
    applied: list[Entry] = []
    held: list[Entry] = []
    held_state: Literal["none", "held", "kept", "discarded"] = "none"
    undone: bool = False
    undo_note: str = ""
    """Empty, or why Undo cannot restore everything (too large to keep)."""
    skipped: list[str] = []
    """Special files (FIFOs, sockets, devices) that were not applied."""


def _private(path: str) -> str:
    os.makedirs(path, mode=0o700, exist_ok=True)
    st = os.lstat(path)
    if st.st_uid != os.geteuid() or st.st_mode & 0o077:
        os.chmod(path, 0o700)
    return path


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _bases() -> list[str]:
    """Where private folders live: beside the store, and (for a workspace that holds the
    store) a private folder of this user in the system's temp folder."""
    from ..session.paths import default_data_dir

    return [os.path.join(os.path.realpath(default_data_dir()), "sandbox"),
            os.path.join(os.path.realpath(tempfile.gettempdir()),
                         f"jupyter-agent-sandbox-{os.geteuid()}")]


def all_states() -> list[str]:
    """The private folders of every workspace that has one."""
    out: list[str] = []
    for base in _bases():
        try:
            out += sorted(os.path.join(base, n) for n in os.listdir(base))
        except OSError:
            continue
    return out


def state_dir(root: str) -> str:
    """The private folder of the workspace ``root`` (canonical), created 0700: beside the
    store, or in this user's private temp folder when the store lies in the workspace (the
    command's overlay must not contain its own upper folder).

    Raises:
        OSError: the private folder cannot be made or is not ours.
    """
    beside, in_tmp = _bases()
    if _inside(beside, root) or _inside(root, beside):
        base = str(private_dir(Path(in_tmp)))
    else:
        base = _private(beside)
    digest = hashlib.sha256(root.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return _private(os.path.join(base, digest))


def new_id() -> str:
    """A short, sortable id: time then random."""
    return f"{int(time.time() * 1000):x}"[-8:] + uuid.uuid4().hex[:4]


def save(state: str, rec: Record) -> None:
    """Write ``rec`` (atomically) and prune old records."""
    folder = _private(os.path.join(state, "records"))
    tmp = os.path.join(folder, f".{rec.id}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(rec.model_dump_json())
    os.replace(tmp, os.path.join(folder, f"{rec.id}.json"))
    _prune(state)


def load(state: str, rec_id: str) -> Record | None:
    """The record ``rec_id`` (a unique prefix is enough), or None."""
    matches = [r for r in records(state) if r.id.startswith(rec_id)] if rec_id else []
    return matches[0] if len(matches) == 1 else None


def records(state: str) -> list[Record]:
    """Every record, oldest first."""
    folder = os.path.join(state, "records")
    out: list[Record] = []
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(".json"))
    except OSError:
        return out
    for name in names:
        try:
            with open(os.path.join(folder, name), encoding="utf-8") as f:
                out.append(Record.model_validate_json(f.read()))
        except (OSError, ValueError):
            continue
    out.sort(key=lambda r: (r.time, r.id))
    return out


def held_layers(state: str) -> list[str]:
    """The held layers still undecided, newest first (the order of ``lowerdir``)."""
    folder = os.path.join(state, "held")
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    by_id = {r.id: r for r in records(state)}
    live = [n for n in names if n in by_id and by_id[n].held_state == "held"]
    live.sort(key=lambda n: (by_id[n].time, n), reverse=True)
    return [os.path.join(folder, n) for n in live]


def _prune(state: str) -> None:
    """Drop the undo data and record of commands beyond the newest ``KEEP_RECORDS``; a
    record with changes still held is never dropped."""
    old = records(state)[:-KEEP_RECORDS]
    for rec in old:
        if rec.held_state == "held":
            continue
        shutil.rmtree(os.path.join(state, "undo", rec.id), ignore_errors=True)
        try:
            os.unlink(os.path.join(state, "records", f"{rec.id}.json"))
        except OSError:
            pass
