"""``_fresh_stack.preimport``: a large import runs at the bottom of a new thread's stack, however
deep its caller is, and every way it can go wrong ends as a plain import would (docs/
architecture.md, "The first run")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from jupyter_agent.base import fresh_stack as _fresh_stack
from jupyter_agent.base.fresh_stack import preimport

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def opted_in(monkeypatch: pytest.MonkeyPatch) -> None:
    """Everything below is the opt-in's behaviour (``JUPYTER_AGENT_TUNE_INTERPRETER=1``; off by
    default, see test_opted_out_nothing_of_the_process_changes); child interpreters inherit
    it."""
    monkeypatch.setenv("JUPYTER_AGENT_TUNE_INTERPRETER", "1")

on_a_thread = pytest.mark.skipif(not _fresh_stack._CHUNKED,
                                 reason="this Python frees no frame chunks: no thread is used")


@pytest.fixture
def modules(tmp_path: Path) -> Iterator[Path]:
    """A folder on ``sys.path`` for throwaway modules; they leave ``sys.modules`` afterwards."""
    before = set(sys.modules)
    sys.path.insert(0, str(tmp_path))
    try:
        yield tmp_path
    finally:
        sys.path.remove(str(tmp_path))
        for name in set(sys.modules) - before:
            if name.startswith("fs_"):
                del sys.modules[name]


def _write(folder: Path, name: str, body: str) -> None:
    (folder / f"{name}.py").write_text(textwrap.dedent(body))


def _script(code: str, folder: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``code`` in a fresh interpreter that sees ``folder``'s modules; a hang fails the test."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, "PYTHONPATH": (
                              os.pathsep.join([str(folder), str(ROOT)]))})


@on_a_thread
def test_the_module_is_imported_on_another_thread_and_ready_for_the_caller(
        modules: Path) -> None:
    _write(modules, "fs_plain", """
        import threading
        THREAD = threading.current_thread().name
        """)
    preimport("fs_plain")
    import fs_plain  # type: ignore[import-not-found]

    assert fs_plain.THREAD == "jupyter-agent-import"


def test_an_error_in_the_module_is_raised_to_the_caller_and_leaves_nothing_half_made(
        modules: Path) -> None:
    _write(modules, "fs_broken", "raise ValueError('bad module body')\n")
    with pytest.raises(ValueError, match="bad module body"):
        preimport("fs_broken")
    assert "fs_broken" not in sys.modules
    with pytest.raises(ModuleNotFoundError, match="fs_missing"):
        preimport("fs_missing")


def test_a_module_already_imported_starts_no_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_thread(*args: object, **kwargs: object) -> None:
        raise AssertionError("a thread was started")

    monkeypatch.setattr(_fresh_stack.threading, "Thread", no_thread)
    preimport("json")  # imported by this test module


def test_without_a_thread_the_import_happens_here(modules: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", refuse)
    _write(modules, "fs_here", """
        import threading
        THREAD = threading.current_thread().name
        """)
    preimport("fs_here")
    import fs_here  # type: ignore[import-not-found]

    assert fs_here.THREAD == threading.current_thread().name


def test_inside_an_import_it_imports_on_the_same_thread_and_a_cycle_does_not_hang(
        modules: Path) -> None:
    # fs_outer's body asks for fs_inner, which imports fs_outer back: on another thread,
    # fs_inner would wait for fs_outer's lock, held by this thread waiting for it: forever.
    # The script runs in its own interpreter so a hang fails the test instead of the suite.
    _write(modules, "fs_outer", """
        import threading
        from jupyter_agent.base.fresh_stack import preimport
        preimport("fs_inner")
        import fs_inner
        NAME = "outer"
        """)
    _write(modules, "fs_inner", """
        import threading
        import fs_outer  # partly made, as in any import cycle
        THREAD = threading.current_thread().name
        """)
    proc = _script("import fs_outer, fs_inner; print(fs_outer.NAME, fs_inner.THREAD)", modules)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["outer", "MainThread"]


def _lazy_package(folder: Path) -> None:
    """``fs_pkg``, whose name ``THREAD`` is exported lazily with ``entry=True``: its first
    access imports ``fs_pkg.mod`` through preimport, as ``jupyter_agent``'s names do."""
    (folder / "fs_pkg").mkdir()
    _write(folder / "fs_pkg", "__init__", """
        from jupyter_agent.base.lazy import lazy_exports
        __getattr__, __dir__ = lazy_exports(__name__, {"THREAD": "mod"}, ["THREAD"], entry=True)
        """)
    _write(folder / "fs_pkg", "mod", """
        import threading
        THREAD = threading.current_thread().name
        """)


@on_a_thread
def test_a_from_import_of_a_lazy_name_gets_the_fresh_stack(modules: Path) -> None:
    # ``from jupyter_agent import toolloop`` in a cell reads the name through importlib's
    # _handle_fromlist, which holds no module lock: not "inside an import".
    _lazy_package(modules)
    proc = _script("from fs_pkg import THREAD; print(THREAD)", modules)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["jupyter-agent-import"]


def test_a_from_import_of_a_lazy_name_inside_an_import_stays_on_the_thread(
        modules: Path) -> None:
    # The same statement in a module's body: that module's lock is held, so it stays.
    _lazy_package(modules)
    _write(modules, "fs_user", """
        from fs_pkg import THREAD
        """)
    proc = _script("import fs_user; print(fs_user.THREAD)", modules)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["MainThread"]


