"""Recording: a client that keeps every call, and every answer given, in a cassette.

:class:`RecordingClient` wraps a base :class:`~jupyter_agent.llm.client.OpenAIClient`: it
sends through the base client's own transport with a tee in front, so the request body and
what came back (the decoded chunks, or the JSON answer) of the attempt that answered are
copied while the production code builds the request, retries and assembles the stream. The
interaction is added once the call is over (with its error, status and duration) and the
cassette is saved after each call, so an interrupted recording keeps what it has.

:class:`CassetteAnswerLog` keeps the answers given to asks and approvals (an
:class:`~jupyter_agent.base.answers.AnswerLog`), so the replay can give them again.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal

from ..base.answers import Answer, WaitingAsk
from ..base.jsontypes import JSONObject
from ..llm.client import OpenAIClient
from ..llm.profiles import ModelProfile
from ..llm.protocol import ChunkStream, Reply, Transport
from ..llm.types import ChatRequest, ChatResponse, StreamCallback, Usage
from .cassette import Cassette, Chunk
from .storage import save_cassette

__all__ = ["RecordingClient", "CassetteAnswerLog"]


def _save(cassette: Cassette) -> None:
    if cassette.location:  # an in-memory cassette (a test) has nowhere to go
        save_cassette(cassette)


class _Capture:
    """What one ``complete`` call sent and received, in the thread that made it."""

    def __init__(self) -> None:
        self.body: JSONObject | None = None
        self.chunks: list[Chunk] | None = None
        self.response: JSONObject | None = None
        self.t0 = time.perf_counter()

    def start(self, body: JSONObject) -> None:
        # A retry starts over: only the attempt that answered is kept.
        self.body, self.chunks, self.response = body, None, None
        self.t0 = time.perf_counter()


class _Tee:
    """A transport that passes everything through and copies it into the calling thread's
    capture (parallel tools may call the same client at once)."""

    def __init__(self, inner: Transport) -> None:
        self.inner = inner
        self._local = threading.local()

    @contextmanager
    def capturing(self) -> Iterator[_Capture]:
        cap = self._local.capture = _Capture()
        try:
            yield cap
        finally:
            self._local.capture = None

    def send(self, body: JSONObject, stream: bool) -> Reply:
        cap: _Capture | None = getattr(self._local, "capture", None)
        if cap is not None:
            cap.start(body)
        reply = self.inner.send(body, stream)
        if cap is None:
            return reply
        if isinstance(reply, dict):
            cap.response = reply
            return reply
        return _TeeStream(reply, cap)


class _TeeStream:
    """A stream whose chunks are also appended, with their time, to the capture."""

    def __init__(self, inner: ChunkStream, cap: _Capture) -> None:
        self._inner = inner
        self._cap = cap

    def __iter__(self) -> Iterator[JSONObject]:
        cap = self._cap
        cap.chunks = kept = []
        for chunk in self._inner:
            kept.append(Chunk(t=round(time.perf_counter() - cap.t0, 4), data=chunk))
            yield chunk

    def close(self) -> None:
        self._inner.close()


class RecordingClient:
    """A client that makes real calls through ``base`` and records each one into ``cassette``.

    Args:
        base: The OpenAI-compatible client of the profile to record (its transport is used).
        cassette: Where the calls go; its profile list learns ``base``'s profile.
    """

    def __init__(self, base: OpenAIClient, cassette: Cassette) -> None:
        self.base = base
        """The client recorded (its cache scope keys a cached recording)."""
        self._tee = _Tee(base.transport)
        self._client = base.with_transport(self._tee)
        self.cassette = cassette
        cassette.add_profile(base.profile)

    @property
    def profile(self) -> ModelProfile:
        """The recorded profile."""
        return self._client.profile

    def cost(self, usage: Usage) -> float:
        """The cost of one call under the profile's prices."""
        return self._client.cost(usage)

    def complete(self, request: ChatRequest, on_delta: StreamCallback | None = None
                 ) -> ChatResponse:
        """Make the call like the base client, then record it (unless it was interrupted)."""
        with self._tee.capturing() as cap:
            resp = self._client.complete(request, on_delta)
        if resp.aborted or cap.body is None:
            return resp
        self.cassette.add(cap.body, chunks=cap.chunks, response=cap.response,
                          error=resp.error, status_code=resp.status_code, seconds=resp.seconds)
        _save(self.cassette)
        return resp

    def __repr__(self) -> str:
        return f"<RecordingClient {self.profile.name}>"


@dataclass(frozen=True)
class CassetteAnswerLog:
    """Keeps the answers given to a recorded run's asks in ``cassette`` (saved each time)."""

    cassette: Cassette

    def keep(self, ask: WaitingAsk, answer: Answer, via: Literal["click", "code"]) -> None:
        """Record ``answer`` to ``ask``."""
        self.cassette.add_answer(ask, answer, via)
        _save(self.cassette)
