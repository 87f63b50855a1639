"""Frozen JSON values (``_frozen_json.py``): the same text as ``json.dumps``, no way to change a
value behind its cached text, and a plan round whose encoding work does not grow with the plan.
"""

from __future__ import annotations

import copy
import json
import pickle
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent import register_secret
from jupyter_agent.agents.plan import normalize_catalog
from jupyter_agent.agents.plan._hooks import PlanHooks
from jupyter_agent.agents.plan.run_state import PlanRunState
from jupyter_agent.agents.run import Run, RunRecorder
from jupyter_agent.base import secrets
from jupyter_agent.base.frozen_json import FrozenDict, FrozenList, dumps, freeze
from jupyter_agent.base.secrets import MASK
from jupyter_agent.llm.client import OpenAIClient
from jupyter_agent.llm.types import ToolCall
from jupyter_agent.session import Store

STYLES: list[dict[str, Any]] = [{}, {"ensure_ascii": False, "separators": (",", ":")}]
SCALARS: list[Any] = ["plain", "é ключ \u2028 \"q\" \\ \n", 0, -3, 1.5, 1e300, True, None, ""]


def _random_value(rng: random.Random, depth: int) -> Any:
    if depth == 0 or rng.random() < 0.3:
        return rng.choice(SCALARS)
    if rng.random() < 0.5:
        return [_random_value(rng, depth - 1) for _ in range(rng.randint(0, 4))]
    return {f"k{i}é": _random_value(rng, depth - 1) for i in range(rng.randint(0, 4))}


def _freeze_some(rng: random.Random, value: Any) -> Any:
    """``value`` with a random choice of its containers frozen (the rest stays plain)."""
    if isinstance(value, dict):
        inner = {k: _freeze_some(rng, v) for k, v in value.items()}
        return FrozenDict(inner) if rng.random() < 0.5 else inner
    if isinstance(value, list):
        items = [_freeze_some(rng, v) for v in value]
        return FrozenList(items) if rng.random() < 0.5 else items
    return value


@pytest.mark.parametrize("style", STYLES)
def test_the_text_is_what_json_dumps_writes(style: dict[str, Any]) -> None:
    rng = random.Random(7)
    for _ in range(300):
        value = {"type": "plan_updated", "plan": _freeze_some(rng, _random_value(rng, 4))}
        first = dumps(value, **style)
        assert first == json.dumps(value, **style)
        assert dumps(value, **style) == first  # and again, from the cached parts


def test_a_plain_cycle_holding_a_frozen_value_fails_as_json_dumps_does() -> None:
    value: dict[str, Any] = {"plan": freeze({"steps": [{"id": "1"}]})}
    value["again"] = {"loop": value}
    plain: dict[str, Any] = {}
    through_frozen = FrozenDict(x=FrozenDict(a=1), y=plain)  # a cycle through a frozen part
    plain["z"] = through_frozen
    for cyclic in (value, through_frozen):
        with pytest.raises(ValueError, match="Circular reference"):
            json.dumps(cyclic)
        with pytest.raises(ValueError, match="Circular reference"):
            dumps(cyclic)


def test_each_default_function_has_its_own_text() -> None:
    value = FrozenDict(a=FrozenDict(s={1, 2}), b=1)
    assert dumps(value, default=list) == '{"a": {"s": [1, 2]}, "b": 1}'
    assert dumps(value, default=lambda s: "SET") == json.dumps(value, default=lambda s: "SET")


def test_a_frozen_value_refuses_every_change_and_copies_are_plain() -> None:
    step = freeze({"id": "1", "criteria": ["a"], "meta": {"n": 1}})
    steps = FrozenList([step])
    for change in (lambda: step.__init__(id="sk-live-0123"), lambda: steps.__init__([1]),
                   lambda: step.__setitem__("id", "2"), lambda: step.pop("id"),
                   lambda: step.update(x=1), lambda: step.setdefault("x", 1),
                   lambda: step.clear(), lambda: step.__delitem__("id"),
                   lambda: step["criteria"].append("b"), lambda: step["meta"].update(n=2),
                   lambda: steps.append(step), lambda: steps.__setitem__(0, {}),
                   lambda: steps.sort(), lambda: steps.__iadd__([1])):
        with pytest.raises(TypeError, match="read-only"):
            change()
    assert step == {"id": "1", "criteria": ["a"], "meta": {"n": 1}}
    for made in (copy.deepcopy(steps), pickle.loads(pickle.dumps(steps))):
        assert made == steps and type(made) is list and type(made[0]) is dict
        made[0]["criteria"].append("b")  # a copy is the caller's to change
        assert type(made[0]["criteria"]) is list
    assert type(copy.copy(step)) is dict


