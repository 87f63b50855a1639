"""Large imports run from the bottom of a new thread's stack, whatever depth they are asked from.

**Opt-in, off by default**: only with ``JUPYTER_AGENT_TUNE_INTERPRETER=1`` (see
:mod:`._collector`); unset, :func:`preimport` is a plain ``importlib.import_module``. What the
opt-in buys, and why:

CPython 3.11 and 3.12 keep a thread's Python frames in 16 KiB chunks and free the top chunk
each time the stack unwinds below it (python/cpython#142183, fixed upstream from 3.13). Code
whose depth swings back and forth across a chunk boundary pays an ``mmap`` and a ``munmap`` per
swing, and while another thread runs, every ``munmap`` also interrupts the other cores.
Importing the SDK creates about a thousand classes, each a dozen frames deep, so where the
boundary falls decides its cost, and that depends only on how deep the import starts:

- from a notebook cell (``%%toolloop`` runs about 40 frames down): 8,200 swings in the first
  run, which took about 200 ms longer for it;
- from a script's top level, through ``toolloop()``: about 550;
- from the bottom of a new thread's stack: 160 to 180, wherever the caller is.

So on those versions :func:`preimport` runs the import on a new thread while the caller waits;
the caller then binds the module with a plain ``import`` statement, a dictionary lookup by
then. Only one thread imports at a time, as before: the caller only waits (see ``llm/tls.py``
for why two threads must never import at once). The module body sees the caller's context
variables (a copy). ``bench/bench_cold.py`` measures the first run.

A caller that holds a lock the import needs would wait forever for a thread that waits for it.
So the import stays on the caller's thread when the caller is inside an import (a module lock),
holds the import lock or ``logging``'s lock (the SDK's HTTP library makes loggers: a client
made in a logging handler's constructor under ``dictConfig``), or when the interpreter is
shutting down (a new thread never runs then). On Python 3.10 (no frame chunks) and 3.13+
(fixed) the thread would buy nothing, so the import always stays.

On every version, what such an import makes goes straight to the collector's oldest generation
(:mod:`._collector`).

Its callers: the SDK and its HTTP library (``llm/http.py``), and the agent layer at each entry
(the package's names, ``_lazy.py``; a kind's entry point, ``agents/entries.py``; the widget
libraries, ``ui/live.py`` and ``ui/batch.py``).
"""

from __future__ import annotations

import _imp
import contextvars
import importlib
import sys
import threading
from types import FrameType

from .collector import long_lived, tuning

__all__ = ["preimport"]

_CHUNKED = (3, 11) <= sys.version_info[:2] < (3, 13)
"""Whether this Python frees frame chunks as the stack unwinds (see the module doc)."""

_BOOTSTRAP = "<frozen importlib._bootstrap"


def preimport(name: str) -> None:
    """Import module ``name`` on a new thread, waiting for it; its exception is raised here.
    What it makes goes straight to the collector's oldest generation.

    Imports here instead, on the caller's stack, when ``name`` is already imported (nothing to
    gain), on a Python without the problem, when the caller may hold a lock the new thread
    would need (both would wait forever), or when no thread can be started (see the module
    doc).
    """
    if name in sys.modules or not tuning():  # opted out (the default): a plain import
        importlib.import_module(name)  # waits for it if another thread is importing it now
        return
    with long_lived(name):
        if not _CHUNKED or _must_stay():
            importlib.import_module(name)
        else:
            _import_on_a_thread(name)


def _import_on_a_thread(name: str) -> None:
    """Import ``name`` on a new thread while this one waits (see the module doc)."""
    outcome: list[BaseException | None] = []
    context = contextvars.copy_context()

    def run() -> None:
        try:
            context.run(importlib.import_module, name)
            outcome.append(None)
        except BaseException as exc:  # handed to the caller, who raises it
            outcome.append(exc)

    thread = threading.Thread(target=run, name="jupyter-agent-import", daemon=True)
    try:
        thread.start()
    except RuntimeError:  # no thread to be had
        importlib.import_module(name)
        return
    thread.join()  # Ctrl-C interrupts the wait; the import then finishes on its own
    if outcome and outcome[0] is not None:
        raise outcome[0]


def _must_stay() -> bool:
    """Whether the import must run on the caller's thread: it may hold a lock the import needs,
    or the interpreter is shutting down."""
    if sys.is_finalizing() or _imp.lock_held():
        return True
    logging = sys.modules.get("logging")
    lock = getattr(logging, "_lock", None)
    owned = getattr(lock, "_is_owned", None)
    return (owned is not None and bool(owned())) or _inside_an_import()


def _inside_an_import() -> bool:
    """Whether a frame of the calling thread belongs to the import machinery.

    Not ``_handle_fromlist``: ``from jupyter_agent import toolloop`` reads the name through
    it, holding no module lock, and is how a cell uses the package (a module being imported
    further down the stack still counts, by its own frames)."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if code.co_filename.startswith(_BOOTSTRAP) and code.co_name != "_handle_fromlist":
            return True
        frame = frame.f_back
    return False
