"""``--over VAR`` on ``%%chat``, ``%%toolloop`` and ``%%plan``: the cell runs once per row.

The flags are declared here and added to the three magics (``magics.py``); a cell with
``--over`` is handed to :func:`run_batch_cell`, which maps the flags onto
:func:`jupyter_agent.batch.api.batch`, shows one live card for the whole batch and stores the
results table in ``--out``. The batch flags without ``--over``, and several models without it,
are refused in one line before anything runs.

A cell magic blocks its kernel, so the card's stop buttons reach the kernel only once it is
free (or on a kernel that delivers widget messages on another thread). An interrupt (the ■
button, Ctrl-C) always works: the first lets running items finish, the second aborts them.
"""

from __future__ import annotations

import base64
import shlex
from typing import Any, Callable

from IPython.core.error import UsageError

from . import flags
from .batch.spec import ENGINES, MATCH_MODES, MAX_CONCURRENCY
from .errors import JupyterAgentError
from .magic_args import argument

__all__ = ["batch_arguments", "refuse_batch_flags", "run_batch_cell"]

_BATCH_ONLY = ("concurrency", "expect", "match", "score", "max_cost", "max_items", "rerun",
               "engine", "judge", "judge_model")


def batch_arguments(fn: Callable[..., Any]) -> Callable[..., Any]:
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


def refuse_batch_flags(args: Any) -> None:
    """A cell without ``--over``: batch flags and several models are one-line errors."""
    given = [n for n in _BATCH_ONLY if getattr(args, n, None) not in (None, False)]
    if given:
        raise UsageError(f"--{given[0].replace('_', '-')} needs --over VAR (a batch).")
    if args.model and "," in args.model:
        raise UsageError(f"Several models (--model {args.model}) need --over VAR: each row "
                         "runs on each model.")


def _options(magics: Any, kind: str, args: Any, ns: dict[str, Any]) -> dict[str, Any]:
    opts: dict[str, Any] = {"system": args.system, "temperature": args.temperature,
                            "max_tokens": args.max_tokens, **magics.typed_options(args)}
    if args.knowledge:
        if args.knowledge not in ns:
            raise UsageError(f"--knowledge: no variable named {args.knowledge!r}.")
        opts["knowledge"] = ns[args.knowledge]
    if kind == "chat":
        return opts
    opts.update(tools=magics._tools(args), agent=magics._agent(args))
    if args.max_rounds is not None:
        opts["max_rounds"] = args.max_rounds
    if kind == "toolloop":
        opts.update(parallel=args.parallel, tool_choice=args.tool_choice)
    else:
        opts.update(answer=args.answer, option=args.option)
    return opts


def _clients(args: Any, models: list[str]) -> dict[str, Any]:
    if not (args.record or args.replay):
        return {}
    if args.record and args.replay:
        raise UsageError("Give --record or --replay, not both.")
    from .replay.mode import cell_client

    return {m: cell_client("record" if args.record else "replay", m) for m in models}


def run_batch_cell(magics: Any, kind: str, args: Any, line: str, cell: str) -> None:
    """Run ``cell`` over ``--over``'s rows with ``kind`` (``chat``, ``toolloop``, ``plan``)."""
    from .batch.api import batch, split_models
    from .batch.engine import Controller
    from .ui.batch import BatchDisplay

    ns = magics._ns()
    if not cell or not cell.strip():
        raise UsageError("The cell is empty: write the prompt (with {field}s) below the magic.")
    if args.over not in ns:
        raise UsageError(f"--over: no variable named {args.over!r}.")
    words = shlex.split(line, posix=False)
    if args.session or args.no_history or any(w.split("=")[0] == "--history" for w in words):
        raise UsageError("--over: batch items run without a session or history; remove "
                         "--session / --history.")
    score = None
    if args.score:
        score = ns.get(args.score)
        if not callable(score):
            raise UsageError(f"--score: {args.score!r} is not a function in the notebook.")
    try:
        from .clients.factory import resolve_model

        models = [resolve_model(m).name for m in split_models(args.model)]
        clients = _clients(args, models)
        options = _options(magics, kind, args, ns)
    except JupyterAgentError as exc:
        raise UsageError(str(exc)) from None
    controller = Controller()
    box: dict[str, Any] = {}

    def on_progress(view: dict[str, Any]) -> None:
        if "display" not in box:
            box["display"] = BatchDisplay(view, widgets=magics.widgets,
                                          on_stop=lambda mode: controller.stop(mode))
        box["display"].update(view)

    try:
        result = batch(cell.strip(), ns[args.over], kind=kind, model=models,
                       concurrency=args.concurrency or 4, expect=args.expect,
                       match=args.match or "exact", score=score, max_cost=args.max_cost,
                       max_items=args.max_items, rerun=args.rerun, engine=args.engine or "thread",
                       auto_answer=getattr(args, "auto_answer", None), namespace=ns,
                       on_progress=on_progress, controller=controller, clients=clients,
                       judge=args.judge, judge_model=args.judge_model, **options)
    except JupyterAgentError as exc:
        if "display" in box:
            box["display"].finish(box["display"].view)
        raise UsageError(str(exc)) from None
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
