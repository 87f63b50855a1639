"""The TLS context our HTTP transports share: built once per trust setting.

The SDK's HTTP client loads the trusted certificates (``load_verify_locations``, 25–40 ms
here) in its constructor, for every client: a fallback model, a judge, a second profile each
paid it again. The shared context is the one the HTTP library would build by default (its own
``create_ssl_context()``, which reads ``SSL_CERT_FILE``/``SSL_CERT_DIR``), so nothing about
verification changes; a new value of those variables gets a new context. Any failure here
returns ``None`` and the SDK builds its own, as before.

Building it on a thread while a cold process imports the SDK was tried and measured: OpenSSL
keeps the GIL for part of the load, and the gain (about 15 ms of a 600 ms start) was below what
``bench/bench_cold.py`` can tell apart, so it is not done.
"""

from __future__ import annotations

import os
import threading
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import ssl

__all__ = ["shared_context"]

_lock = threading.Lock()
_built: dict[tuple[str | None, str | None], ssl.SSLContext | None] = {}


def _build(httpx: ModuleType) -> ssl.SSLContext | None:
    """The HTTP library's default context (what ``verify=True`` gives), or ``None``."""
    try:
        create = getattr(httpx, "create_ssl_context", None)
        return create() if create is not None else None
    except Exception:  # the SDK's own client will build it (and report any problem itself)
        return None


def shared_context(httpx: ModuleType) -> ssl.SSLContext | None:
    """The context for the current trust setting (built on first use with ``httpx``, the HTTP
    library the SDK uses), or ``None`` when it could not be built."""
    key = os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR")
    with _lock:
        if key not in _built:
            _built[key] = _build(httpx)
        return _built[key]
