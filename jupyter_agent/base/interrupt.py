"""The one way this package makes another thread raise: CPython's asynchronous exception
(``PyThreadState_SetAsyncExc``), used by a run's stop button (agents/run.py), a tool past its
deadline (tools/_deadline.py) and a notebook cell's time limit (tools/notebook/_time_limit.py).

The exception is raised at the thread's next Python instruction; a thread blocked in C (a
socket read, ``time.sleep``) sees it only once it returns to Python. ``ctypes`` is imported on
the first call: no run start pays for it.
"""

from __future__ import annotations

__all__ = ["raise_in_thread"]


def raise_in_thread(ident: int, exc: type[BaseException] | None) -> bool:
    """Make thread ``ident`` raise ``exc`` at its next Python instruction (best effort);
    ``None`` withdraws an exception set earlier and not raised yet.

    Returns whether exactly one thread was given it (``False``: no such thread, it ended).
    A count above one never happens for a valid id: it is undone rather than hitting other
    threads.
    """
    import ctypes

    tid = ctypes.c_ulong(ident)
    hit = int(ctypes.pythonapi.PyThreadState_SetAsyncExc(
        tid, ctypes.py_object(exc) if exc is not None else None))
    if hit > 1:
        ctypes.pythonapi.PyThreadState_SetAsyncExc(tid, None)
        return False
    return hit == 1
