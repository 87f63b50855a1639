"""``%%toolloop?`` shows a usage line a newcomer can copy: the cell magic with its two ``%``
(IPython's help formatter writes one ``%`` before the parser's name)."""

from __future__ import annotations

import pytest

from jupyter_agent.edge.magics import AgentMagics


@pytest.mark.parametrize("magic", ["chat", "toolloop", "plan"])
def test_help_usage_names_the_cell_magic(magic: str) -> None:
    doc = getattr(AgentMagics, magic).__doc__ or ""
    assert f"::\n\n  %%{magic} [-m MODEL]" in doc
    assert f"  %{magic} [" not in doc.replace(f"%%{magic}", "")
