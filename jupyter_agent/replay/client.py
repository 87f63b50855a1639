"""Model clients that record to, or replay from, a cassette through the regular client path.

Both are :class:`~jupyter_agent.llm.client.ModelClient` subclasses, so request building,
stream assembly (``<think>`` splitting, tool-call quirks), usage and cost are the production
code. :class:`RecordingClient` tees the decoded chunks while the real client streams them;
:class:`ReplayClient` feeds recorded chunks into the same ``_assemble`` step: no network, no
key. They also take part in asks: a recording client keeps the answers given (the
``record_answer`` hook of ``agents.resume``), a replaying one answers a suspended run from the
cassette (the ``on_suspended`` hook of ``agents._base.drive``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any, Literal

from ..llm.client import DEFAULT_DEADLINE, ModelClient, RetryPolicy
from ..llm.profiles import ModelProfile, resolve_profile
from ..llm.types import ChatRequest, ChatResponse, StreamCallback
from .cassette import Cassette, Chunk, Interaction
from .storage import save_cassette

__all__ = ["RecordingClient", "ReplayClient", "Timing"]

Timing = Literal["fast", "recorded"]
"""``fast``: chunks as fast as they can be assembled; ``recorded``: with the recorded delays."""


class _Capture:
    """What one ``complete`` call received, in the thread that made it."""

    def __init__(self) -> None:
        self.body: dict[str, Any] | None = None
        self.chunks: list[Chunk] | None = None
        self.response: dict[str, Any] | None = None
        self.t0 = time.perf_counter()

    def start(self, body: dict[str, Any]) -> None:
        # A retry starts over: only the attempt that answered is kept.
        self.body, self.chunks, self.response = body, None, None
        self.t0 = time.perf_counter()


class RecordingClient(ModelClient):
    """A real client that also records every call (and every ask answer) into ``cassette``.

    The cassette is saved after each call, so an interrupted recording keeps what it has.
    """

    def __init__(self, profile: ModelProfile | str | None = None, *, cassette: Cassette,
                 **kwargs: Any) -> None:
        super().__init__(profile, **kwargs)
        self.cassette = cassette
        self.cassette.add_profile(self.profile)
        self._local = threading.local()  # parallel tools may call helpers concurrently

    def complete(self, request: ChatRequest, on_delta: StreamCallback | None = None) -> ChatResponse:
        """Make the call like :class:`ModelClient`, then record it (unless interrupted)."""
        cap = self._local.capture = _Capture()
        try:
            resp = super().complete(request, on_delta)
        finally:
            self._local.capture = None
        if resp.aborted or cap.body is None:
            return resp
        self.cassette.add(cap.body, chunks=cap.chunks, response=cap.response,
                          error=resp.error, status_code=resp.status_code, seconds=resp.seconds)
        self.save()
        return resp

    def save(self) -> None:
        """Write the cassette where it belongs."""
        if self.cassette.location:
            save_cassette(self.cassette)

    def _attempt(self, request: ChatRequest, body: dict[str, Any],
                 on_delta: StreamCallback | None) -> ChatResponse:
        cap = getattr(self._local, "capture", None)
        if cap is not None:
            cap.start(body)
        return super()._attempt(request, body, on_delta)

    def _stream_chunks(self, http: Any) -> Iterator[dict[str, Any]]:
        cap = getattr(self._local, "capture", None)
        if cap is not None:
            cap.chunks = []
        for chunk in super()._stream_chunks(http):
            if cap is not None and cap.chunks is not None:
                cap.chunks.append(Chunk(t=round(time.perf_counter() - cap.t0, 4), data=chunk))
            yield chunk

    def _from_json(self, request: ChatRequest, data: dict[str, Any],
                   on_delta: StreamCallback | None) -> ChatResponse:
        cap = getattr(self._local, "capture", None)
        if cap is not None:
            cap.response = data
        return super()._from_json(request, data, on_delta)

    # ------------------------------------------------------------ asks
    def record_answer(self, pending: dict[str, Any], answer: Any, via: str = "click") -> None:
        """Keep the answer to a suspended run's ask (called by ``agents.resume.resume``)."""
        self.cassette.add_answer(pending, answer, via)
        self.save()

    def on_suspended(self, prepared: Any) -> Any:
        """A run recorded by this client waits for an answer: it continues with this client."""
        from ..agents.resume import RESUME_CLIENTS

        RESUME_CLIENTS[prepared.run.run_id] = self
        return prepared.run


