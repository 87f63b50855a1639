"""Notebook tools: the notebook is the agent's context.

``notebook_tools(shell)`` gives an agent the live kernel: ``list_variables`` and
``inspect_variable`` (bounded summaries of DataFrames, arrays, containers, anything),
``run_python`` (code in the kernel's namespace, with a time limit; asks for approval),
``read_notebook``/``read_cells`` (the saved notebook, or the kernel's history) and
``insert_cell`` (a proposed cell the user inserts or discards). ``variable_summaries`` puts
chosen variables into a prompt. Secret-looking variables are never shown, and every text
passes through :func:`jupyter_agent.base.secrets.mask`.

Nothing here imports IPython, pandas, polars, numpy or matplotlib at import time. The
behaviour and its reasons are described in docs/notebook-tools.md.

Importing this package loads none of its modules (PEP 562): a run without notebook tools
never loads them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...base.lazy import lazy_exports

if TYPE_CHECKING:
    from .cells import Cell, NotebookCells, load_cells
    from .names import NOTEBOOK_TOOL_NAMES
    from .proposals import CellProposal, propose_cell
    from .run_python import PythonRun, run_code
    from .summaries import summarize, summary_line
    from .toolset import NotebookTool, notebook_tools
    from .variables import Namespace, VariableError, variable_summaries

__all__ = [
    "NOTEBOOK_TOOL_NAMES",
    "Cell",
    "CellProposal",
    "Namespace",
    "NotebookCells",
    "NotebookTool",
    "PythonRun",
    "VariableError",
    "load_cells",
    "notebook_tools",
    "propose_cell",
    "run_code",
    "summarize",
    "summary_line",
    "variable_summaries",
]

_LAZY = {
    "Cell": "cells",
    "NotebookCells": "cells",
    "load_cells": "cells",
    "CellProposal": "proposals",
    "propose_cell": "proposals",
    "PythonRun": "run_python",
    "run_code": "run_python",
    "summarize": "summaries",
    "summary_line": "summaries",
    "NOTEBOOK_TOOL_NAMES": "names",
    "NotebookTool": "toolset",
    "notebook_tools": "toolset",
    "Namespace": "variables",
    "VariableError": "variables",
    "variable_summaries": "variables",
}

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
