"""Every tutorial re-runs from its cassette (no key, no network) and tells the same story.

Each notebook in ``notebooks/`` is executed headless (nbclient, a kernel of this Python) in a
scratch copy of its folder, exactly as saved: its ``%agent replay`` line replays the cassette
stored in it. The outputs must match the recorded ones: the run events (types, texts, tool
calls, results, usage, statuses) and the printed text, up to times, durations and ids.
"""

from __future__ import annotations

import copy
import shutil
from pathlib import Path

import nbformat
import pytest

from jupyter_agent.replay.compare import comparable_outputs
from jupyter_agent.replay.notebooks import (
    execute_notebook,
    find_cassette_line,
    run_outputs,
    scrub_folder,
)

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
TUTORIALS = sorted(NOTEBOOKS.glob("[0-9][0-9]-*.ipynb"))

pytestmark = [pytest.mark.notebook, pytest.mark.timeout(900)]


def test_the_tutorials_are_there() -> None:
    names = [p.name for p in TUTORIALS]
    for expected in ("01-chat-basics.ipynb", "02-tools.ipynb", "03-planning-with-ask.ipynb",
                     "05-one-call-helpers.ipynb", "06-your-data-your-agent.ipynb",
                     "07-evaluate-your-agent.ipynb", "08-typed-results.ipynb"):
        assert expected in names


@pytest.mark.parametrize("path", TUTORIALS, ids=lambda p: p.stem)
def test_a_tutorial_replays_as_recorded(path: Path, tmp_path: Path) -> None:
    recorded = nbformat.read(str(path), as_version=4)
    found = find_cassette_line(recorded)
    assert found is not None and found[1].startswith("%agent replay "), \
        "a tutorial replays its cassette by default"
    assert "rerecord" in recorded.cells[0].source  # the first cell says how to re-record
    assert recorded.metadata["jupyter_agent"]["cassette"]["interactions"]
    if any(c.source.startswith("%%") for c in recorded.cells if c.cell_type == "code"):
        assert run_outputs(recorded), "the saved notebook shows its runs"

    shutil.copy(path, tmp_path / path.name)  # files a tutorial writes stay in the copy
    nb = copy.deepcopy(recorded)
    execute_notebook(nb, tmp_path)
    scrub_folder(nb, tmp_path)  # as the recording's outputs were

    setup = found[0]
    replay_line = "".join(o.get("text", "") for o in nb.cells[setup].outputs)
    assert "Replaying" in replay_line and "no API key needed" in replay_line
    for i, (old, new) in enumerate(zip(recorded.cells, nb.cells, strict=True)):
        if old.cell_type != "code" or i == setup:
            continue
        assert comparable_outputs(new.outputs) == comparable_outputs(old.outputs), \
            f"cell {i} differs from the recording:\n{old.source}"
