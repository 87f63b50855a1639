"""The view reducer is a table, one entry per event type (view/reduce.py)."""

from __future__ import annotations

from jupyter_agent.base import events
from jupyter_agent.view.reduce import REDUCERS, new_view, reduce_event


def _event_types() -> set[str]:
    out = set()
    for value in vars(events).values():
        if (isinstance(value, type) and issubclass(value, events.BaseEvent)
                and "type" in value.model_fields):
            out.add(value.model_fields["type"].default)
    return out


def test_every_event_type_has_a_reducer_and_no_reducer_is_orphaned() -> None:
    # A new event the view forgot would be dropped silently from every card.
    assert set(REDUCERS) == _event_types()


def test_an_unknown_event_type_leaves_the_view_alone() -> None:
    view = new_view()
    before = repr(view)

    class Future(events.BaseEvent):  # an event a newer version wrote
        type: str = "from_the_future"

    assert reduce_event(view, Future()) is view and repr(view) == before