_INTERRUPTED = """
import os, signal, sys, threading, time
from jupyter_agent.base.fresh_stack import preimport
threading.Timer(0.2, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
start = time.monotonic()
try:
    preimport("fs_slow")
except KeyboardInterrupt:
    waited = time.monotonic() - start
    import fs_slow  # the import went on: this waits for it to finish
    print(waited < fs_slow.SLEEP, fs_slow.DONE)
"""


@on_a_thread
def test_ctrl_c_stops_the_wait_and_the_module_is_still_imported_whole(modules: Path) -> None:
    _write(modules, "fs_slow", """
        import time
        SLEEP = 20
        time.sleep(SLEEP / 4)
        DONE = True
        """)
    proc = _script(_INTERRUPTED, modules, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True", "True"]


_SDK_DEPTH = """
import json, sys, threading
depth = int(sys.argv[1])
seen = {}

def hook(event, args):
    # importlib.import_module raises no audit event itself: the package's first import
    # statement stands for it.
    package = args[0].split(".")[0] if event == "import" else None
    if package in ("openai", "httpx2", "httpx", "httpcore2", "httpcore") and package not in seen:
        frame, n = sys._getframe(), 0
        while frame is not None:
            frame, n = frame.f_back, n + 1
        seen[package] = [threading.current_thread().name, n]

sys.addaudithook(hook)
from jupyter_agent.llm.http import HttpTransport

def down(n):
    return down(n - 1) if n else HttpTransport("sk-test", "http://127.0.0.1:9/v1", 5)

down(depth)
print(json.dumps(seen))
"""


def _sdk_imports(depth: int) -> dict[str, list[object]]:
    proc = subprocess.run([sys.executable, "-c", _SDK_DEPTH, str(depth)], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    seen: dict[str, list[object]] = json.loads(proc.stdout)
    return seen


@on_a_thread
def test_the_sdk_is_imported_from_the_same_shallow_stack_however_deep_the_first_client() -> None:
    # A notebook cell calls the first client about 40 frames down; the cost of importing the
    # SDK must not depend on that (see _fresh_stack.py).
    shallow, deep = _sdk_imports(0), _sdk_imports(60)
    assert "openai" in shallow
    assert shallow == deep
    for name, (thread, frames) in shallow.items():
        assert thread == "jupyter-agent-import", name
        assert isinstance(frames, int) and frames < 20, (name, frames)



def test_a_client_made_under_logging_s_lock_does_not_hang(modules: Path) -> None:
    # dictConfig holds logging's lock while it builds handlers; the HTTP library's import makes
    # loggers, so on another thread it would wait for this one, waiting for it.
    proc = _script("""
        import logging, logging.config
        from jupyter_agent.llm.http import HttpTransport

        class ModelHandler(logging.Handler):
            def __init__(self):
                super().__init__()
                self.transport = HttpTransport("sk-test", "http://127.0.0.1:9/v1", 5)

        logging.config.dictConfig({"version": 1, "handlers": {"h": {"()": ModelHandler}},
                                   "root": {"handlers": ["h"]}})
        print("configured")
        """, modules)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["configured"]


def test_under_the_import_lock_or_at_shutdown_it_imports_here(modules: Path) -> None:
    _write(modules, "fs_where", """
        import threading
        THREAD = threading.current_thread().name
        """)
    _write(modules, "fs_late", "VALUE = 1\n")
    proc = _script("""
        import _imp, sys
        from jupyter_agent.base.fresh_stack import preimport

        _imp.acquire_lock()
        try:
            preimport("fs_where")
        finally:
            _imp.release_lock()
        import fs_where
        print(fs_where.THREAD)

        class Closer:  # a module global: collected while the interpreter shuts down
            def __del__(self):
                try:
                    preimport("fs_late")  # a new thread would never run now
                except ImportError:
                    pass  # the import system may be gone already, as for any import
                print("shutdown-done", flush=True)

        keep = Closer()
        """, modules)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["MainThread", "shutdown-done"]


@on_a_thread
def test_the_module_body_sees_the_caller_s_context(modules: Path) -> None:
    _write(modules, "fs_var", """
        import contextvars
        VAR = contextvars.ContextVar("fs_var", default="default")
        """)
    _write(modules, "fs_reads", """
        import decimal, fs_var, threading
        SEEN = (fs_var.VAR.get(), decimal.getcontext().prec, threading.current_thread().name)
        """)
    import decimal

    import fs_var  # type: ignore[import-not-found]

    token = fs_var.VAR.set("the caller's")
    try:
        with decimal.localcontext() as ctx:
            ctx.prec = 5
            preimport("fs_reads")
    finally:
        fs_var.VAR.reset(token)
    import fs_reads  # type: ignore[import-not-found]

    assert fs_reads.SEEN == ("the caller's", 5, "jupyter-agent-import")


def test_a_python_without_frame_chunks_imports_here(modules: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_fresh_stack, "_CHUNKED", False)  # 3.10, or 3.13 and later
    _write(modules, "fs_unchunked", """
        import threading
        THREAD = threading.current_thread().name
        """)
    preimport("fs_unchunked")
    import fs_unchunked  # type: ignore[import-not-found]

    assert fs_unchunked.THREAD == threading.current_thread().name
