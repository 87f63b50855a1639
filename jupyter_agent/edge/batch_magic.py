"""``--over VAR`` on ``%%chat``, ``%%toolloop`` and ``%%plan``: the cell runs once per row.

The flags are declared here and added to the three magics (``magics.py``); a cell with
``--over`` is handed to :func:`run_batch_cell`, which reads the flags into the cell's
options record (the same one a plain cell builds) and hands it to
:func:`jupyter_agent.batch.api.batch`, shows one live card for the whole batch and stores the
results table in ``--out``. The batch flags without ``--over``, and several models without it,
are refused in one line before anything runs.

A cell magic blocks its kernel, so the card's stop buttons reach the kernel only once it is
free (or on a kernel that delivers widget messages on another thread). An interrupt (the ■
button, Ctrl-C) always works: the first lets running items finish, the second aborts them.
"""

from __future__ import annotations

import argparse
import base64
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from IPython.core.error import UsageError

from ..base import flags
from ..base.errors import JupyterAgentError
from ..base.flags import usage_message
from ..batch.spec import ENGINES, MATCH_MODES, MAX_CONCURRENCY
from .cell_options import CellKind, CellOptions, load_cell
from .magic_args import F, argument

if TYPE_CHECKING:
    from ..base.jsontypes import JSONObject
    from ..llm.protocol import ModelClient
    from ..ui.batch import BatchDisplay

__all__ = ["BatchHost", "batch_arguments", "run_batch_cell"]


class BatchHost(Protocol):
    """What a batch cell needs from the magics that run it (``AgentMagics`` is one).

    A protocol, not an import: the magics import this module, so this module must not import
    them back (docs/architecture.md: no import circle, not even under ``TYPE_CHECKING``).
    """

    widgets: bool
    """Draw live cards as widgets (``False``: static MIME bundles)."""

    def namespace(self) -> dict[str, object]:
        """The notebook's user namespace (``--over``'s rows and ``--score`` come from it)."""
        ...

    def cell_options(self, kind: CellKind, args: argparse.Namespace) -> CellOptions:
        """The cell's flags read into its options record, as a plain cell reads them."""
        ...


def batch_arguments(fn: F) -> F:
    """The batch flags (applied below ``@magic_arguments``)."""
    for decorator in reversed([
        argument("--over", type=flags.identifier,
                 help="Run the cell once per row of this DataFrame or list; {field} takes the "
                      "row's field ({item} for plain values)."),
        argument("--concurrency", type=flags.integer(1, MAX_CONCURRENCY),
                 help="Items running at once with --over (default 4)."),
        argument("--expect", type=flags.text,
                 help="Evaluate: the row field holding the expected answer."),
        argument("--match", type=flags.text, choices=list(MATCH_MODES),
                 help="How --expect compares: exact (default), icase or contains."),
        argument("--score", type=flags.identifier,
                 help="Evaluate with this function: score(answer, row) -> number or bool."),
        argument("--max-cost", type=flags.amount,
                 help="Start no more items once this much has been spent."),
        argument("--max-items", type=flags.integer(1),
                 help="Start at most this many items (run the cell again to continue)."),
        argument("--rerun", action="store_true",
                 help="Run every item again, even those finished by an earlier run."),
        argument("--engine", type=flags.text, choices=list(ENGINES),
                 help="thread (default) or dask (a dask.distributed cluster)."),
        argument("--judge", type=flags.text,
                 help="Score each answer with an LLM judge on these criteria (judge_score, "
                      "judge_reason columns; with two models, a win rate)."),
        argument("--judge-model", type=flags.text,
                 help="With --judge: the judge's model (default: the cell's)."),
    ]):
        fn = decorator(fn)
    return fn


def _clients(options: CellOptions, models: list[str]) -> dict[str, ModelClient]:
    if options.cassette is None:
        return {}
    from ..replay.mode import cell_client

    return {m: cell_client(options.cassette, m) for m in models}


def run_batch_cell(magics: BatchHost, kind: CellKind, args: argparse.Namespace, cell: str
                   ) -> None:
    """Run ``cell`` over ``--over``'s rows with ``kind`` (``chat``, ``toolloop``, ``plan``).

    The flags are read into the same :class:`~jupyter_agent.edge.cell_options.CellOptions` a
    plain cell builds (``magics.cell_options``); one a batch cannot carry is refused by name.
    """
    load_cell(kind, "jupyter_agent.batch.api", "jupyter_agent.ui.batch")
    from ..batch.api import batch, split_models
    from ..batch.engine import Controller
    from ..ui.batch import BatchDisplay

    ns = magics.namespace()
    if not cell or not cell.strip():
        raise UsageError("The cell is empty: write the prompt (with {field}s) below the magic.")
    if args.over not in ns:
        raise UsageError(f"--over: no variable named {args.over!r}.")
    cell_options = magics.cell_options(kind, args)
    options = cell_options.batch_options()
    score: Callable[..., object] | None = None
    if args.score:
        found = ns.get(args.score)
        if not callable(found):
            raise UsageError(f"--score: {args.score!r} is not a function in the notebook.")
        score = found
    try:
        from ..clients.factory import resolve_model

        models = [resolve_model(m).name for m in split_models(args.model)]
        clients = _clients(cell_options, models)
    except JupyterAgentError as exc:
        raise UsageError(usage_message(exc)) from None
    controller = Controller()
    box: dict[str, BatchDisplay] = {}

    def on_progress(view: JSONObject) -> None:
        if "display" not in box:
            box["display"] = BatchDisplay(view, widgets=magics.widgets,
                                          on_stop=lambda mode: controller.stop(mode))
        box["display"].update(view)

    try:
        result = batch(cell.strip(), ns[args.over], kind=kind, model=models,
                       concurrency=args.concurrency or 4, expect=args.expect,
                       match=args.match or "exact", score=score, max_cost=args.max_cost,
                       max_items=args.max_items, rerun=args.rerun, engine=args.engine or "thread",
                       auto_answer=cell_options.auto_answer, namespace=ns,
                       on_progress=on_progress, controller=controller, clients=clients,
                       judge=args.judge, judge_model=args.judge_model, **options)
    except JupyterAgentError as exc:
        if "display" in box:
            box["display"].finish(box["display"].view)
        raise UsageError(usage_message(exc)) from None
    display = box.get("display") or BatchDisplay(result.view, widgets=False)
    display.finish(result.view)
    ns["_agent_batch"] = result
    if args.out:
        ns[args.out] = result.results
    png = result.chart()
    if png is not None:
        from IPython.display import display as show

        show({"image/png": base64.b64encode(png).decode("ascii"),
              "text/plain": "<comparison chart: accuracy, cost and seconds per item by model>"},
             raw=True)