# ------------------------------------------------------------------- a plan, round by round
@pytest.fixture(autouse=True)
def _fresh_rules() -> Iterator[None]:
    secrets._reset_for_tests()
    yield
    secrets._reset_for_tests()


class Encoded:
    """Counts the characters ``json.dumps`` writes (every call goes through ``encode``)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.chars = 0
        original = json.JSONEncoder.encode

        def encode(encoder: json.JSONEncoder, o: Any) -> str:
            text = original(encoder, o)
            self.chars += len(text)
            return text

        monkeypatch.setattr(json.JSONEncoder, "encode", encode)


def _rounds(steps: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
            summary_of: dict[int, str] | None = None) -> tuple[list[int], Store, Run]:
    """A plan of ``steps`` steps set, then its first 10 steps marked done one round at a time,
    through the real hooks, recorder and store; the characters encoded in each of those
    rounds."""
    summary_of = summary_of or {}
    run = Run(agent="plan", model="m")
    store = Store(tmp_path / f"s{steps}.sqlite3")
    store.create_run(run.run_id, None, "plan")
    rec = RunRecorder(run, store)
    rec.start()
    client = OpenAIClient("gpt-4.1-mini", api_key="sk-unused", base_url="http://127.0.0.1:9/v1")
    hooks = PlanHooks(client, normalize_catalog([]), {}, PlanRunState.start([]), rec.emit, 0)
    plan = {"task": "Checklist", "description": "Go through every item.", "steps": [
        {"id": str(i), "title": f"Item {i}", "description": f"Check item {i}.",
         "acceptanceCriteria": [f"item {i} checked"], "status": "pending"}
        for i in range(1, steps + 1)]}
    done = hooks.run_tool(ToolCall(id="c0", name="update_plan", arguments=json.dumps(
        {"updates": [{"action": "set_plan", "plan": plan}]})), [])
    assert done.error is None, done.error
    rec.flush()
    counter = Encoded(monkeypatch)
    per_round = []
    for i in range(1, 11):
        before = counter.chars
        args = {"updates": [{"action": "update_step", "stepId": str(i), "status": "done",
                             "outputSummary": summary_of.get(i, f"item {i} checked")}]}
        done = hooks.run_tool(ToolCall(id=f"c{i}", name="update_plan",
                                       arguments=json.dumps(args)), [])
        assert done.error is None, done.error
        rec.flush()
        per_round.append(counter.chars - before)
    monkeypatch.undo()
    rec.finish("done")
    assert len([e for e in run.events if e.type == "plan_updated"]) == 11
    return per_round, store, run


def test_a_plan_round_encodes_the_changed_step_not_the_plan(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    small, s1, _ = _rounds(100, tmp_path, monkeypatch)
    big, s2, _ = _rounds(1000, tmp_path, monkeypatch)
    s1.close()
    s2.close()
    # The whole 1,000-step plan is about 150 KB of JSON; a round encodes about one step of it
    # for the secret scan and one for the store, whatever the plan's size.
    assert max(small) < 4000 and max(big) < 4000, (small, big)


def test_a_secret_in_a_changed_step_is_masked_everywhere(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "pa\"ss-ключ-0042"
    register_secret(secret)
    _, store, run = _rounds(100, tmp_path, monkeypatch, {5: f"found {secret} in the log"})
    stored = json.dumps(store.get_events(run.run_id), ensure_ascii=False)
    store.close()
    events = [e for e in run.events if e.type == "plan_updated"]
    masked = events[5].plan["steps"][4]
    assert masked["outputSummary"] == f"found {MASK} in the log"
    for text in (stored, json.dumps([e.plan for e in events], ensure_ascii=False),
                 json.dumps(run.view, default=str, ensure_ascii=False)):
        assert secret not in text and json.dumps(secret)[1:-1] not in text
    assert events[6].plan["steps"][4] == masked  # and in every later update
    # Before the secret, unchanged steps are the shared, frozen objects.
    assert events[4].plan["steps"][50] is events[3].plan["steps"][50]
    assert isinstance(events[4].plan["steps"][50], FrozenDict)
