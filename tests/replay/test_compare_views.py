"""Saved runs compare by view: a format-1 output (view + events) and a format-2 output (view
only) of the same run tell the same story; a different text, tool output or status does not."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from jupyter_agent.base.events import RUN_FORMAT_VERSION, RUN_MIME_TYPE, event_to_json, merge_deltas
from jupyter_agent.replay.compare import comparable_outputs, payload_view
from jupyter_agent.view.bundle import build_bundle
from jupyter_agent.view.reduce import reduce_events
from tests.fakes.run_stream import run_stream


def _output(data: dict[str, Any]) -> dict[str, Any]:
    # As saved: through JSON, with sorted keys (nbformat writes them so).
    return {"output_type": "display_data",
            "data": json.loads(json.dumps(data, sort_keys=True)), "metadata": {}}


def _v1(events: list[Any], view: dict[str, Any]) -> dict[str, Any]:
    return {RUN_MIME_TYPE: {"version": 1, "run_id": view["run_id"], "view": view,
                            "events": merge_deltas([event_to_json(e) for e in events])}}


def test_a_format_1_and_a_format_2_output_of_one_run_compare_equal() -> None:
    events = run_stream(rounds=6)
    view = reduce_events(events)
    new = build_bundle(view)
    assert RUN_FORMAT_VERSION == 2 and set(new[RUN_MIME_TYPE]) == {"version", "run_id", "view"}
    # Another execution: other ids and times, the same story.
    other = json.loads(re.sub(r'"call_(\d)', r'"call_x\1', json.dumps(view)).replace("run-p", "run-q"))
    assert other != view
    other["footer"]["seconds"] = 99.0
    other["started_at"] = 1.0
    assert comparable_outputs([_output(new)]) == comparable_outputs([_output(build_bundle(other))])
    # A recording saved in format 1, whose saved view an older reducer drew: its events count.
    stale = copy.deepcopy(view)
    stale["items"][1]["output"] = "drawn by an older version"
    assert comparable_outputs([_output(_v1(events, stale))]) == \
        comparable_outputs([_output(new)])


def test_a_different_story_compares_unequal() -> None:
    view = reduce_events(run_stream(rounds=4))
    base = comparable_outputs([_output(build_bundle(view))])
    for change in (lambda v: v["items"][-1].update(text="Another answer."),
                   lambda v: next(i for i in v["items"] if i["kind"] == "tool").update(
                       output="other output"),
                   lambda v: v.update(status="error"),
                   lambda v: v["footer"].update(input_tokens=1)):
        changed = copy.deepcopy(view)
        change(changed)
        assert comparable_outputs([_output(build_bundle(changed))]) != base


def test_unreadable_format_1_events_fall_back_to_the_saved_view() -> None:
    view = reduce_events(run_stream(rounds=2))
    payload = {"version": 1, "view": view, "events": [{"type": "no_such_event"}, "junk"]}
    assert payload_view(payload) == view
    assert payload_view("not a payload") == {} and payload_view({"version": 2}) == {}