class _NoSDK:
    """Stands in for the ``openai`` module in a replay (only its connection error is named)."""

    class APIConnectionError(Exception):
        """Never raised: a replay has no connection."""


class ReplayClient(ModelClient):
    """Serves recorded responses for matching requests; never opens a connection.

    Args:
        profile: The profile (the cassette's recorded one when it has it, see :meth:`for_model`).
        cassette: Where the recordings come from.
        timing: ``fast`` (default) or ``recorded`` (sleep as the original stream did).
    """

    def __init__(self, profile: ModelProfile | str | None = None, *, cassette: Cassette,
                 timing: Timing = "fast") -> None:
        # Not ModelClient.__init__: it needs a key and builds the SDK client (importing
        # ``openai`` costs seconds), and a replay sends nothing.
        self.profile = profile if isinstance(profile, ModelProfile) else resolve_profile(profile)
        self.base_url = None
        self.retry = RetryPolicy(0)
        self.timeout = 0.0
        self.deadline = DEFAULT_DEADLINE
        self._lock = threading.Lock()
        self._openai = _NoSDK
        self._transport_errors: tuple[type[BaseException], ...] = ()
        self.cassette = cassette
        self.timing: Timing = timing

    @classmethod
    def for_model(cls, model: ModelProfile | str | None, cassette: Cassette,
                  timing: Timing = "fast") -> ReplayClient:
        """A replay client for ``model``, using the cassette's recorded profile of that name."""
        if isinstance(model, ModelProfile):
            profile = cassette.profile(model.name) or model
        else:
            name = model or cassette.model
            profile = (cassette.profile(name) if name else None) or resolve_profile(name)
        return cls(profile, cassette=cassette, timing=timing)

    def _post(self, body: dict[str, Any]) -> Any:
        raise RuntimeError("a replay never makes HTTP requests")  # pragma: no cover

    def _attempt(self, request: ChatRequest, body: dict[str, Any],
                 on_delta: StreamCallback | None) -> ChatResponse:
        item = self.cassette.find(body)  # NoRecordingError names the differing field
        if item.error is not None:
            return ChatResponse(error=item.error, status_code=item.status_code)
        if item.chunks is not None:
            return self._assemble(request, self._play(item), on_delta)
        if self.timing == "recorded" and item.seconds:
            time.sleep(item.seconds)
        return self._from_json(request, item.response or {}, on_delta)

    def _play(self, item: Interaction) -> Iterator[dict[str, Any]]:
        t0 = time.perf_counter()
        for c, payload in zip(item.chunks or [], item.chunk_payloads(), strict=True):
            if self.timing == "recorded":
                wait = c.t - (time.perf_counter() - t0)
                if wait > 0:
                    time.sleep(wait)
            yield payload

    # ------------------------------------------------------------ asks
    def on_suspended(self, prepared: Any) -> Any:
        """Answer a suspended run from the cassette (answers given by click while recording;
        answers given by a notebook cell are given again by that cell) and continue it."""
        from ..agents.resume import RESUME_CLIENTS, resume

        run = prepared.run
        pending = run.pending
        if run.status != "ask" or pending is None or prepared.store is None:
            return run
        ask = pending.get("ask") or {}
        recorded = self.cassette.answer_for(str(pending.get("call_id") or ""),
                                            str(ask.get("question") or ""))
        if recorded is None:
            RESUME_CLIENTS[run.run_id] = self  # `%agent resume` (a notebook cell) continues it
            return run
        # A further ask of the resumed run comes back here (through ``drive``) in turn.
        return resume(run.run_id, recorded.to_answer(), run=run, store=prepared.store,
                      listeners=list(prepared.recorder.listeners),
                      expected_call_id=pending.get("call_id"), client=self)
