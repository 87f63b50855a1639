"""Replay: the production client over a cassette, and the answers the cassette gives.

:func:`replay_client` is an :class:`~jupyter_agent.llm.client.OpenAIClient` whose transport
is a cassette (:class:`CassetteTransport`): requests are built, and recorded chunks assembled,
by the production code (``<think>`` splitting, tool-call quirks, usage, cost), with no
network, no key and no SDK.

:class:`CassetteAnswers` is the :class:`~jupyter_agent.base.answers.AnswerSource` of a replay: it
gives the answers that were clicked while recording. An answer a notebook cell gave
(``%agent resume``, ``--option``) is left for that cell to give again.
"""

from __future__ import annotations

import time
from collections.abc import Generator
from dataclasses import dataclass

from ..base.answers import Answer, WaitingAsk
from ..base.config import CassetteTiming
from ..base.jsontypes import JSONObject
from ..llm.client import OpenAIClient, RetryPolicy
from ..llm.profiles import ModelProfile
from ..llm.protocol import Reply, TransportError
from .cassette import Cassette, Interaction
from .embedded import profile_for

__all__ = ["CassetteTransport", "CassetteAnswers", "replay_client"]


class CassetteTransport:
    """Serves the recorded answer of each request body; never opens a connection.

    Args:
        cassette: Where the recordings come from.
        timing: ``fast`` (default) or ``recorded`` (sleep as the original call did).
    """

    def __init__(self, cassette: Cassette, timing: CassetteTiming = "fast") -> None:
        self.cassette = cassette
        self.timing: CassetteTiming = timing

    def send(self, body: JSONObject, stream: bool) -> Reply:
        """The recording for ``body``.

        Raises:
            NoRecordingError: nothing was recorded for it (the message names the first field
                that differs from the closest recording).
            TransportError: the recorded call failed; it fails the same way (not retried).
        """
        item = self.cassette.find(body)
        if item.error is not None:
            raise TransportError(item.error, item.status_code)
        if item.chunks is not None:
            return self._play(item)
        if self.timing == "recorded" and item.seconds:
            time.sleep(item.seconds)
        return item.response or {}

    def _play(self, item: Interaction) -> Generator[JSONObject, None, None]:
        t0 = time.perf_counter()
        for c, payload in zip(item.chunks or [], item.chunk_payloads(), strict=True):
            if self.timing == "recorded":
                wait = c.t - (time.perf_counter() - t0)
                if wait > 0:
                    time.sleep(wait)
            yield payload


def replay_client(model: ModelProfile | str, cassette: Cassette,
                  timing: CassetteTiming = "fast") -> OpenAIClient:
    """A client for ``model`` that replays ``cassette``, with the recorded profile of that
    name when the cassette has it (so requests are built exactly as when recording)."""
    if isinstance(model, ModelProfile):
        profile = cassette.profile(model.name) or model
    else:
        profile = cassette.profile(model) or profile_for(model)
    return OpenAIClient(profile, transport=CassetteTransport(cassette, timing),
                        retry=RetryPolicy(0))


@dataclass(frozen=True)
class CassetteAnswers:
    """Answers a replayed run's asks with the answers clicked while recording."""

    cassette: Cassette

    def answer_for(self, ask: WaitingAsk) -> Answer | None:
        """The recorded click for ``ask`` (by call id, else the next unused answer to the same
        question), or ``None``."""
        recorded = self.cassette.answer_for(ask.call_id, ask.question)
        return recorded.to_answer() if recorded is not None else None
