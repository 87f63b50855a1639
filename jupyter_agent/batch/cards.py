"""A stored run's full card, on demand: ``result.card(run_id)`` or ``%agent show RUN_ID``.

The card is rebuilt from the run's stored events (the same view and MIME bundle a live run
ends with), so it can be shown in any kernel, long after the batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..base.errors import ConfigError

if TYPE_CHECKING:
    from ..base.events import BaseEvent
    from ..base.jsontypes import JSONObject
    from ..session.store import StoreChoice

__all__ = ["RunCard", "run_card"]


class RunCard:
    """A stored run, displayable (``_repr_mimebundle_``) like the run's own output."""

    def __init__(self, run_id: str, view: JSONObject, events: Sequence[BaseEvent]) -> None:
        self.run_id = run_id
        self.view = view
        self.events = events

    @property
    def status(self) -> str:
        """The run's status as its events tell it."""
        return str(self.view.get("status") or "")

    @property
    def answer(self) -> str:
        """The run's answer (empty while it waits or when it failed)."""
        return str(self.view.get("answer") or "")

    def bundle(self) -> JSONObject:
        """The static MIME bundle (run JSON, markdown, plain text)."""
        from ..view.bundle import build_bundle

        return build_bundle(self.view)  # (its second parameter is a widget's model id)

    def _repr_mimebundle_(self, include: object = None, exclude: object = None) -> JSONObject:
        return self.bundle()

    def __repr__(self) -> str:
        return f"<RunCard {self.run_id} status={self.status}>"


def run_card(run_id: str, store: StoreChoice = "default") -> RunCard:
    """The card of the stored run ``run_id``.

    Raises:
        ConfigError: no run with that id in the store.
    """
    from ..base.events import EVENT_ADAPTER
    from ..view.reduce import reduce_events

    if store == "default":
        from ..session import default_store

        store = default_store()
    if store is None or store.get_run(run_id) is None:
        raise ConfigError(f"No run {run_id!r} in the session store.")
    events = []
    for data in store.get_events(run_id):
        try:
            events.append(EVENT_ADAPTER.validate_python(data))
        except Exception:  # an event of a newer version: skip it, keep the rest
            continue
    return RunCard(run_id, reduce_events(events), events)
