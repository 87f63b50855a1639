"""The shared TLS context (``llm/tls.py``): the library's default, built once per trust setting,
and never a reason for a request to fail."""

from __future__ import annotations

import os
import ssl
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from jupyter_agent.llm import http, tls
from jupyter_agent.llm.http import HttpTransport
from tests.fakes.openai_server import ScriptedOpenAI, text

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(autouse=True)
def fresh_contexts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tls, "_built", {})


def _context_of(transport: HttpTransport) -> object:
    return transport._sdk._client._transport._pool._ssl_context


def test_the_shared_context_verifies_as_the_library_default_does() -> None:
    ctx = tls.shared_context(http._httpx_module())
    assert isinstance(ctx, ssl.SSLContext)
    assert ctx.verify_mode == ssl.CERT_REQUIRED and ctx.check_hostname
    assert ctx.cert_store_stats()["x509_ca"] > 0  # the trusted roots are loaded
    assert tls.shared_context(http._httpx_module()) is ctx  # built once


def test_every_transport_uses_the_one_context(server: ScriptedOpenAI) -> None:
    a = HttpTransport("sk-a", server.base_url, 10)
    b = HttpTransport("sk-b", "https://example.invalid/v1", 10)
    assert _context_of(a) is _context_of(b) is tls.shared_context(http._httpx_module())
    server.enqueue(text("Hi."))
    assert a.send({"model": "m", "messages": [{"role": "user", "content": "hi"}]},
                  stream=False)["choices"][0]["message"]["content"] == "Hi."


def test_another_trust_setting_gets_its_own_context(monkeypatch: pytest.MonkeyPatch) -> None:
    first = tls.shared_context(http._httpx_module())
    bundle = ssl.get_default_verify_paths().cafile or os.environ.get("SSL_CERT_FILE")
    if not bundle:
        pytest.skip("no CA bundle file on this machine")
    monkeypatch.setenv("SSL_CERT_FILE", bundle)
    monkeypatch.setenv("SSL_CERT_DIR", "/nonexistent-on-purpose")
    assert tls.shared_context(http._httpx_module()) is not first


def test_a_context_that_cannot_be_built_leaves_the_sdk_its_own(
        server: ScriptedOpenAI, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object, **kwargs: object) -> ssl.SSLContext:
        raise ssl.SSLError("no certificates here")

    monkeypatch.setattr(http._httpx_module(), "create_ssl_context", broken)
    assert tls.shared_context(http._httpx_module()) is None
    transport = HttpTransport("sk-a", server.base_url, 10)
    assert isinstance(_context_of(transport), ssl.SSLContext)  # the SDK built one itself
    server.enqueue(text("Still fine."))
    assert transport.send({"model": "m", "messages": []}, stream=False)[
        "choices"][0]["message"]["content"] == "Still fine."


def test_a_prefetched_context_is_the_one_every_transport_gets(server: ScriptedOpenAI) -> None:
    httpx = http._httpx_module()
    tls.prefetch(httpx)
    tls.prefetch(httpx)  # a second call starts nothing new
    ctx = tls.shared_context(httpx)  # waits for the thread
    assert isinstance(ctx, ssl.SSLContext) and ctx.cert_store_stats()["x509_ca"] > 0
    assert len(tls._built) == 1
    transport = HttpTransport("sk-a", server.base_url, 10)
    assert _context_of(transport) is ctx
    server.enqueue(text("Hi."))
    assert transport.send({"model": "m", "messages": []}, stream=False)[
        "choices"][0]["message"]["content"] == "Hi."


def test_a_transport_made_while_the_context_loads_waits_for_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    httpx = http._httpx_module()
    real = httpx.create_ssl_context
    started, release = threading.Event(), threading.Event()
    calls: list[str] = []

    def slow() -> ssl.SSLContext:
        calls.append(threading.current_thread().name)
        started.set()
        assert release.wait(10)
        ctx: ssl.SSLContext = real()
        return ctx

    monkeypatch.setattr(httpx, "create_ssl_context", slow)
    tls.prefetch(httpx)
    assert started.wait(10)
    got: list[object] = []
    waiter = threading.Thread(target=lambda: got.append(tls.shared_context(httpx)))
    waiter.start()
    waiter.join(0.2)
    assert waiter.is_alive() and got == []  # still loading: it waits, it does not build again
    release.set()
    waiter.join(10)
    assert isinstance(got[0], ssl.SSLContext) and calls == ["jupyter-agent-tls"]


def test_a_prefetch_that_fails_leaves_the_sdk_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken() -> ssl.SSLContext:
        raise ssl.SSLError("no certificates here")

    monkeypatch.setattr(http._httpx_module(), "create_ssl_context", broken)
    tls.prefetch(http._httpx_module())
    assert tls.shared_context(http._httpx_module()) is None


_NO_IMPORT_ON_THE_THREAD = """
import sys, threading
imports = []
sys.addaudithook(lambda event, args: imports.append(
    (threading.current_thread().name, args[0])) if event == "import" else None)
from jupyter_agent.llm import http, tls
httpx = http._httpx_module()
before = {name for name in sys.modules}
tls.prefetch(httpx)
import openai  # what the first transport imports while the context loads
assert tls.shared_context(httpx) is not None
print(sorted({m for t, m in imports if t == "jupyter-agent-tls"}))
print("httpcore2" in before)
"""


def test_the_loading_thread_imports_nothing() -> None:
    # Two threads importing at once can wait on each other's module locks: the caller of
    # prefetch imports what the context needs, the thread only loads certificates.
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run([sys.executable, "-c", _NO_IMPORT_ON_THE_THREAD], capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(root)}, timeout=60)
    assert proc.returncode == 0, proc.stderr
    on_thread, core_was_loaded = proc.stdout.split("\n")[:2]
    assert core_was_loaded == "False"  # a cold process: the core was not imported before
    assert on_thread == "[]"


def test_a_core_that_fails_to_import_starts_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(name: str) -> None:
        raise RuntimeError(f"{name} is broken")

    monkeypatch.setattr(tls, "preimport", broken)
    tls.prefetch(http._httpx_module())  # no error, no thread
    assert tls._built == {}
    assert isinstance(tls.shared_context(http._httpx_module()), ssl.SSLContext)  # built inline
