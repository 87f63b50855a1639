"""Fixtures shared by the final-state tests (test_final_state.py, test_change_card.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A workspace that is the kernel's folder (``''`` first on ``sys.path``, as in IPython),
    with the sandbox on and able to check changes (a module of its own named ``ws`` wins)."""
    from jupyter_agent import sandbox
    from jupyter_agent.tools.builtin import sandbox_status

    monkeypatch.delenv("JUPYTER_AGENT_SANDBOX", raising=False)
    root = (tmp_path / "ws").resolve()
    root.mkdir()
    monkeypatch.chdir(root)
    monkeypatch.syspath_prepend("")
    assert sandbox_status().confined
    why = sandbox.OverlayRun.why_not(str(root))
    if why:
        pytest.skip(f"no overlay here: {why}")
    yield root
