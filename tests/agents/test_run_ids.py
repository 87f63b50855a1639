"""Run ids (``agents/run.py``): unique, and made-later sorts-later, so the store's B-trees keyed
by run id take a batch's rows at one edge (``bench/bench_batch.py``, the CPU-bound rows)."""

from __future__ import annotations

import re

import pytest

from jupyter_agent.agents import run as run_module
from jupyter_agent.agents.run import new_run_id
from jupyter_agent.replay.compare import comparable_text

ID = re.compile(r"run_[0-9a-f]{16}")


def _clock(monkeypatch: pytest.MonkeyPatch, now: float) -> None:
    monkeypatch.setattr(run_module.time, "time", lambda: now)


def test_ids_made_later_sort_later(monkeypatch: pytest.MonkeyPatch) -> None:
    """Three hundred ids over an hour, a tick (1/256 s) apart at first: sorted, they are in the
    order they were made (random ids, as before, would not be)."""
    t0 = 1_796_000_000.0
    made = []
    for i in range(300):
        _clock(monkeypatch, t0 + (i / 256 if i < 200 else i * 12.0))
        made.append(new_run_id())
    assert all(ID.fullmatch(r) for r in made)
    assert sorted(made) == made


def test_ids_made_in_one_tick_are_unique(monkeypatch: pytest.MonkeyPatch) -> None:
    """A burst in one tick (a batch answered from the cache) relies on the 40 random bits:
    2,000 ids at one instant are all different (odds of a clash about 1 in 550,000)."""
    _clock(monkeypatch, 1_796_000_000.0)
    ids = {new_run_id() for _ in range(2000)}
    assert len(ids) == 2000
    assert len({r[:10] for r in ids}) == 1  # the same tick: only the random part differs


def test_a_replay_compares_new_and_old_ids_alike() -> None:
    """The replay comparison treats a run id as volatile, in either form."""
    text = "ran run_0123456789ab then run_0123456789abcdef."
    assert comparable_text(text) == "ran run_<id> then run_<id>."
