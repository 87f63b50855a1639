"""web_fetch against a local HTTP server: HTML to text, limits, and refused schemes."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from jupyter_agent.base.errors import ToolError
from jupyter_agent.tools.builtin.web import WebFetchError, web_fetch

pytestmark = pytest.mark.timeout(60)

PAGE = b"""<!doctype html><html><head><title>Test  Page</title>
<style>body { color: red }</style><script>var secret = "SCRIPT-TEXT";</script></head>
<body>
  <h1>Main heading</h1>
  <p>First paragraph with a <a href="/other">relative link</a>.</p>
  <h2>Section</h2>
  <ul><li>alpha</li><li>beta</li></ul>
  <noscript>NOSCRIPT-TEXT</noscript>
</body></html>"""


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:  # keep test output quiet
        pass

    def _send(self, status: int, body: bytes, content_type: str,
              headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        try:
            self.wfile.write(body)
        except OSError:
            pass  # the client stopped reading (size limit): expected

    def do_GET(self) -> None:
        routes = {
            "/page": (200, PAGE, "text/html; charset=utf-8"),
            "/plain": (200, b"just text\n", "text/plain"),
            "/json": (200, b'{"a": 1}', "application/json"),
            "/png": (200, b"\x89PNG\r\n\x1a\n" + b"\x00" * 100, "image/png"),
            "/big": (200, b"z" * 5_000_000, "text/plain"),
            "/long-html": (200, b"<p>" + b"word " * 20_000 + b"</p><p>THE-END</p>",
                           "text/html"),
            "/missing": (404, b"<h1>Not here</h1>", "text/html"),
        }
        if self.path in routes:
            self._send(*routes[self.path])
        elif self.path == "/redirect":
            self._send(302, b"", "text/plain", {"Location": "/page"})
        elif self.path == "/redirect-to-file":
            self._send(302, b"", "text/plain", {"Location": "file:///etc/passwd"})
        elif self.path == "/drip":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            try:
                for _ in range(200):  # 20 s at most, far past the client's limit
                    self.wfile.write(b"drop\n")
                    self.wfile.flush()
                    time.sleep(0.1)
            except OSError:
                pass  # the client hung up, as it should
        else:
            self._send(404, b"no route", "text/plain")


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_fetch_a_page_as_readable_text(base_url: str) -> None:
    out = web_fetch(f"{base_url}/page")
    header, _, text = out.partition("\n\n")
    assert header.splitlines()[:2] == [f"URL: {base_url}/page", "Status: 200 OK"]
    assert text == (
        "# Test Page\n\n"
        "# Main heading\n\n"
        f"First paragraph with a relative link ({base_url}/other).\n\n"
        "## Section\n\n"
        "- alpha\n"
        "- beta"
    )
    assert "SCRIPT-TEXT" not in out and "color: red" not in out and "NOSCRIPT" not in out


def test_text_and_json_are_returned_as_they_are(base_url: str) -> None:
    assert web_fetch(f"{base_url}/plain").endswith("\n\njust text\n")
    assert web_fetch(f"{base_url}/json").endswith('\n\n{"a": 1}')


def test_binary_content_is_described_not_shown(base_url: str) -> None:
    out = web_fetch(f"{base_url}/png")
    assert "(binary content, 108 bytes read, not shown)" in out
    assert "PNG" not in out.split("Content-Type")[1].split("\n", 1)[1]


def test_size_limit_stops_the_download(base_url: str) -> None:
    out = web_fetch(f"{base_url}/big", max_bytes=1000)
    assert "[content truncated: stopped after 1,000 bytes]" in out
    assert out.endswith("\n\n" + "z" * 1000)


def test_long_pages_are_cut_but_keep_their_end(base_url: str) -> None:
    out = web_fetch(f"{base_url}/long-html")
    assert len(out) < 31_000
    assert "characters cut" in out and out.endswith("THE-END")


def test_total_time_limit_applies_to_a_dripping_server(base_url: str) -> None:
    out = web_fetch(f"{base_url}/drip", timeout=0.5)
    assert "[content truncated: stopped after 0.5 s]" in out
    assert "drop" in out


def test_redirects_are_followed_and_checked(base_url: str) -> None:
    assert web_fetch(f"{base_url}/redirect").startswith(f"URL: {base_url}/page\n")
    with pytest.raises(WebFetchError, match="Only http:// and https://"):
        web_fetch(f"{base_url}/redirect-to-file")


def test_http_errors_are_reported_with_their_status(base_url: str) -> None:
    out = web_fetch(f"{base_url}/missing")
    assert "Status: 404 Not Found" in out and "# Not here" in out


def test_unreachable_hosts_raise_a_tool_error() -> None:
    with pytest.raises(ToolError, match="failed"):
        web_fetch("http://127.0.0.1:1/", timeout=5)


@pytest.mark.parametrize("url", [
    "file:///etc/passwd",
    "ftp://example.com/file",
    "data:text/plain,hello",
    "javascript:alert(1)",
    "gopher://example.com/",
    "//example.com/no-scheme",
    "/etc/passwd",
    "http://",
    "",
])
def test_non_http_urls_are_refused(url: str) -> None:
    with pytest.raises(WebFetchError):
        web_fetch(url)
