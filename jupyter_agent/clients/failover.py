"""Model failover: when a profile's request fails, mark it and let another profile answer.

The turn's model is chosen as usual (:func:`~.factory.resolve_model`);
``settings.fallback_models`` (``%config AgentMagics.fallback_models = [...]``) lists the
profiles to fall back to, in order, and :func:`~.factory.client_for` then wraps the clients of
all of them in a :class:`FailoverClient`.

:class:`FailoverClient` is a :class:`~jupyter_agent.llm.protocol.ModelClient`, so the loop uses
it unchanged. A request that fails after the client's own retries marks its profile for
:data:`MARK_SECONDS`, and the request is sent again to the next unmarked profile: that next
round is made by the next profile, so one broken provider does not fail the turn. Only when
every profile failed does the turn fail (with the last error). Later turns start at the first
profile that is not marked. ``answered_profile`` says which profile answered, and the turn
record stores it; each switch is reported as a warning to the run being driven
(:meth:`FailoverClient.reporting_to`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from ..base.events import BaseEvent, Warning_
from ..base.jsontypes import JSONObject
from ..base.state import STATE
from ..llm.profiles import ModelProfile
from ..llm.protocol import ModelClient
from ..llm.types import ChatRequest, ChatResponse, StreamCallback, Usage

__all__ = ["FailoverClient", "MARK_SECONDS", "marked_profiles", "clear_marks", "mark_profile"]

MARK_SECONDS = 300.0
"""How long a failed profile is skipped before it is tried first again."""

_marks: dict[str, float] = STATE.slot("clients.failover_marks", dict)
_marks_lock = threading.Lock()


def mark_profile(name: str) -> None:
    """Mark ``name`` as failing (skipped for :data:`MARK_SECONDS`)."""
    with _marks_lock:
        _marks[name] = time.monotonic()


def marked_profiles() -> list[str]:
    """Profiles currently marked as failing."""
    now = time.monotonic()
    with _marks_lock:
        return [n for n, t in _marks.items() if now - t < MARK_SECONDS]


def clear_marks() -> None:
    """Forget every mark (tests, or after fixing a provider)."""
    with _marks_lock:
        _marks.clear()


def _unmark(name: str) -> None:
    with _marks_lock:
        _marks.pop(name, None)


class _Watched:
    """An ``on_delta`` that knows whether anything was streamed since the last withdrawal."""

    def __init__(self, on_delta: StreamCallback | None) -> None:
        self.on_delta = on_delta
        self.streamed = False

    def __call__(self, kind: str, data: JSONObject) -> None:
        self.streamed = kind != "reset"
        if self.on_delta is not None:
            self.on_delta(kind, data)

    def withdraw(self, reason: str) -> None:
        """Withdraw the attempt's partial output (a ``reset`` delta), if it streamed any."""
        if self.streamed and self.on_delta is not None:
            self.streamed = False
            self.on_delta("reset", {"reason": reason})


class FailoverClient:
    """A model client over several profiles, tried in order, skipping marked ones.

    Args:
        names: Profile names, the turn's model first, then the fallbacks.
        factory: Makes the client of one profile (:func:`~.factory.make_client`).
        emit: Receives a warning event when a profile fails and the next one takes over.
    """

    def __init__(self, names: list[str], *, factory: Callable[[str], ModelClient],
                 emit: Callable[[BaseEvent], None] | None = None) -> None:
        if not names:
            raise ValueError("FailoverClient needs at least one profile")
        self.names = list(dict.fromkeys(names))
        self._factory = factory
        self._clients: dict[str, ModelClient] = {}
        self.emit = emit
        # The first profile's client is made now: a missing key is reported before the run.
        first = self._first_unmarked()
        self._current = first
        self._client(first)
        self.answered_profile: str | None = None
        """The profile that answered the last successful request."""

    # ------------------------------------------------------------------ the client interface
    @property
    def profile(self) -> ModelProfile:
        """The profile of the client currently in use."""
        return self._client(self._current).profile

    def cost(self, usage: Usage) -> float:
        """The cost of ``usage`` under the profile that answered last."""
        return self._client(self._current).cost(usage)

    def complete(self, request: ChatRequest, on_delta: StreamCallback | None = None
                 ) -> ChatResponse:
        """Send ``request`` to the current profile; on failure, to the next ones in turn."""
        order = self._order()
        response: ChatResponse | None = None
        for i, name in enumerate(order):
            try:
                client = self._client(name)
            except Exception as exc:  # e.g. the fallback's key is missing: skip that profile
                response = ChatResponse(error=f"{name}: {exc}")
                mark_profile(name)
                continue
            req = request
            if name != self.names[0] or request.model != client.profile.model:
                req = request.model_copy(update={"model": client.profile.model})
            self._current = name
            watched = _Watched(on_delta)
            response = client.complete(req, watched if on_delta is not None else None)
            if not response.error or response.aborted:
                if not response.error:
                    _unmark(name)
                    self.answered_profile = name
                return response
            mark_profile(name)
            if i + 1 < len(order):
                if self.emit is not None:
                    self.emit(Warning_(message=f"Model profile {name!r} failed "
                                               f"({response.error}); switching to "
                                               f"{order[i + 1]!r}."))
                # What the failed attempt streamed (text, announced tool calls) is withdrawn:
                # the next profile answers the same round afresh.
                watched.withdraw(f"model profile {name!r} failed; {order[i + 1]!r} answers")
        assert response is not None
        return response

    @contextmanager
    def reporting_to(self, emit: Callable[[BaseEvent], None] | None) -> Iterator[None]:
        """Send the switch warnings to ``emit`` inside the block (a run, or a sub-run that
        shares this client); the previous receiver gets them again afterwards."""
        before, self.emit = self.emit, emit
        try:
            yield
        finally:
            self.emit = before

    # ------------------------------------------------------------------ helpers
    def _client(self, name: str) -> ModelClient:
        client = self._clients.get(name)
        if client is None:
            client = self._clients[name] = self._factory(name)
        return client

    def _first_unmarked(self) -> str:
        marked = set(marked_profiles())
        return next((n for n in self.names if n not in marked), self.names[0])

    def _order(self) -> list[str]:
        """From the current profile on: the unmarked profiles, then the marked ones."""
        marked = set(marked_profiles())
        start = self.names.index(self._current)
        rotated = self.names[start:] + self.names[:start]
        return [n for n in rotated if n not in marked] + [n for n in rotated if n in marked]

    def __repr__(self) -> str:
        return f"<FailoverClient {' -> '.join(self.names)} (current {self._current})>"

