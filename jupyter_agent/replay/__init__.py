"""Record and replay agent runs: cassettes of model responses and ask answers.

``%agent record [PATH]`` records every model call (streamed chunks included) and every answer
given to an ask or approval into a cassette; ``%agent replay [PATH]`` serves them again through
the same client code, without network or key; ``%agent live`` goes back. Per cell:
``--record`` / ``--replay``. Cassettes live in a notebook's metadata or in a JSON file beside
it. ``python -m jupyter_agent.replay.rerecord NOTEBOOK --model NAME`` re-records a notebook.

This package is the user-facing part (the mode switch, the ``%agent`` commands, notebooks);
the cassettes and the recording and replaying clients live in :mod:`jupyter_agent.clients`.
"""

from __future__ import annotations

from ..clients.cassette import (
    Cassette,
    Chunk,
    Interaction,
    NoRecordingError,
    RecordedAnswer,
    request_key,
    request_summary,
)
from ..clients.cassettes import active_cassette, cassette_at
from ..clients.record import RecordingClient
from ..clients.replay import replay_client
from ..clients.storage import cassette_path_for, load_cassette, save_cassette
from .mode import describe, go_live, start

__all__ = [
    "Cassette", "Chunk", "Interaction", "NoRecordingError", "RecordedAnswer", "RecordingClient",
    "active_cassette", "cassette_at", "cassette_path_for", "describe", "go_live",
    "load_cassette", "replay_client", "request_key", "request_summary", "save_cassette", "start",
]
