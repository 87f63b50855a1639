"""A widget comm that records what it would send to the front end, and counts the bytes.

Widgets made inside :func:`recording_comms` get a :class:`RecordingComm` (the ``comm``
package's documented hook, ``comm.create_comm``, is meant to be replaced). Each message is
serialised as the kernel would send it (JSON, UTF-8, ``ensure_ascii=False``, as
``jupyter_client``'s packer does), so ``bytes`` is the size of the comm data on the wire (the
Jupyter message envelope around it is left out). No kernel and no front end is needed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import comm
from comm.base_comm import BaseComm

__all__ = ["RecordingComm", "recording_comms"]


class RecordingComm(BaseComm):  # type: ignore[misc]
    """A comm that keeps every message it publishes (type and data) and their JSON size."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.messages: list[tuple[str, Any]] = []
        self.bytes = 0
        super().__init__(*args, **kwargs)

    def publish_msg(self, msg_type: str, data: Any = None, metadata: Any = None,
                    buffers: Any = None, **keys: Any) -> None:
        wire = json.dumps(data, ensure_ascii=False, allow_nan=False)
        self.bytes += len(wire.encode("utf-8")) + sum(len(b) for b in buffers or [])
        self.messages.append((msg_type, json.loads(wire)))


@contextmanager
def recording_comms() -> Iterator[list[RecordingComm]]:
    """Widgets created inside get a :class:`RecordingComm`; yields the list of them."""
    made: list[RecordingComm] = []
    original = comm.create_comm

    def create(*args: Any, **kwargs: Any) -> RecordingComm:
        c = RecordingComm(*args, **kwargs)
        made.append(c)
        return c

    comm.create_comm = create
    try:
        yield made
    finally:
        comm.create_comm = original


def run_widget_comm(comms: list[RecordingComm]) -> RecordingComm:
    """The run widget's comm among ``comms`` (each DOM widget also opens one for its layout)."""
    (wire,) = [c for c in comms if "view" in c.messages[0][1]["state"]]
    return wire


def widget_listener() -> tuple[list[Any], Any]:
    """A run listener that opens one live display (widget) on the first event and feeds it,
    as the magics do; returns the list the display goes into, and the listener."""
    import contextlib
    import io

    from jupyter_agent.agents.run import last_run
    from jupyter_agent.ui.live import LiveDisplay

    shown: list[Any] = []

    def listener(event: Any) -> None:
        with contextlib.redirect_stdout(io.StringIO()):  # no notebook: display() prints
            if not shown:
                shown.append(LiveDisplay(last_run()))
            shown[0].on_event(event)

    return shown, listener
