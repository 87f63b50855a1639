"""The TLS context our HTTP transports share: built once per trust setting, on a thread when the
first transport of a process is made.

The SDK's HTTP client loads the trusted certificates (``load_verify_locations``, 25–40 ms
here) in its constructor, for every client: a fallback model, a judge, a second profile each
paid it again. The shared context is the one the HTTP library would build by default (its own
``create_ssl_context()``, which reads ``SSL_CERT_FILE``/``SSL_CERT_DIR``), so nothing about
verification changes; a new value of those variables gets a new context. Every failure here
returns ``None`` and the SDK builds its own, as before.

A cold process pays the load once more, on the path of its first request. :func:`prefetch`
starts it on a thread just before the SDK is imported (about 400 ms of work that holds the
GIL): OpenSSL reads the certificate file without the GIL, so on a machine with two cores the
load costs the first run nearly nothing (``bench/bench_cold.py``). The thread imports nothing:
the HTTP library's core, which ``create_ssl_context`` imports, is imported by the caller first,
so two threads never import at once (their module locks could wait on each other).
"""

from __future__ import annotations

import os
import threading
from types import ModuleType
from typing import TYPE_CHECKING

from ..base.fresh_stack import preimport

if TYPE_CHECKING:
    import ssl

__all__ = ["prefetch", "shared_context"]

_lock = threading.Lock()
_built: dict[tuple[str | None, str | None], _Build] = {}


class _Build:
    """One context being built, or built: ``context`` once ``done`` is set."""

    def __init__(self, httpx: ModuleType) -> None:
        self.httpx = httpx
        self.done = threading.Event()
        self.context: ssl.SSLContext | None = None

    def run(self) -> None:
        try:
            self.context = _build(self.httpx)
        finally:
            self.done.set()


def _build(httpx: ModuleType) -> ssl.SSLContext | None:
    """The HTTP library's default context (what ``verify=True`` gives), or ``None``."""
    try:
        create = getattr(httpx, "create_ssl_context", None)
        return create() if create is not None else None
    except Exception:  # the SDK's own client will build it (and report any problem itself)
        return None


def _key() -> tuple[str | None, str | None]:
    return os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR")


def _job(httpx: ModuleType) -> tuple[_Build, bool]:
    """The build for the current trust setting, and whether it was made just now (the caller
    then runs it)."""
    with _lock:
        key = _key()
        job = _built.get(key)
        if job is not None:
            return job, False
        job = _built[key] = _Build(httpx)
        return job, True


def prefetch(httpx: ModuleType) -> None:
    """Start building the context for the current trust setting on a thread, unless it is built
    or being built. Imports the HTTP library's core first, here, so the thread imports nothing
    (see the module doc)."""
    core = {"httpx2": "httpcore2", "httpx": "httpcore"}.get(httpx.__name__.split(".")[0])
    if core is not None:
        try:
            preimport(core)  # from a fresh stack, as the SDK (_fresh_stack.py)
        except Exception:  # not this library's layout, or broken: build on first use instead
            return
    job, new = _job(httpx)
    if not new:
        return
    try:
        threading.Thread(target=job.run, name="jupyter-agent-tls", daemon=True).start()
    except RuntimeError:  # no thread to be had: build it here
        job.run()


def shared_context(httpx: ModuleType) -> ssl.SSLContext | None:
    """The context for the current trust setting (built on first use with ``httpx``, the HTTP
    library the SDK uses, or waited for when :func:`prefetch` or another thread builds it), or
    ``None`` when it could not be built."""
    job, new = _job(httpx)
    if new:
        job.run()
    job.done.wait()
    return job.context
