"""Large imports run from the bottom of a new thread's stack, whatever depth they are asked from.

CPython 3.11 and 3.12 keep a thread's Python frames in 16 KiB chunks and free the top chunk
each time the stack unwinds below it (python/cpython#142183, fixed upstream for 3.13 and
later). Code whose depth swings back and forth across a chunk boundary pays an ``mmap`` and a
``munmap`` per swing, and while another thread runs, every ``munmap`` also interrupts the other
cores. Importing the SDK creates about a thousand classes, each a dozen frames deep, so where
the boundary falls decides its cost, and that depends only on how deep the import starts:

- from a notebook cell (``%%toolloop`` runs about 40 frames down): 8,200 swings in the first
  run, which took about 200 ms longer for it;
- from a script's top level, through ``toolloop()``: about 550;
- from the bottom of a new thread's stack: 160 to 180, wherever the caller is.

So :func:`preimport` runs the import on a new thread while the caller waits; the caller then
binds the module with a plain ``import`` statement, a dictionary lookup by then. Only one
thread imports at a time, as before: the caller only waits (see ``llm/tls.py`` for why two
threads must never import at once). ``bench/bench_cold.py`` measures the first run.
"""

from __future__ import annotations

import importlib
import sys
import threading
from types import FrameType

__all__ = ["preimport"]

_BOOTSTRAP = "<frozen importlib._bootstrap"


def preimport(name: str) -> None:
    """Import module ``name`` on a new thread, waiting for it; its exception is raised here.

    Imports here instead, on the caller's stack, when ``name`` is already imported (nothing to
    gain), when the caller is itself inside an import (it may hold a module lock the new thread
    would need: both would wait forever), or when no thread can be started.
    """
    if name in sys.modules or _inside_an_import():
        importlib.import_module(name)
        return
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            importlib.import_module(name)
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


def _inside_an_import() -> bool:
    """Whether a frame of the calling thread belongs to the import machinery."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename.startswith(_BOOTSTRAP):
            return True
        frame = frame.f_back
    return False
