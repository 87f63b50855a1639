"""The built-in tools as plain functions bound to one workspace, ready for ``@tool``.

The docstrings here are what the model reads: the first paragraph becomes the tool's
description and the ``Args:`` section the parameter descriptions.
"""

from __future__ import annotations

from collections.abc import Callable

from jupyter_agent.sandbox.bwrap import sandbox_status
from jupyter_agent.tools.builtin import files as _files
from jupyter_agent.tools.builtin import shell as _shell
from jupyter_agent.tools.builtin import web as _web
from jupyter_agent.tools.builtin.names import BUILTIN_TOOL_NAMES
from jupyter_agent.tools.builtin.workspace import Workspace

__all__ = ["BUILTIN_TIMEOUTS", "BUILTIN_TOOL_NAMES", "make_builtin_functions"]

BUILTIN_TIMEOUTS: dict[str, float] = {
    "bash": _shell.MAX_TIMEOUT + 30.0,
    "web_fetch": _web.MAX_WEB_TIMEOUT + 30.0,
}
"""Tool deadlines of the built-ins that enforce a longer limit of their own (the ``timeout``
argument), so that limit always fires first and stops what they started; the other built-ins
get the package default."""

_BASH_DOC = """Run a bash command in the workspace folder and return its output and exit code.

    stdout and stderr come back together, then the exit code; long output is cut in the
    middle. stdin is closed, so interactive programs get no input. The command is killed
    after the timeout, and any background process it started is stopped when it returns.
    {confinement}
    Args:
        command: The command line, run with `bash -c` in the workspace folder.
        timeout: Seconds before the command is killed (default 60, at most 600).
    """


def make_builtin_functions(workspace: Workspace) -> dict[str, Callable[..., str]]:
    """The six built-in tools as functions bound to ``workspace``, keyed by tool name.

    Each function has a proper ``__name__``, a Google-style docstring and type hints, and
    returns the text result; refusals raise ``ToolError`` subclasses with a clear message.
    ``bash``'s description says whether it runs in the sandbox (checked now).

    Long: the inner functions are the six tools, each closing over ``workspace``; their
    signatures and docstrings are what the model reads.

    Raises:
        ConfigError: ``JUPYTER_AGENT_SANDBOX`` has an unknown value.
    """

    def bash(command: str, timeout: float | None = None) -> str:
        return _shell.bash(workspace, command, timeout)

    # The description states what is enforced right now: plainly when bash is not confined.
    note = sandbox_status().tool_note(workspace.allow_network)
    bash.__doc__ = _BASH_DOC.replace("{confinement}", f"\n    {note}\n" if note else "")

    def read_file(path: str, offset: int = 0, limit: int | None = None) -> str:
        """Read a text file from the workspace.

        Long files are cut; the end of the result then says which lines were shown and the
        offset that continues. Binary files are refused.

        Args:
            path: File path relative to the workspace folder.
            offset: Number of lines to skip from the start of the file.
            limit: Maximum number of lines to return (default: as many as fit).
        """
        return _files.read_file(workspace, path, offset, limit)

    def write_file(path: str, content: str) -> str:
        """Write a text file in the workspace, replacing it if it exists.

        Parent folders are created as needed. The write is atomic: the file holds either its
        old content or all of the new content, never a part.

        Args:
            path: File path relative to the workspace folder.
            content: The complete new content of the file.
        """
        return _files.write_file(workspace, path, content)

    def web_fetch(url: str, max_bytes: int = _web.DEFAULT_MAX_BYTES,
                  timeout: float = _web.DEFAULT_WEB_TIMEOUT) -> str:
        """Fetch an http:// or https:// URL and return its content as readable text.

        HTML pages are converted to text (headings, paragraphs, links as "text (url)");
        other text is returned as is; binary content is described but not shown. Long pages
        are cut.

        Args:
            url: The http:// or https:// URL to fetch.
            max_bytes: Stop downloading after this many bytes (at most 10000000).
            timeout: Seconds the whole fetch may take (at most 120).
        """
        return _web.web_fetch(url, max_bytes, timeout)

    def search_files(pattern: str, path: str = ".", glob: str | None = None) -> str:
        """Search the contents of workspace files with a regular expression.

        Returns one `path:line: text` line per matching line, at most 200. Binary files and
        folders like .git and node_modules are skipped.

        Args:
            pattern: Python regular expression searched for in each line.
            path: File or folder to search, relative to the workspace folder.
            glob: Only search files whose name or relative path matches this glob, e.g. "*.py".
        """
        return _files.search_files(workspace, pattern, path, glob)

    def glob_files(pattern: str) -> str:
        """List workspace files and folders matching a glob pattern, sorted.

        `*` matches within one folder name and `**` matches any number of folders, e.g.
        "**/*.py". Paths are relative to the workspace; folders end with "/".

        Args:
            pattern: Glob relative to the workspace folder, e.g. "src/**/*.py" or "*.csv".
        """
        return _files.glob_files(workspace, pattern)

    functions: dict[str, Callable[..., str]] = {
        "bash": bash,
        "read_file": read_file,
        "write_file": write_file,
        "web_fetch": web_fetch,
        "search_files": search_files,
        "glob_files": glob_files,
    }
    for fn in functions.values():
        # A stable qualname (not "make_builtin_functions.<locals>.bash") for reprs and logs.
        fn.__qualname__ = fn.__name__
        fn.__module__ = __name__
    return functions
