"""The answer cache: a request identical to an earlier one is answered from disk, with no call.

:class:`CachedClient` wraps a :class:`~jupyter_agent.llm.protocol.ModelClient` like record and
replay do (docs/architecture.md). Identical means the same scope (the server's base URL and a
hash of the API key: never the key itself), model, messages, tools, tool choice, sampling
parameters, stop words, response format (a typed answer's schema), extra body fields and the
profile's default parameters (``default_config``, merged into every body);
their canonical JSON is hashed into the entry's name.

Each entry is one JSON file ``cache/<2 hex>/<digest>.json`` beside the session store. It
holds the answer (text, reasoning, tool calls, finish reason, usage) with every known secret
masked, the digest it answers, and a MAC of both made with the scope's secret part (a hash of
the key, which is on no disk). A file edited by hand, cut short, moved under another name or
written for another key fails one of those checks and is ignored (a miss, then overwritten):
a cache can cost a call, never give a wrong key's answer (docs/behaviour.md §10.14).

Off by default: a notebook re-run expects a fresh sample unless it says otherwise, and an
answer that drove a tool with side effects would be replayed without the model deciding again.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import stat
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..base.jsontypes import JSONValue
from ..base.state import STATE
from ..llm.profiles import ModelProfile
from ..llm.types import ChatRequest, ChatResponse, StreamCallback, Usage

if TYPE_CHECKING:
    from ..llm.protocol import ModelClient
    from .turn_client import TurnClient

__all__ = ["CacheStats", "CachedClient", "ResponseCache", "cache_dir", "cached_turn_client",
           "cache_stats", "clear_cache", "request_digest", "MAX_ENTRY_BYTES"]

MAX_ENTRY_BYTES = 16 * 1024 * 1024
"""An entry file larger than this is not read (a hand-made file must not stall a run)."""
_FORMAT = 1


class CacheStats:
    """Lookups of this process (``%agent cache`` shows them with the size on disk)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.clear()

    def clear(self) -> None:
        """Start counting again (``STATE.reset``)."""
        self.hits = 0
        self.misses = 0
        self.ignored = 0
        """Entries found but refused (edited, cut short, another key's, another format)."""
        self.saved = 0.0
        """What the hits would have cost."""


_STATS: CacheStats = STATE.slot("clients.cache_stats", CacheStats)


def cache_stats() -> CacheStats:
    """This process's cache counters."""
    return _STATS


def cache_dir() -> Path:
    """Where the cache lives: ``cache/`` beside the process's session store (the data
    directory; a recording's or a replay's scratch store while one runs, so a cassette is
    recorded and replayed from an empty cache and never touches the user's)."""
    from ..session.store import default_store

    return default_store().path.parent / "cache"


