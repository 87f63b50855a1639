"""The data libraries the user's objects come from, taken as the user's code loaded them.

Summaries only ever meet a pandas, polars or numpy object when that library is already
imported (the object exists), so they look the module up instead of importing it: the package
gains no dependency, not even an optional one, and ``import jupyter_agent`` stays cheap.
"""

from __future__ import annotations

import sys
from types import ModuleType

__all__ = ["loaded"]


def loaded(name: str) -> ModuleType:
    """The already imported module ``name`` (``"pandas"``, ``"pandas.api.types"``…).

    Raises:
        LookupError: the library was never imported (then none of its objects exist).
    """
    module = sys.modules.get(name)
    if module is None:
        raise LookupError(f"{name} is not loaded")
    return module
