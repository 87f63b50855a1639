"""Reading an overlay's layers: what a path is in the final state a command left.

A command runs over an overlay of the workspace (docs/sandbox.md, "Changes are checked on the
final state"): its writes land in an *upper* folder, above the layers held from earlier
commands and the workspace itself (the lowest layer). In the upper, a removed path is a
*whiteout* (a character device 0:0) and a folder whose old content is gone is *opaque* (an
extended attribute). These helpers read that format without mounting anything, so the cost of
a check grows with what changed, never with the workspace.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence

__all__ = ["OPAQUE_XATTRS", "final_lstat", "is_incomplete", "is_opaque", "is_whiteout"]

OPAQUE_XATTRS = ("trusted.overlay.opaque", "user.overlay.opaque")
"""The attribute that marks an opaque folder: ``trusted.`` as root, ``user.`` in a user
namespace (the ``userxattr`` mount option)."""


def is_whiteout(st: os.stat_result) -> bool:
    """A removal marker: a character device with device number 0:0."""
    return stat.S_ISCHR(st.st_mode) and st.st_rdev == 0


def is_opaque(path: str) -> bool:
    """Whether the upper folder ``path`` replaced the lower one entirely."""
    for name in OPAQUE_XATTRS:
        try:
            if os.getxattr(path, name, follow_symlinks=False) == b"y":
                return True
        except OSError:
            continue
    return False


_INCOMPLETE = tuple(f"{ns}.overlay.{name}" for ns in ("trusted", "user")
                    for name in ("redirect", "metacopy"))


def is_incomplete(path: str) -> bool:
    """An upper entry whose content lies elsewhere (a folder redirect, a metadata-only copy):
    the mount options forbid both, so one means the upper folder does not show the final
    state, and the entry is held, never applied."""
    try:
        names = os.listxattr(path, follow_symlinks=False)
    except OSError:
        return False
    return any(n in _INCOMPLETE for n in names)


def _lstat(path: str) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:
        return None


def final_lstat(layers: Sequence[str], rel: str) -> os.stat_result | None:
    """The ``lstat`` of ``rel`` (relative, ``/``-separated) in the merged view of ``layers``
    (top first), or None when it does not exist there.

    A whiteout on the way hides the path in every lower layer; a file on the way means the
    path cannot exist below it; an opaque folder on the way hides what lies below it. A
    symlink on the way is not followed (the overlay would follow it; a path through a symlink
    is not the path the check asks about).
    """
    parts = [p for p in rel.split("/") if p and p != "."]
    if not parts:
        return _lstat(layers[-1])
    for layer in layers:
        path = layer
        stop_below = False
        found: os.stat_result | None = None
        for k, comp in enumerate(parts):
            path = os.path.join(path, comp)
            st = _lstat(path)
            if st is None:
                break
            if is_whiteout(st):
                return None
            if k < len(parts) - 1:
                if not stat.S_ISDIR(st.st_mode):
                    return None
                if layer is not layers[-1] and is_opaque(path):
                    stop_below = True
            else:
                found = st
        if found is not None:
            return found
        if stop_below:
            return None
    return None
