"""The names of the notebook tools, apart from the tools themselves: the tool catalog checks a
turn's tool names against them without loading the tools (docs/architecture.md, "The first
run")."""

from __future__ import annotations

__all__ = ["NOTEBOOK_TOOL_NAMES"]

NOTEBOOK_TOOL_NAMES = ("list_variables", "inspect_variable", "run_python", "read_notebook",
                       "read_cells", "insert_cell")
"""What ``notebook_tools(shell)`` offers, in this order."""
