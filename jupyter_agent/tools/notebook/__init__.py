"""Notebook tools: the notebook is the agent's context.

``notebook_tools(shell)`` gives an agent the live kernel: ``list_variables`` and
``inspect_variable`` (bounded summaries of DataFrames, arrays, containers, anything),
``run_python`` (code in the kernel's namespace, with a time limit; asks for approval),
``read_notebook``/``read_cells`` (the saved notebook, or the kernel's history) and
``insert_cell`` (a proposed cell the user inserts or discards). ``variable_summaries`` puts
chosen variables into a prompt. Secret-looking variables are never shown, and every text
passes through :func:`jupyter_agent.secrets.mask`.

Nothing here imports IPython, pandas, polars, numpy or matplotlib at import time. The
behaviour and its reasons are described in docs/notebook-tools.md.
"""

from .cells import Cell, NotebookCells, load_cells
from .proposals import CellProposal, propose_cell
from .run_python import PythonRun, run_code
from .summaries import summarize, summary_line
from .toolset import NOTEBOOK_TOOL_NAMES, NotebookTool, notebook_tools
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
