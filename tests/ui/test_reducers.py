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


def test_an_event_reusing_a_known_type_with_other_fields_leaves_the_view_alone() -> None:
    # A newer version's event named like one of ours but shaped otherwise: the reducer of
    # "text_delta" reads a TextDelta's fields, and this is none (it used to raise KeyError).
    view = new_view()
    before = repr(view)

    class Stranger(events.BaseEvent):
        type: str = "text_delta"
        words: list[str] = ["a", "b"]

    assert reduce_event(view, Stranger()) is view and repr(view) == before


def test_a_text_delta_lands_in_its_rounds_text_item() -> None:
    view = new_view()
    for piece in ("Hel", "lo"):
        reduce_event(view, events.TextDelta(round=1, text=piece))
    reduce_event(view, events.ReasoningDelta(round=1, text="hm"))
    assert view["items"] == [{"kind": "text", "round": 1, "text": "Hello", "withdrawn": False},
                             {"kind": "reasoning", "round": 1, "text": "hm"}]
