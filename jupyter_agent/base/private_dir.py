"""Folders the package makes outside ``JUPYTER_AGENT_HOME`` (in the shared temp folder) that
only this user can use (docs/security.md "Files outside the data folder").

A fixed name in a shared folder can be made first by another local user: a folder they own, or
one open to everyone, would let them read what is written there (replayed prompts and answers)
or plant files in it. :func:`private_dir` makes the folder with ``mkdir(0700)``, which fails
when the name exists, and then checks with ``lstat`` what is really there: a folder (not a
link), owned by this user, with no access for group or others. Anything else is refused.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

__all__ = ["UnsafeFolderError", "private_dir", "user_temp_dir"]


class UnsafeFolderError(OSError):
    """A folder that exists but is not this user's alone."""


def private_dir(path: Path) -> Path:
    """``path``, a folder this user alone can use: made 0700 when it does not exist; an
    existing one must be a real folder owned by this user with no group or other access.

    Raises:
        UnsafeFolderError: the name is taken by a link, a file, someone else's folder or a
            folder open to others (one line saying which).
    """
    try:
        os.mkdir(path, 0o700)  # atomic: fails if anything has the name already
    except FileExistsError:
        pass
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafeFolderError(f"{path} is not a folder (a link or a file has its name); "
                                "not used")
    if st.st_uid != os.geteuid():
        raise UnsafeFolderError(f"{path} belongs to uid {st.st_uid}, not to this user; not used")
    if st.st_mode & 0o077:
        raise UnsafeFolderError(f"{path} is open to other users (mode "
                                f"{stat.S_IMODE(st.st_mode):o}); not used")
    return path


def user_temp_dir() -> Path:
    """This user's private folder in the shared temp folder (``jupyter-agent-<uid>``), the same
    in every process of the user, so what is kept there survives a kernel restart.

    Raises:
        UnsafeFolderError: the name is taken by something that is not this user's alone.
    """
    return private_dir(Path(tempfile.gettempdir()) / f"jupyter-agent-{os.geteuid()}")
