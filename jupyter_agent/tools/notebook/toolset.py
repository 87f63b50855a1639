"""``notebook_tools()``: the notebook tools bound to one shell (or namespace).

The docstrings of the inner functions are what the model reads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Literal, TypedDict

from ...base.secrets import is_secret_name, mask, register_secret
from ..registry import AnyTool, ToolResult
from .cells import cells_text, load_cells, outline
from .names import NOTEBOOK_TOOL_NAMES
from .proposals import CellProposal, propose_cell
from .run_python import DEFAULT_TIMEOUT, PythonRun, run_code
from .variables import Namespace

__all__ = ["NOTEBOOK_TOOL_NAMES", "NotebookTool", "notebook_tools"]


class NotebookTool(AnyTool):
    """A notebook tool: the model reads the value's ``model_text()`` (never a figure's PNG
    data), a failed ``run_python`` is marked as an error, and every text is masked."""

    proposals: list[CellProposal]
    """``insert_cell`` only: the cells it proposed, in order."""

    def invoke(self, arguments: str) -> ToolResult:
        """Run the tool on the model's raw arguments (see :meth:`Tool.invoke`)."""
        result = super().invoke(arguments)
        value = result.value
        if hasattr(value, "model_text"):
            result.output = value.model_text()
        if isinstance(value, PythonRun) and value.error:
            result.error = value.short_error()
        result.output = mask(result.output)
        result.error = mask(result.error) if result.error else result.error
        return result


class _Options(TypedDict, total=False):
    """What a notebook tool sets beyond its function (the rest is the same for all)."""

    requires_approval: bool
    display: dict[str, str]


def _register_secret_values(ns: Mapping[str, object]) -> None:
    """Values of secret-named string variables become known secrets, so code that prints
    ``API_KEY`` shows ``[redacted]``."""
    try:
        items = list(ns.items())
    except RuntimeError:  # the namespace changed while we read it (another thread)
        return
    for name, value in items:
        if isinstance(name, str) and isinstance(value, str) and is_secret_name(name):
            register_secret(value)


def notebook_tools(shell: object = None, *, variables: Iterable[str] | None = None,
                   run_python: bool = True, timeout: float = DEFAULT_TIMEOUT,
                   requires_approval: bool = True, path: str | None = None,
                   on_proposal: Callable[[CellProposal], None] | None = None) -> list[AnyTool]:
    """The notebook tools, bound to ``shell``: ``list_variables``, ``inspect_variable``,
    ``run_python``, ``read_notebook``, ``read_cells`` and ``insert_cell``.

    None is registered globally; pass the list to a run (``toolloop(..., tools=...)``).

    Args:
        shell: An IPython shell, a namespace dict, or ``None`` (the running shell, else the
            script's ``__main__``).
        variables: Only these variables may be listed and inspected. Secret-looking names
            are never shown either way. ``run_python`` runs in the whole namespace: leave it
            out (``run_python=False``) when the agent must not reach the other variables.
        run_python: Include ``run_python`` (asks for approval by default).
        timeout: Seconds one ``run_python`` call may run before it is interrupted.
        requires_approval: ``run_python`` asks before each call (the default).
        path: The notebook file to read (default: the kernel's notebook, else its history).
        on_proposal: Called with each :class:`CellProposal` ``insert_cell`` records.

    Long: the inner functions are the tools; their docstrings are what the model reads, and
    they close over the shell, the allowed variables and the caps bound here.
    """
    space = Namespace(shell, variables)
    proposals: list[CellProposal] = []

    def list_variables() -> str:
        """List the notebook's variables: name, type and a one-line summary of each.

        Shows the user's own variables (DataFrames, arrays, lists, functions, ...), not
        IPython's internals or imported modules.
        """
        _register_secret_values(space.ns)
        return space.listing()

    def inspect_variable(name: str, rows: int = 3, columns: list[str] | None = None) -> str:
        """Describe one notebook variable in detail, within about 4,000 characters.

        DataFrames and Series: shape, dtypes, nulls, statistics and the first and last rows;
        arrays: shape, dtype and statistics; containers: length and a preview; strings: head
        and tail; anything else: type and a shortened repr.

        Args:
            name: The variable's name, or an attribute path such as `model.config`.
            rows: How many first and last rows of a table to show (0-20).
            columns: Only describe these columns of a DataFrame (for very wide tables).
        """
        _register_secret_values(space.ns)
        return space.inspection(name, rows=rows, columns=columns)

    def run_python_(code: str) -> PythonRun:
        """Run Python code in the notebook's kernel, like a new cell, and return what it did.

        The code sees and changes the notebook's variables. Returns stdout, stderr, the value
        of the last line when it is an expression, a description of each matplotlib figure
        it draws, and a short traceback on error. Long output is cut; the code is interrupted
        after the time limit.

        Args:
            code: Python source. End with an expression to get its value back.
        """
        _register_secret_values(space.ns)
        return run_code(code, space.ns, shell=space.shell, timeout=timeout)

    def read_notebook() -> str:
        """Outline the notebook: every cell's kind, the start of its source and its outputs.

        Cells are numbered from 1. Reads the notebook as the user sees it, unsaved edits
        included, when the front end sends it (JupyterLab, Notebook 7); else the notebook file
        as last saved; else the cells this kernel executed. The first line says which.
        """
        return outline(load_cells(path, space.shell))

    def read_cells(start: int, end: int | None = None) -> str:
        """Read notebook cells in full: source and a line per output.

        Args:
            start: First cell, counted from 1 (as in read_notebook).
            end: Last cell, inclusive (default: only `start`).
        """
        return cells_text(load_cells(path, space.shell), start, end)

    def insert_cell(source: str, kind: Literal["code", "markdown"] = "code",
                    explanation: str = "") -> CellProposal:
        """Propose a new cell below the current one. The user decides whether to insert it.

        The cell is not run and not added until the user accepts it. Use it for code the
        user should keep in the notebook.

        Args:
            source: The cell's code (or Markdown text).
            kind: `code` or `markdown`.
            explanation: One sentence on what the cell does, shown with it.
        """
        proposal = propose_cell(source, kind, explanation, on_proposal)
        proposals.append(proposal)
        return proposal

    run_python_.__name__ = "run_python"
    fns: list[tuple[Callable[..., object], _Options]] = [
        (list_variables, {}), (inspect_variable, {})]
    if run_python:
        fns.append((run_python_, {"requires_approval": requires_approval,
                                  "display": {"code": "python"}}))
    fns += [(read_notebook, {}), (read_cells, {}),
            (insert_cell, {"display": {"source": "python"}})]
    made: list[NotebookTool] = []
    for fn, options in fns:
        fn.__qualname__ = fn.__name__
        # Not batchable: the user's objects are not thread-safe, and only the main thread
        # can be interrupted by a real signal when a time limit runs out.
        made.append(NotebookTool(fn, batchable=False, **options))
    made[-1].proposals = proposals
    tools: list[AnyTool] = list(made)
    return tools
