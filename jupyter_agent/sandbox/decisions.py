"""A person's decisions on a command's changes: Keep, Discard, Undo; and the list of them.

Only a person decides: these functions are called by ``%agent keep|discard|undo`` typed in a
cell and by a click on a card's button (which goes through the same commands); no tool calls
them, so a model, a replay or an auto-answer cannot. Each returns one line for the person.
"""

from __future__ import annotations

import os
import shutil
import stat

from .ledger import Entry, Record, all_states, load, new_id, records, save, state_dir
from .settle import Settler, ws_dir, ws_lstat, ws_remove

__all__ = ["DecisionError", "changes_text", "discard", "keep", "summary", "undo"]


class DecisionError(Exception):
    """A decision that cannot be made (unknown id, already decided, changed since)."""


def _find(rec_id: str) -> tuple[str, str, Record]:
    """(private folder, workspace, record) of the command ``rec_id`` (a unique prefix)."""
    found = [(state, rec) for state in all_states()
             if (rec := load(state, rec_id.strip())) is not None]
    if len(found) != 1 or not found[0][1].root:
        raise DecisionError(f"No sandboxed command {rec_id!r} (see %agent changes).")
    state, rec = found[0]
    return state, rec.root, rec


def _names(entries: list[Entry], most: int = 3) -> str:
    names = [f"`{e.path}`" for e in entries[:most]]
    more = len(entries) - most
    return ", ".join(names) + (f" and {more} more" if more > 0 else "")


def summary(rec: Record, *, applied: bool = False) -> list[str]:
    """The lines a tool result shows for one command's changes: what was held, and (with
    ``applied``) what was applied. No id: the model cannot decide, and a replayed result must
    not differ by one; ``%agent changes`` shows ids and every applied change."""
    lines: list[str] = []
    if rec.applied and applied:
        counts = []
        for kind in ("added", "changed", "removed"):
            n = sum(e.files for e in rec.applied if e.kind == kind and (e.tree or not e.is_dir))
            if n:
                counts.append(f"{n} {kind}")
        files = [e for e in rec.applied if e.tree or not e.is_dir] or rec.applied
        lines.append(f"[{rec.tool} changed the workspace: {', '.join(counts) or 'folders'} "
                     f"({_names(files)}); a person can undo it]")
    if rec.undo_note and applied:
        lines.append(f"[{rec.undo_note}]")
    by_reason: dict[tuple[str, str], list[Entry]] = {}
    for e in rec.held:
        by_reason.setdefault((e.reason, e.kind), []).append(e)
    for (reason, _kind), entries in by_reason.items():
        verb = {"added": "wrote", "changed": "replaced", "removed": "removed"}[entries[0].kind]
        lines.append(f"[{rec.tool} {verb} {_names(entries)}, {reason}: held until a person "
                     "keeps it; later commands see it, nothing outside does]")
    if rec.skipped:
        lines.append(f"[special files not applied: {', '.join(rec.skipped[:3])}]")
    return lines


def keep(rec_id: str) -> str:
    """Apply the held changes of command ``rec_id`` to the workspace (Undo-able)."""
    state, root, rec = _find(rec_id)
    if rec.held_state != "held":
        raise DecisionError(f"Command {rec.id} has no held changes to keep ({rec.held_state}).")
    held = os.path.join(state, "held", rec.id)
    kept = Record(id=new_id(), root=root, tool="keep", label=f"keep {rec.id}", time=rec.time)
    Settler(held, root, None, os.path.join(state, "held", kept.id),
            os.path.join(state, "undo", kept.id), kept).run()
    shutil.rmtree(held, ignore_errors=True)
    rec.held_state = "kept"
    save(state, rec)
    if kept.held:
        kept.held_state = "held"
    save(state, kept)
    return (f"Kept {len(rec.held)} held change(s) of {rec.id} ({_names(rec.held)}); "
            f"undo: %agent undo {kept.id}")


def discard(rec_id: str) -> str:
    """Delete the held changes of command ``rec_id``: the workspace was never touched."""
    state, root, rec = _find(rec_id)
    if rec.held_state != "held":
        raise DecisionError(f"Command {rec.id} has no held changes to discard "
                            f"({rec.held_state}).")
    shutil.rmtree(os.path.join(state, "held", rec.id), ignore_errors=True)
    rec.held_state = "discarded"
    save(state, rec)
    return f"Discarded {len(rec.held)} held change(s) of {rec.id} ({_names(rec.held)})."


def _tree_unchanged(root: str, e: Entry) -> bool:
    """Nothing in the folder applied whole changed since (no change time after it)."""
    top = os.path.join(root, e.path)
    for dirpath, dirs, files in os.walk(top):
        for n in [".", *dirs, *files]:
            try:
                if os.lstat(os.path.join(dirpath, n)).st_ctime_ns > e.applied_ns:
                    return False
            except OSError:
                return False
    return True


def _same(root: str, e: Entry) -> bool:
    st = ws_lstat(root, e.path)
    if e.tree and st is not None and stat.S_ISDIR(st.st_mode) and e.after is not None:
        return st.st_ino == e.after[0] and _tree_unchanged(root, e)
    if e.after is None:
        return st is None
    if st is None:
        return False
    if stat.S_ISDIR(st.st_mode):
        return st.st_ino == e.after[0]
    return (st.st_ino, st.st_mtime_ns, st.st_size) == tuple(e.after)


def undo(rec_id: str) -> str:
    """Restore what command ``rec_id`` overwrote or removed and remove what it added;
    refused as a whole when one of its paths changed since."""
    state, root, rec = _find(rec_id)
    if rec.undone:
        raise DecisionError(f"Command {rec.id} was already undone.")
    for e in rec.applied:
        if not _same(root, e):
            raise DecisionError(f"Undo of {rec.id} refused: `{e.path}` changed since "
                                "(by you or a later command); nothing was undone.")
    prev_root = os.path.join(state, "undo", rec.id)
    for e in reversed(rec.applied):
        parent, _, name = e.path.rpartition("/")
        with ws_dir(root, parent or ".") as fd:
            if e.after is not None:
                if e.is_dir:
                    try:
                        os.rmdir(name, dir_fd=fd)
                    except OSError:
                        ws_remove(fd, name)
                else:
                    os.unlink(name, dir_fd=fd)
            if e.prev:
                os.rename(os.path.join(prev_root, e.path), name, dst_dir_fd=fd)
    shutil.rmtree(prev_root, ignore_errors=True)
    rec.undone = True
    save(state, rec)
    lost = f" ({rec.undo_note})" if rec.undo_note else ""
    n = sum(e.files if e.tree else 1 for e in rec.applied)
    return f"Undid {rec.id}: {n} change(s) reverted{lost}."


def changes_text(root: str, most: int = 20) -> str:
    """The recent commands' changes and the held ones, one line each."""
    recs = records(state_dir(root))[-most:]
    if not recs:
        return "No sandboxed command has changed this workspace."
    lines = [f"Changes in {root} (newest last):"]
    for r in recs:
        bits = []
        if r.applied:
            n = sum(e.files if e.tree else 1 for e in r.applied)
            bits.append(f"{n} applied" + (" (undone)" if r.undone else ""))
        if r.held:
            bits.append(f"{len(r.held)} {r.held_state}: {_names(r.held)}")
        lines.append(f"  {r.id}  {r.tool:<6} {'; '.join(bits) or 'nothing'}  "
                     f"{r.label.splitlines()[0][:60] if r.label else ''}")
    return "\n".join(lines)
