"""The process-wide record/replay mode (``%agent record`` / ``%agent replay`` / ``%agent live``).

The client factory (:func:`jupyter_agent.clients.factory.make_client`) consults
``settings.cassette_mode``: in ``record`` mode it builds recording clients, in ``replay`` mode
replaying ones, both on the cassette at ``settings.cassette_path`` (one cassette object per
file, shared by every client of the process: :mod:`jupyter_agent.clients.cassettes`). This
module switches the mode.

Record and replay run on their own session store unless told to keep the real one: a replay
must start from the same empty sessions as its recording, or the history sent along would
differ; and a replay must not mix recorded answers into real sessions. ``%agent live`` puts
the real store back.

A recording starts on an empty temporary store. A replay's store is a file in the temporary
directory keyed by the cassette's path, so it survives a kernel restart: a question left
waiting is still found by ``%agent pending`` / ``%agent resume`` once the notebook's
``%agent replay`` cell has run again. That cell starts the store afresh unless a run is still
waiting in it (Restart Kernel and Run All then replays from empty sessions).
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import tempfile
import threading
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypedDict

from ..base import config
from ..base.config import CassetteMode, CassetteTiming
from ..base.errors import MagicUsageError
from ..base.private_dir import UnsafeFolderError, private_dir
from ..base.state import STATE
from ..clients.cassette import Cassette
from ..clients.cassettes import active_cassette, cassette_at, resolve_cassette_path
from ..clients.factory import clear_client_cache, make_client, resolve_model
from ..llm.protocol import ModelClient

if TYPE_CHECKING:
    from ..session.store import Store

__all__ = ["Mode", "start", "go_live", "cell_client", "describe", "replay_store_dir"]

Mode = CassetteMode

_lock = threading.RLock()


class _Saved(TypedDict, total=False):
    """What ``go_live`` restores."""

    store: Store | None
    """The previous default store (``None``: the one at the default path)."""
    scratch: Path
    """The scratch directory, deleted when the mode ends."""
    kept: Path
    """A replay store's directory, left in place."""
    model: str | None
    """The previous ``settings.active_model``, when replay/record changed it."""


def _forget(state: _Saved) -> None:
    """The process-state reset: the scratch store closed and deleted, and the store it stood
    in for closed too (the default store starts afresh, whatever resets first)."""
    from ..session.store import swap_default_store

    scratch = state.pop("scratch", None) or state.pop("kept", None)
    previous = state.pop("store", None)
    state.pop("kept", None)  # the rest is forgotten: nothing to restore in a new process state
    state.pop("model", None)
    if scratch is not None:
        current = swap_default_store(None)
        for store in (current, previous):
            if store is not None:
                store.close()
        shutil.rmtree(scratch, ignore_errors=True)


_state: _Saved = STATE.slot("replay.mode", _Saved, reset=_forget)
"""What ``go_live`` restores (see :class:`_Saved`)."""


def cell_client(mode: Literal["record", "replay"], model: str | None) -> ModelClient:
    """The client for one cell's ``--record`` / ``--replay`` (whatever the process mode).

    A replayed cell uses the cassette's recorded model unless ``--model`` names one.
    """
    if mode == "replay":
        cassette = active_cassette()
        if not cassette.interactions:
            raise MagicUsageError(f"--replay: nothing recorded in {Path(cassette.location).name}"
                                  " yet; record the cell first with --record.")
        return make_client(model or cassette.model or resolve_model().name, cassette="replay")
    return make_client(model or resolve_model().name, cassette="record")


def start(mode: Literal["record", "replay"], path: str | Path | None = None, *,
          model: str | None = None, timing: CassetteTiming = "fast", append: bool = False,
          keep_store: bool = False) -> Cassette:
    """Switch the process to recording into, or replaying from, the cassette at ``path``.

    Args:
        mode: ``record`` or ``replay``.
        path: A notebook (the cassette lives in its metadata) or a JSON file; default
            ``<notebook>.cassette.json`` beside the running notebook.
        model: Record with this model (default: the configured one). Replay uses the recorded
            model unless this names another.
        timing: Replay at full speed (``fast``) or with the recorded delays (``recorded``).
        append: Record: keep what the cassette holds and add to it (default: start afresh).
        keep_store: Use the real session store instead of a scratch one.

    Raises:
        MagicUsageError: replaying a cassette that holds nothing.
    """
    with _lock:
        p = resolve_cassette_path(path)
        cassette = cassette_at(p, reload=True)
        if mode == "replay" and not (cassette.interactions or cassette.answers):
            raise MagicUsageError(f"Nothing recorded in {p.name}: record it first "
                                  "(`%agent record`, or python -m jupyter_agent.replay.rerecord).")
        if mode == "record" and not append:
            cassette.clear()
        _restore()
        wanted = model or (cassette.model if mode == "replay" else None)
        if wanted:
            _state["model"] = config.settings.active_model
            config.settings.active_model = wanted
        if not keep_store:
            if mode == "replay":
                _use_replay_store(p)
            else:
                _use_scratch_store()
        config.settings.cassette_mode = mode
        config.settings.cassette_path = str(p)
        config.settings.cassette_timing = timing
        clear_client_cache()
        return cassette


