"""The names of the built-in tools, apart from the tools themselves: the tool catalog checks a
turn's tool names against them without loading the tools (docs/architecture.md, "The first
run")."""

from __future__ import annotations

__all__ = ["BUILTIN_TOOL_NAMES"]

BUILTIN_TOOL_NAMES = ("bash", "read_file", "write_file", "web_fetch", "search_files",
                      "glob_files")
"""Names of the built-in tools, in the order of docs/behaviour.md §10.7."""
