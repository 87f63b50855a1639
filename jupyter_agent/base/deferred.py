"""A pydantic model whose validator is built at its first use, not when its module is imported.

For the models on the path of a first run that a plain run never fills (docs/architecture.md,
"The first run"): building one at import costs about 1 ms, deferring it about a third of that.
A model a plain run does use gains nothing: it is built during the run instead.
"""

from __future__ import annotations

from pydantic import BaseModel

__all__ = ["DeferredModel"]


class DeferredModel(BaseModel, defer_build=True):
    """A :class:`~pydantic.BaseModel` built at its first use (subclasses inherit the setting)."""
