"""Files the user attaches to a run, readable by the model and nothing else.

``attach_files(["report.pdf.txt", "data/q3.csv"])`` returns a ``read_attachment`` tool. The model
names a file by its id (``file_1``, ``file_2``...) or by its file name; any other path is refused,
so attaching a file never opens its folder. Reading reuses the built-in ``read_file`` (line
paging, the output cap, binary files refused).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel

from ..base.errors import ConfigError, ToolError
from ..base.previews import MAX_ATTACHMENTS
from ..tools.builtin import Workspace
from ..tools.builtin import files as _files
from ..tools.registry import AnyTool, Tool

__all__ = ["Attachment", "attach_files"]


class Attachment(BaseModel):
    """One attached file."""

    id: str
    """What the model may call it: ``file_1``, ``file_2``..."""
    name: str
    """The file name (also accepted when no other attachment has the same name)."""
    path: str
    """The real absolute path, fixed when the file was attached."""


def _attachments(paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]
                 ) -> list[Attachment]:
    items = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    if not items:
        raise ConfigError("attach_files needs at least one file.")
    if len(items) > MAX_ATTACHMENTS:
        raise ConfigError(f"attach_files takes at most {MAX_ATTACHMENTS} files, not "
                          f"{len(items)}: attach fewer, or put them in a workspace for an agent.")
    out: list[Attachment] = []
    for i, item in enumerate(items, start=1):
        raw = os.path.expanduser(os.fspath(item))
        if not os.path.isfile(raw):
            raise ConfigError(f"Cannot attach {raw!r}: no such file.")
        # realpath now: a later chdir or a swapped symlink must not change what is readable.
        real = os.path.realpath(raw)
        out.append(Attachment(id=f"file_{i}", name=Path(real).name, path=real))
    return out


def _listing(files: list[Attachment]) -> str:
    return ", ".join(f"{a.id} ({a.name})" for a in files)


def _find(files: list[Attachment], key: str) -> Attachment:
    key = key.strip()
    for a in files:
        if key == a.id:
            return a
    named = [a for a in files if key == a.name]
    if len(named) == 1:
        return named[0]
    if len(named) > 1:
        raise ToolError(f"Several attached files are called {key!r}: use the id "
                        f"({', '.join(a.id for a in named)}).")
    raise ToolError(f"{key!r} is not an attached file; only these can be read: "
                    f"{_listing(files)}.")


def attach_files(paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]], *,
                 name: str = "read_attachment", description: str | None = None) -> AnyTool:
    """A tool that reads the given files, and only those.

    Args:
        paths: The files (each must exist; at most 20); ids ``file_1``, ``file_2``... follow
            this order.
        name: Tool name (the default does not clash with the workspace ``read_file``).
        description: What the model reads (default: says which files are attached).

    Raises:
        ConfigError: a path is not an existing file, or more than 20 files.
    """
    files = _attachments(paths)
    if description is None:
        description = (f"Read a file the user attached: {_listing(files)}. Long files are cut; "
                       "the end of the result then says which offset continues.")

    def read_attachment(file: str, offset: int = 0, limit: int | None = None) -> str:
        """Read an attached text file.

        Args:
            file: The attached file's id (e.g. "file_1") or its file name.
            offset: Number of lines to skip from the start of the file.
            limit: Maximum number of lines to return (default: as many as fit).
        """
        a = _find(files, file)
        if os.path.realpath(a.path) != a.path:
            raise ToolError(f"{a.name} was replaced by a link since it was attached; "
                            "it was not read.")
        folder = Workspace(os.path.dirname(a.path), read_only=True)
        text = _files.read_file(folder, a.name, offset, limit)
        # The paging note names the workspace tool; point the model at this one instead.
        return text.replace("call read_file with offset=",
                            f'call {name} with file="{a.id}" and offset=')

    t = Tool(read_attachment, name=name, description=description)
    return t
