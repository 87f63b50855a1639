"""The shared TLS context (``llm/tls.py``): the library's default, built once per trust setting,
and never a reason for a request to fail."""

from __future__ import annotations

import os
import ssl

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