def request_digest(scope: str, request: ChatRequest,
                   defaults: Mapping[str, object] | None = None) -> str:
    """The hex SHA-256 of everything that makes ``request`` what it is, within ``scope``;
    ``defaults`` is the profile's ``default_config``, merged into every body the server gets.

    ``stream`` is left out: a streamed and a whole answer are the same answer.
    """
    what = {"scope": scope, "defaults": defaults or None, "model": request.model,
            "messages": request.messages,
            "tools": request.tools or None, "tool_choice": request.tool_choice,
            "parallel": request.parallel_tool_calls, "temperature": request.temperature,
            "top_p": request.top_p, "max_tokens": request.max_tokens, "stop": request.stop,
            "format": request.response_format, "extra": request.extra}
    blob = json.dumps(what, sort_keys=True, ensure_ascii=False, separators=(",", ":"),
                      default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _mac(secret: str, digest: str, answer: str) -> str:
    return hmac.new(secret.encode("utf-8"), f"{digest}\n{answer}".encode(),
                    hashlib.sha256).hexdigest()


class ResponseCache:
    """The entries of one directory. Reads never raise; a write that fails is skipped."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _path(self, digest: str) -> Path:
        return self.root / digest[:2] / f"{digest}.json"

    def get(self, digest: str, secret: str) -> ChatResponse | None:
        """The answer saved for ``digest``, or ``None`` (none, or one that fails a check)."""
        path = self._path(digest)
        try:
            # Not through a link, never waiting on a FIFO; only a regular file is read (a
            # device such as /dev/zero has size 0 and no end).
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except FileNotFoundError:
            return None
        except OSError:
            return _refused()
        try:
            with os.fdopen(fd, "rb") as f:
                st = os.fstat(f.fileno())
                if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_ENTRY_BYTES:
                    return _refused()
                entry = json.loads(f.read(MAX_ENTRY_BYTES + 1))
        except (OSError, ValueError, RecursionError):
            return _refused()
        return _answer_of(entry, digest, secret)

    def put(self, digest: str, secret: str, resp: ChatResponse) -> None:
        """Save ``resp`` for ``digest`` (secrets masked; written whole or not at all)."""
        from ..base.secrets import mask

        answer = {"text": mask(resp.text), "reasoning": mask(resp.reasoning),
                  "tool_calls": [{"id": c.id, "name": c.name, "arguments": mask(c.arguments)}
                                 for c in resp.tool_calls],
                  "finish_reason": resp.finish_reason,
                  "usage": resp.usage.model_dump()}
        canon = json.dumps(answer, sort_keys=True, ensure_ascii=False)
        entry = {"format": _FORMAT, "digest": digest, "answer": answer,
                 "mac": _mac(secret, digest, canon)}
        path = self._path(digest)
        try:
            # Private like the store beside it (docs/security.md): answers can hold user data.
            self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
            path.parent.mkdir(mode=0o700, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".", suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(entry, f, ensure_ascii=False)
            os.replace(tmp, path)
        except OSError:
            return

    def size(self) -> tuple[int, int]:
        """``(entries, bytes)`` on disk."""
        n = total = 0
        if not self.root.is_dir():
            return 0, 0
        for p in self.root.glob("*/*.json"):
            try:
                total += p.stat().st_size
                n += 1
            except OSError:
                continue
        return n, total

    def clear(self) -> int:
        """Remove every entry; the number removed."""
        removed = 0
        if not self.root.is_dir():
            return 0
        for p in self.root.glob("*/*"):
            try:
                p.unlink()
                removed += p.suffix == ".json"
            except OSError:
                continue
        for d in self.root.glob("*"):
            try:
                d.rmdir()
            except OSError:
                continue
        return removed


def _refused() -> ChatResponse | None:
    """Count an entry that failed a check; the lookup is then a miss (``None``)."""
    with _STATS.lock:
        _STATS.ignored += 1
    return None


def _answer_of(entry: JSONValue, digest: str, secret: str) -> ChatResponse | None:
    """The answer of a read entry, after every check (shape, digest, MAC)."""
    if not isinstance(entry, dict) or entry.get("format") != _FORMAT:
        return _refused()
    answer = entry.get("answer")
    if entry.get("digest") != digest or not isinstance(answer, dict):
        return _refused()
    canon = json.dumps(answer, sort_keys=True, ensure_ascii=False)
    mac = entry.get("mac")
    if not isinstance(mac, str) or not hmac.compare_digest(mac, _mac(secret, digest, canon)):
        return _refused()
    try:
        return ChatResponse.model_validate(
            {"text": answer["text"], "reasoning": answer["reasoning"],
             "tool_calls": answer["tool_calls"], "finish_reason": answer["finish_reason"],
             "usage": answer["usage"], "cached": True})
    except (KeyError, TypeError, ValueError):
        return _refused()


class CachedClient:
    """A :class:`~jupyter_agent.llm.protocol.ModelClient` answering repeated requests from a
    :class:`ResponseCache`; other requests go to ``inner`` and successful answers are saved.

    Args:
        inner: The client that makes the calls.
        scope: What else an answer depends on (the server and the key's hash): never a secret.
        secret: The MAC key of the entries (a hash of the API key; never written anywhere).
        cache: Where entries live (default: :func:`cache_dir`).
    """

    def __init__(self, inner: ModelClient, scope: str, secret: str,
                 cache: ResponseCache | None = None) -> None:
        self.inner = inner
        self.scope = scope
        self._secret = secret
        self.cache = cache or ResponseCache(cache_dir())

    @property
    def profile(self) -> ModelProfile:
        """The inner client's profile."""
        return self.inner.profile

    def cost(self, usage: Usage) -> float:
        """What a call with ``usage`` costs the inner client (a cached answer's saving)."""
        return self.inner.cost(usage)

    def complete(self, request: ChatRequest, on_delta: StreamCallback | None = None
                 ) -> ChatResponse:
        """The saved answer to ``request`` (``cached`` set, nothing sent), else the inner
        client's, saved when it is a whole answer."""
        digest = request_digest(self.scope, request, self.inner.profile.default_config)
        hit = self.cache.get(digest, self._secret)
        if hit is not None:
            with _STATS.lock:
                _STATS.hits += 1
                _STATS.saved += self.inner.cost(hit.usage)
            if on_delta is not None:
                if hit.reasoning:
                    on_delta("reasoning", {"text": hit.reasoning})
                if hit.text:
                    on_delta("text", {"text": hit.text})
            return hit
        with _STATS.lock:
            _STATS.misses += 1
        resp = self.inner.complete(request, on_delta)
        if (resp.error is None and not resp.aborted and (resp.text or resp.tool_calls)
                and resp.finish_reason != "length"):
            self.cache.put(digest, self._secret, resp)
        return resp

    def __repr__(self) -> str:
        return f"<CachedClient {self.profile.name}>"


@dataclass(frozen=True)
class _Scope:
    scope: str
    secret: str


def _scope_of(client: ModelClient) -> _Scope | None:
    """The scope of a client the cache knows how to key; ``None`` for others (a failover
    answers from several servers: its answers are not cached)."""
    from ..llm.client import OpenAIClient
    from .record import RecordingClient

    if isinstance(client, RecordingClient):
        client = client.base
    if not isinstance(client, OpenAIClient):
        return None
    return _Scope(client.cache_scope, client.cache_secret)


def cached_turn_client(tc: TurnClient, enabled: bool | None) -> TurnClient:
    """``tc`` with its client behind the cache when the cache is on (``enabled``, else the
    ``cache`` setting) and the client can be keyed; ``tc`` itself otherwise."""
    if enabled is None:
        from ..base.config import settings

        enabled = settings.cache
    if not enabled or isinstance(tc.client, CachedClient):
        return tc
    scope = _scope_of(tc.client)
    if scope is None:
        return tc
    return replace(tc, client=CachedClient(tc.client, scope.scope, scope.secret))


def clear_cache() -> int:
    """Empty the cache directory; the number of entries removed."""
    return ResponseCache(cache_dir()).clear()
