"""Batch runs and evaluations: one agent over many inputs, resumable, with one progress card.

``jupyter_agent.batch(template, over, kind="toolloop", concurrency=4, ...)`` runs ``chat``,
``toolloop`` or ``plan`` once per row of a DataFrame or list and returns a
:class:`~jupyter_agent.batch.api.BatchResult` (its ``results`` table, its ``board`` comparing
models). The cell magics do the same with ``--over VAR`` (docs/behaviour.md, "Batches").

This module is callable (``jupyter_agent.batch(...)`` is :func:`~.api.batch`), and cheap to
import: the engine loads on the first call. Layer: between the edge and ``agents/`` (it runs
agents; it imports no IPython).
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..base.fresh_stack import preimport
from ..base.lazy import lazy_exports

__all__ = ["batch", "BatchResult", "BatchRun", "Controller", "run_card"]

_LAZY = {"batch": ("jupyter_agent.batch.api", "batch"),
         "BatchResult": ("jupyter_agent.batch.api", "BatchResult"),
         "BatchRun": ("jupyter_agent.batch.api", "BatchRun"),
         "Controller": ("jupyter_agent.batch.engine", "Controller"),
         "run_card": ("jupyter_agent.batch.cards", "run_card")}

if TYPE_CHECKING:
    from .api import BatchResult, BatchRun, batch
    from .cards import run_card
    from .engine import Controller


__getattr__ = lazy_exports(__name__, _LAZY, __all__)[0]


class _CallableModule(types.ModuleType):
    """``jupyter_agent.batch`` is both this package and the function that runs a batch."""

    def __call__(self, *args: object, **kwargs: object) -> BatchResult | BatchRun:
        preimport("jupyter_agent.batch.api")  # the engine, as the --over cell does
        from .api import batch

        run: Callable[..., BatchResult | BatchRun] = batch  # (checks its arguments itself)

        if "namespace" not in kwargs:
            kwargs["namespace"] = sys._getframe(1).f_globals  # the caller's, not this frame's
        return run(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
