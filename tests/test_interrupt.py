"""The one async-exception helper (``jupyter_agent/base/interrupt.py``): it interrupts a busy
thread and refuses an ended one, and is the only caller of
``PyThreadState_SetAsyncExc`` in the package (a run's stop, a tool's deadline and a cell's time
limit all use it)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from jupyter_agent.base.interrupt import raise_in_thread

PACKAGE = Path(__file__).resolve().parents[1] / "jupyter_agent"


class _Stop(Exception):
    pass


def test_a_busy_thread_raises_and_an_ended_one_is_refused() -> None:
    seen: list[str] = []
    started = threading.Event()

    def spin() -> None:
        started.set()
        try:
            end = time.monotonic() + 60
            while time.monotonic() < end:
                pass
            seen.append("ran out")
        except _Stop:
            seen.append("stopped")

    t = threading.Thread(target=spin)
    t.start()
    started.wait(10)
    assert t.ident is not None and raise_in_thread(t.ident, _Stop)
    t.join(30)
    assert seen == ["stopped"]
    assert raise_in_thread(t.ident, _Stop) is False  # the thread ended: nobody is hit


def test_it_is_the_only_caller_of_the_c_api() -> None:
    callers = sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
                     if "PyThreadState_SetAsyncExc(" in p.read_text(encoding="utf-8"))
    assert callers == ["base/interrupt.py"]
