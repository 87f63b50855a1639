"""Record and replay agent runs: cassettes of model responses and ask answers.

``%agent record [PATH]`` records every model call (streamed chunks included) and every answer
given to an ask or approval into a cassette; ``%agent replay [PATH]`` serves them again through
the same client code, without network or key; ``%agent live`` goes back. Per cell:
``--record`` / ``--replay``. Cassettes live in a notebook's metadata or in a JSON file beside
it. ``python -m jupyter_agent.replay.rerecord NOTEBOOK --model NAME`` re-records a notebook.
"""

from __future__ import annotations

from .cassette import (
                       Cassette,
                       Chunk,
                       Interaction,
                       NoRecordingError,
                       RecordedAnswer,
                       request_key,
                       request_summary,
)
from .client import RecordingClient, ReplayClient
from .mode import active_cassette, cassette_at, describe, go_live, start
from .storage import cassette_path_for, load_cassette, save_cassette

__all__ = [
    "Cassette", "Chunk", "Interaction", "NoRecordingError", "RecordedAnswer", "RecordingClient",
    "ReplayClient", "active_cassette", "cassette_at", "cassette_path_for", "describe",
    "go_live", "load_cassette", "request_key", "request_summary", "save_cassette", "start",
]
