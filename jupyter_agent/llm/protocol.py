"""The two seams of the model layer: what a model client is, and where its requests go.

:class:`ModelClient` is all the loop and the agents know of a client: a profile, one call,
and the price of a call. The OpenAI-compatible client (:class:`~.client.OpenAIClient`)
implements it, and so do the wrappers of :mod:`jupyter_agent.clients` (record, failover),
by composition.

:class:`Transport` is where :class:`~.client.OpenAIClient` sends a request body: over HTTP
by default, or to a cassette (a replay). Request building, tool protocols, retries, stream
assembly and usage stay in the client, so a replayed answer goes through the production code.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol, Union

from ..base.jsontypes import JSONObject
from .profiles import ModelProfile
from .types import ChatRequest, ChatResponse, StreamCallback, Usage

__all__ = ["ModelClient", "Transport", "ChunkStream", "Reply", "TransportError"]


class ChunkStream(Protocol):
    """The decoded chunks of a streamed answer (a generator will do)."""

    def __iter__(self) -> Iterator[JSONObject]:
        ...

    def close(self) -> None:
        """Release the connection, read to the end or not."""
        ...


Reply = Union[JSONObject, ChunkStream]
"""What a transport returns: the decoded JSON body of a non-streamed answer, or the stream of
a streamed one."""


class ModelClient(Protocol):
    """Makes model calls for one profile (or, behind a failover, several)."""

    @property
    def profile(self) -> ModelProfile:
        """The profile requests are built for (after a failover: the one in use)."""
        ...

    def complete(self, request: ChatRequest, on_delta: StreamCallback | None = None
                 ) -> ChatResponse:
        """Make one call. Failures come back in ``response.error``, never raised."""
        ...

    def cost(self, usage: Usage) -> float:
        """The cost of one call with ``usage``."""
        ...


class Transport(Protocol):
    """Sends one request body and returns the answer as decoded JSON."""

    def send(self, body: JSONObject, stream: bool) -> Reply:
        """Send ``body``; a dict for a non-streamed answer, an iterator of chunks otherwise.

        Raises:
            TransportError: the request failed (``retryable`` ones are tried again). An
                iterator raises it too when the connection is lost mid-stream.
        """
        ...


class TransportError(Exception):
    """A request that failed on its way; a ``retryable`` one is tried again."""

    def __init__(self, message: str, status: int | None = None, *,
                 retryable: bool = False, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable
        self.retry_after = retry_after