def go_live() -> Cassette | None:
    """Back to live model calls (and the real session store); returns the cassette that was
    in use, if any."""
    with _lock:
        was = active_cassette() if config.settings.cassette_mode != "live" else None
        _restore()
        config.settings.cassette_mode = "live"
        config.settings.cassette_path = None
        config.settings.cassette_timing = "fast"
        clear_client_cache()
        return was


def describe() -> str:
    """One line: the current mode and cassette."""
    mode = config.settings.cassette_mode
    if mode == "live":
        return "live: model calls go to the model."
    c = active_cassette()
    name = Path(c.location).name
    if mode == "record":
        return f"record: {len(c.interactions)} model call(s) recorded so far into {name}."
    return (f"replay: {len(c.interactions)} recorded model call(s) of {c.model} from {name}"
            f" ({config.settings.cassette_timing} timing).")


# ----------------------------------------------------------------------------- internals
def _use_scratch_store() -> None:
    from ..session import Store
    from ..session.store import swap_default_store

    scratch = Path(tempfile.mkdtemp(prefix="jupyter-agent-cassette-"))
    previous = swap_default_store(Store(scratch / "store.sqlite3"))
    _state["store"] = previous
    _state["scratch"] = scratch


def replay_store_dir(cassette_path: str | Path) -> Path:
    """The directory of the replay store for the cassette at ``cassette_path``: in this
    user's private temp folder, the same one in every kernel process, so it survives a
    restart (``_private_dir.user_temp_dir``; the folder itself is checked when it is used)."""
    key = hashlib.sha256(str(Path(cassette_path).resolve()).encode("utf-8")).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"jupyter-agent-{os.geteuid()}" / f"replay-{key}"


def _replay_folder(cassette_path: Path) -> tuple[Path, bool]:
    """The replay store's folder, private to this user, and whether it is the one that
    survives a restart. One that someone else made first (or opened to others) is never
    used: a fresh private folder is, and the replay says so."""
    where = replay_store_dir(cassette_path)
    try:
        private_dir(where.parent)
        private_dir(where)
        return where, True
    except UnsafeFolderError as exc:
        warnings.warn(f"replay store: {exc}; a fresh private folder is used instead (a "
                      "question waiting in it does not survive a kernel restart).",
                      stacklevel=3)
        return Path(tempfile.mkdtemp(prefix="jupyter-agent-replay-")), False


def _use_replay_store(cassette_path: Path) -> None:
    from ..session import Store
    from ..session.store import swap_default_store

    where, kept = _replay_folder(cassette_path)
    store: Store | None = None
    if (where / "store.sqlite3").exists():
        try:
            store = Store(where / "store.sqlite3")
            if not store.list_pending():  # nothing waiting: replay from empty sessions
                store.close()
                store = None
        except Exception:  # an unreadable leftover: start afresh
            store = None
    if store is None:
        for old in where.iterdir():  # our own folder: empty it, never follow a link out
            if old.is_dir() and not old.is_symlink():
                shutil.rmtree(old, ignore_errors=True)
            else:
                old.unlink(missing_ok=True)
        store = Store(where / "store.sqlite3")
    _state["store"] = swap_default_store(store)
    if kept:
        _state["kept"] = where
    else:
        _state["scratch"] = where


def _restore() -> None:
    """Undo what the last ``start`` changed (model choice, scratch store)."""
    if "model" in _state:
        config.settings.active_model = _state.pop("model")
    scratch = _state.pop("scratch", None)
    if scratch is not None:
        from ..session.store import swap_default_store

        store = swap_default_store(_state.pop("store", None))
        if store is not None:
            store.close()
        shutil.rmtree(scratch, ignore_errors=True)
    if _state.pop("kept", None) is not None:  # a replay store: closed, the file stays
        from ..session.store import swap_default_store

        store = swap_default_store(_state.pop("store", None))
        if store is not None:
            store.close()


@atexit.register
def _cleanup() -> None:
    scratch = _state.get("scratch")
    if scratch is not None:
        shutil.rmtree(scratch, ignore_errors=True)

