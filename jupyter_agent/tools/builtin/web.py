"""The built-in ``web_fetch`` tool: fetch one http(s) URL and return readable text.

Only ``http`` and ``https`` are fetched (never ``file:``, ``ftp:``, ``data:``, ...), redirects
included. A redirect to another host or port whose address is loopback, link-local, private or
otherwise not public (the literal host and every address it resolves to are checked) is not
followed: the approval card showed the first URL, not a service on the user's machine or
network (docs/security.md); the model gets a one-line refusal and may ask to fetch that URL
with its own call, which needs its own approval. The body is read up to a byte limit and a total time limit, HTML is turned into text,
and the result is capped like every other tool result.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from jupyter_agent.base.errors import ToolError
from jupyter_agent.tools.builtin._html import html_to_text
from jupyter_agent.tools.builtin.cap import DEFAULT_LIMIT, cap_output

if TYPE_CHECKING:
    import httpx

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_WEB_TIMEOUT",
    "WebFetchError",
    "check_url",
    "web_fetch",
]

DEFAULT_MAX_BYTES = 2_000_000
"""Bytes of body read by default; the rest is not downloaded."""
MAX_BYTES_CEILING = 10_000_000
"""No request reads more than this, whatever the caller asks."""
DEFAULT_WEB_TIMEOUT = 30.0
"""Seconds for the whole fetch (connect, redirects and body) by default."""
MAX_WEB_TIMEOUT = 120.0
"""No fetch may take longer than this, whatever the caller asks."""
ALLOWED_SCHEMES = ("http", "https")
_TEXT_TYPES = ("text/", "application/json", "application/xml", "application/xhtml",
               "application/javascript", "application/ld+json", "application/rss+xml",
               "application/atom+xml", "application/x-yaml", "application/yaml")
_MAX_REDIRECTS = 5


class WebFetchError(ToolError):
    """A URL was refused or could not be fetched; the message says which and why."""


def check_url(url: str) -> str:
    """Return ``url`` stripped if it is an absolute http(s) URL with a host, else raise.

    Raises:
        WebFetchError: any other scheme (``file:``, ``ftp:``, ``data:``, ...) or no host.
    """
    url = url.strip()
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        raise WebFetchError(f"Invalid URL {url!r}: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme not in ALLOWED_SCHEMES:
        shown = f"{scheme}:" if scheme else "no scheme"
        raise WebFetchError(
            f"Only http:// and https:// URLs can be fetched ({shown} given): {url!r}."
        )
    if not parts.hostname:
        raise WebFetchError(f"URL {url!r} has no host.")
    return url


def web_fetch(url: str, max_bytes: int = DEFAULT_MAX_BYTES,
              timeout: float = DEFAULT_WEB_TIMEOUT) -> str:
    """Fetch an http(s) URL and return its content as readable text.

    HTML is converted to text (scripts and styles dropped, links kept as "text (url)"); other
    text types are returned as they are; binary content is described, not shown.

    Args:
        url: The http:// or https:// URL to fetch.
        max_bytes: Stop downloading after this many bytes of body (at most 10 MB).
        timeout: Seconds the whole fetch may take (at most 120).
    """
    import httpx  # first use only: keep `import jupyter_agent` cheap

    url = check_url(url)
    if max_bytes < 1 or timeout <= 0:
        raise WebFetchError("max_bytes and timeout must be positive.")
    max_bytes = min(max_bytes, MAX_BYTES_CEILING)
    timeout = min(timeout, MAX_WEB_TIMEOUT)
    deadline = time.monotonic() + timeout
    body = bytearray()
    stopped = ""
    try:
        with httpx.Client(timeout=timeout, follow_redirects=False) as client:
            response = _follow(client, url, deadline)
            try:
                for chunk in response.iter_bytes():
                    body += chunk
                    if len(body) >= max_bytes:
                        del body[max_bytes:]
                        stopped = f"stopped after {max_bytes:,} bytes"
                        break
                    # httpx's timeout is per read; a server dripping bytes needs a total limit.
                    if time.monotonic() > deadline:
                        stopped = f"stopped after {timeout:g} s"
                        break
            finally:
                response.close()
    except httpx.TimeoutException:
        more = ("pass a larger timeout, at most " if timeout < MAX_WEB_TIMEOUT
                else "the most a fetch may take is ")
        raise WebFetchError(f"Fetching {url} timed out after {timeout:g} s ({more}"
                            f"{MAX_WEB_TIMEOUT:g} s).") from None
    except httpx.HTTPError as exc:
        raise WebFetchError(f"Fetching {url} failed: {type(exc).__name__}: {exc}") from None
    return _render(response, bytes(body), stopped)


def _origin(url: str) -> tuple[str, int | None]:
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme.lower() == "https" else 80)
    return (parts.hostname or "").lower(), port


def _not_public(host: str) -> str | None:
    """The first address of ``host`` (itself, or what it resolves to) that is not a public
    one (loopback, link-local, private, reserved...), else ``None``."""
    import ipaddress
    import socket

    def bad(text: str) -> bool:
        ip = ipaddress.ip_address(text.split("%")[0])
        mapped = getattr(ip, "ipv4_mapped", None)
        if mapped is not None:
            ip = mapped
        return not ip.is_global or ip.is_multicast

    try:
        return host if bad(host) else None
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None)
    except (OSError, UnicodeError):
        return f"{host} (no address)"
    for info in infos:
        address = str(info[4][0])
        if bad(address):
            return address
    return None


def _follow(client: httpx.Client, url: str, deadline: float) -> httpx.Response:
    """Send the request, following redirects by hand so every hop's scheme is checked, and a
    hop to another origin on a non-public address is refused (:func:`_not_public`)."""
    import httpx
    first = url
    for _ in range(_MAX_REDIRECTS + 1):
        if time.monotonic() > deadline:
            raise httpx.TimeoutException("redirects took too long")
        request = client.build_request("GET", url, headers={"Accept": "text/html, */*;q=0.8"})
        response = client.send(request, stream=True)
        if not response.is_redirect:
            return response
        location = response.headers.get("location", "")
        response.close()
        url = check_url(str(response.url.join(location)))
        host = _origin(url)
        if host != _origin(first):
            inside = _not_public(host[0])
            if inside is not None:
                raise WebFetchError(
                    f"{first} redirected to {url}, which is on a non-public address "
                    f"({inside}): not followed. Fetching it needs its own web_fetch call "
                    "(and its own approval).")
    raise WebFetchError(f"Too many redirects (more than {_MAX_REDIRECTS}).")


def _render(response: httpx.Response, body: bytes, stopped: str) -> str:
    """The tool result: a short header (URL, status, type, truncation) and the text."""
    content_type = response.headers.get("content-type", "")
    mime = content_type.split(";")[0].strip().lower()
    header = [f"URL: {response.url}", f"Status: {response.status_code} {response.reason_phrase}"]
    if content_type:
        header.append(f"Content-Type: {content_type}")
    if stopped:
        header.append(f"[content truncated: {stopped}]")
    is_html = mime in ("text/html", "application/xhtml+xml") or (
        not mime and body.lstrip()[:15].lower().startswith((b"<!doctype html", b"<html"))
    )
    if not is_html and mime and not mime.startswith(_TEXT_TYPES) and not mime.endswith(
        ("+json", "+xml")
    ):
        header.append(f"(binary content, {len(body):,} bytes read, not shown)")
        return "\n".join(header)
    encoding = response.charset_encoding or "utf-8"
    try:
        text = body.decode(encoding, "replace")
    except LookupError:  # an unknown charset name from the server
        text = body.decode("utf-8", "replace")
    if is_html:
        text = html_to_text(text, str(response.url))
    # The start of a page is what matters; keep a little of the end for context.
    return "\n".join(header) + "\n\n" + cap_output(text, DEFAULT_LIMIT, head_ratio=0.8)
