"""The recorder's fast masking path (``secrets.mask_fields``) masks what the slow one did.

``RunRecorder.emit`` checks a big event field (a whole plan) with one scan of its JSON text
instead of one ``mask`` call per string. These tests hide a secret where that shortcut could
miss it (deep inside a plan, in a form JSON escapes, next to a string boundary, in a value
that is not JSON at all) and check every consumer of the event saw it masked, and that an
event without a secret is passed on as the same object (no copy).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent import register_secret
from jupyter_agent.agents.run import Run, RunRecorder, masked_event
from jupyter_agent.base import secrets
from jupyter_agent.base.events import PlanUpdated, ToolReturned, event_to_json
from jupyter_agent.base.secrets import MASK, mask_fields, mask_obj
from jupyter_agent.session import Store


def masked_field(value: Any) -> Any:
    """What the recorder makes of one event field holding ``value``."""
    return mask_fields({"field": value}).get("field", value)


@pytest.fixture(autouse=True)
def _fresh_rules() -> Iterator[None]:
    secrets._reset_for_tests()
    yield
    secrets._reset_for_tests()


def _plan(steps: int, title_of: dict[int, str] | None = None) -> dict[str, Any]:
    title_of = title_of or {}
    return {"task": "Checklist", "steps": [
        {"id": str(i), "title": title_of.get(i, f"Item {i}"), "status": "pending",
         "acceptanceCriteria": [f"item {i} checked"], "meta": {"n": i, "ok": True}}
        for i in range(1, steps + 1)]}


# Secrets whose JSON text differs from their raw text: quotes, backslash, control, non-ASCII.
HOSTILE = ['pa"ss\\word-0123', "line\nbreak-secret-99", "ключ-секрет-0042", "tab\tkey-7777"]


@pytest.mark.parametrize("secret", HOSTILE)
def test_a_secret_deep_in_a_plan_is_masked_in_every_consumer(secret: str,
                                                              tmp_path: Path) -> None:
    register_secret(secret)
    plan = _plan(100, {77: f"use {secret} here"})
    seen: list[Any] = []
    run = Run(agent="plan", model="m")
    with Store(tmp_path / "s.sqlite3") as store:
        store.create_run(run.run_id, None, "plan")
        rec = RunRecorder(run, store, listeners=[seen.append])
        rec.start()
        rec.emit(PlanUpdated(plan=plan))
        rec.finish("done")
        stored = json.dumps(store.get_events(run.run_id))
    assert plan["steps"][76]["title"] == f"use {secret} here"  # the caller's dict untouched
    (event,) = [e for e in seen if e.type == "plan_updated"]
    assert event.plan["steps"][76]["title"] == f"use {MASK} here"  # it was on its way
    assert event.plan["steps"][75] == plan["steps"][75]  # the rest kept as it was
    for text in (json.dumps(event_to_json(event)), json.dumps(run.view, default=str),
                 json.dumps([event_to_json(e) for e in run.events]), stored):
        assert secret not in text and json.dumps(secret)[1:-1] not in text


def test_a_match_across_two_strings_changes_nothing() -> None:
    """The JSON text of ``["a", "b-c0ffee"]`` holds ``a","b-c0ffee``: a false match, each string
    alone holds no secret, so the value passes on unchanged (not merged, not masked)."""
    register_secret('a","b-c0ffee')
    value = {"steps": ["a", "b-c0ffee"]}
    assert masked_field(value) is value
    event = PlanUpdated(plan=value)
    assert masked_event(event) is event


def test_no_secret_means_the_same_objects_and_a_secret_a_copy() -> None:
    register_secret("sk-live-abcdef123456")
    plan = _plan(50)
    event = PlanUpdated(plan=plan)
    assert masked_event(event) is event  # nothing to mask: no copy, nothing re-validated
    assert masked_field("plain text") == "plain text"
    leaked = ToolReturned(round=1, call_id="c", name="t", output="key sk-live-abcdef123456",
                          error="failed with sk-live-abcdef123456")
    out = masked_event(leaked)
    assert out is not leaked and out.output == f"key {MASK}" and out.error == f"failed with {MASK}"
    assert leaked.output.endswith("sk-live-abcdef123456")  # the original event is untouched


def test_values_that_are_not_json_fall_back_to_masking_string_by_string() -> None:
    register_secret("sk-live-abcdef123456")

    class Odd:
        pass

    odd = Odd()
    value = {"obj": odd, "text": "k=sk-live-abcdef123456", (1, 2): "tuple key"}
    out = masked_field(value)
    assert out is not value and out["text"] == f"k={MASK}" and out["obj"] is odd
    clean = {"obj": odd, "text": "nothing here"}
    assert masked_field(clean) is clean
    # The same answers as the slow path, whatever the value.
    for v in (value, clean, ["sk-live-abcdef123456", 1, None],
              {"t": ("x", "sk-live-abcdef123456")}):
        assert masked_field(v) == mask_obj(v)


def test_an_event_looks_the_rules_up_once_and_masks_each_field(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch emits a dozen events per item from many threads, and each lookup of the rules
    checks the environment for a new key: one lookup per event, not one per field. Every text
    field is still masked, and the fields without a secret are left out of the changes."""
    register_secret("sk-live-abcdef123456")
    lookups = []
    current = secrets._current
    monkeypatch.setattr(secrets, "_current", lambda: lookups.append(1) or current())
    leaked = ToolReturned(round=1, call_id="c", name="t", output="key sk-live-abcdef123456",
                          error="failed with sk-live-abcdef123456")
    out = masked_event(leaked)
    assert len(lookups) == 1
    assert out.output == f"key {MASK}" and out.error == f"failed with {MASK}" and out.name == "t"
    changes = mask_fields({"a": "sk-live-abcdef123456", "b": "clean", "n": 7,
                           "l": ["x", "sk-live-abcdef123456"], "d": {"k": "v"}})
    assert changes == {"a": MASK, "l": ["x", MASK]}
