"""A saved notebook carries the cards' code once, not once per card (``ui/shared.py``).

A notebook with 20 run cards and a batch card is executed by nbclient in a real kernel (as
``nbconvert --execute`` and the demo do); nbclient saves the state of every widget model. The
cards' JavaScript and CSS must be there once: 20 cards add at most 100 KB of widget code.
"""

from __future__ import annotations

import base64
import copy
import gzip
import json
import os
from pathlib import Path
from typing import Any

import nbformat
import pytest

from jupyter_agent.ui.shared import BUNDLE, LOADER, CardCode
from jupyter_agent.ui.widget import RunWidget
from tests.fakes.openai_server import ScriptedOpenAI, text
from tests.notebooks.test_core_notebook import ROOT, code, python3_kernel, run_notebook

pytestmark = [pytest.mark.notebook, pytest.mark.timeout(300)]

__all__ = ["python3_kernel"]  # a fixture, used by name

CARDS = 20
BUDGET = 100_000
"""Bytes of widget code (every model's ``_esm``, ``_css`` and ``code``) 20 cards may add."""


def widget_states(nb: Any) -> dict[str, dict[str, Any]]:
    saved = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    return {mid: entry["state"] for mid, entry in saved.items()}


def code_bytes(state: dict[str, Any]) -> int:
    return sum(len(str(state.get(k, "")).encode()) for k in ("_esm", "_css", "code"))


def test_twenty_cards_save_the_code_once(server: ScriptedOpenAI, tmp_path: Path,
                                         python3_kernel: str,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
    server.enqueue(*(text(f"Answer {i}.") for i in range(CARDS)))
    server.enqueue(*(text(f"Row {i}.") for i in range(3)))
    cells = [code("%load_ext jupyter_agent")]
    cells += [code(f"%%chat --no-history\nQuestion {i}?") for i in range(CARDS)]
    cells += [code("rows = [{'x': 1}, {'x': 2}, {'x': 3}]"),
              code("%%toolloop --over rows\nSay {x}.")]
    nb, saved = run_notebook(cells, tmp_path / "twenty.ipynb", python3_kernel)

    states = widget_states(nb)
    cards = [s for s in states.values() if s.get("_card") in ("run", "batch")]
    holders = [s for s in states.values() if "code" in s and s.get("_card") is None]
    assert sum(s["_card"] == "run" for s in cards) == CARDS
    assert sum(s["_card"] == "batch" for s in cards) == 1
    assert len(holders) == 1  # one kernel, one copy of the code
    holder_id = next(mid for mid, s in states.items() if s is holders[0])
    for card in cards:
        assert card["_esm"] == LOADER and not card.get("_css")
        assert card["_code_model"] == holder_id
    total = sum(code_bytes(s) for s in states.values())
    assert total <= BUDGET, f"{total:,} bytes of widget code for {CARDS} cards"
    # The one copy holds both cards' code and every card's style.
    packed = json.loads(gzip.decompress(base64.b64decode(holders[0]["code"])))
    assert packed["js"] == BUNDLE.read_text(encoding="utf-8")  # the built bundle, as it is
    assert ".ja-batch" in packed["css"] and ".ja-run" in packed["css"]
    # Elsewhere (GitHub, nbviewer) the cards' saved bundles are what is shown.
    for cell in nb.cells[1:1 + CARDS]:
        data = cell.outputs[-1]["data"]
        assert "text/markdown" in data and "application/vnd.jupyter-agent.run+json" in data
    # The whole file: at most BUDGET more than the same notebook without any widget code.
    bare = copy.deepcopy(nb)
    for state in widget_states(bare).values():
        for key in ("_esm", "_css", "code"):
            state.pop(key, None)
    extra = len(saved.encode()) - len(nbformat.writes(bare).encode())
    assert 0 < extra <= BUDGET, f"{extra:,} bytes beyond the cards' own views"


def test_cards_of_one_kernel_share_one_code_model() -> None:
    first, second = RunWidget({"items": []}), RunWidget({"items": []})
    assert first._code_model == second._code_model
    assert len(LOADER) < 3_000 and first._esm == LOADER
    assert not first.has_trait("_css")


def test_a_closed_code_model_is_made_again() -> None:
    from jupyter_agent.ui.shared import card_code

    code_model = card_code()
    assert isinstance(code_model, CardCode) and card_code() is code_model
    code_model.close()
    again = card_code()
    assert again is not code_model and again.comm is not None
    assert RunWidget({"items": []})._code_model == again.model_id
