"""``jupyter_agent.batch(...)``: one agent over many inputs, from Python.

The magics' ``--over`` calls the same function (``jupyter_agent/edge/batch_magic.py``).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Literal, cast, overload

from typing_extensions import TypedDict, Unpack

from ..agents.option_rules import python_hint, refused_on
from ..base.errors import ParameterError
from ..base.jsontypes import JSONObject, int_field, object_field, str_field
from .engine import Controller, Execution, execute
from .evaluate import score_outcomes
from .inputs import load_inputs
from .item import Outcome
from .progress import preview
from .results import Table, as_table, board_rows, chart_png, results_table
from .spec import BatchSpec

if TYPE_CHECKING:
    import pandas as pd
    from pydantic import BaseModel

    from ..agents.run import Run
    from ..llm.protocol import ModelClient
    from ..llm.structured import OutputSpec
    from ..session.store import Store, StoreChoice
    from .cards import RunCard
    from .judge import JudgeSummary
    from .typed import TypedColumns

__all__ = ["batch", "BatchResult", "BatchRun", "split_models"]

PREVIEW_ROWS = 20
"""Results shown in the finished card (the table in ``--out`` has them all)."""
PER_ITEM = refused_on("over")
"""Options of the entry points a batch sets for every item itself (or refuses), with why: the
``over`` column of the one table (``jupyter_agent/agents/option_rules.py``), which a ``--over``
cell reads too."""
_KINDS = ("chat", "toolloop", "plan")


def batch_options(kind: str) -> frozenset[str]:
    """The keyword options a batch of ``kind`` carries to every item: those of the entry point
    (``chat()``, ``toolloop()``, ``plan()`` and their turn options) but :data:`PER_ITEM`."""
    import dataclasses
    import inspect

    from ..agents.entries import entry_point

    entry = entry_point(kind)  # first: it imports the agent layer (agents/entries.py)
    from ..agents.turn.options import TurnOptions

    names = {f.name for f in dataclasses.fields(TurnOptions)}
    names |= {p.name for p in inspect.signature(entry).parameters.values()
              if p.kind is inspect.Parameter.KEYWORD_ONLY}
    if kind == "chat":
        names -= {"agent", "auto_approve", "approve"}  # a chat calls no tools
    return frozenset(names - set(PER_ITEM))


class BatchResult:
    """What a batch produced.

    Attributes:
        results: One row per item: the input columns, then ``answer``, ``status``, ``rounds``,
            ``input_tokens``, ``output_tokens``, ``cost``, ``seconds``, ``error``, ``run_id``
            (plus ``model`` with several models, ``score`` in an evaluation).
        board: The comparison of models (accuracy, cost, p50/p95 seconds, tokens), or ``None``
            when there is one model and no evaluation.
        status: ``done``, or ``stopped`` (a stop, a limit); ``stop_reason`` says which.
        view: The card's final state.
    """

    def __init__(self, ex: Execution, judged: JudgeSummary | None = None) -> None:
        spec = ex.spec
        self.batch_id = ex.batch_id
        self.outcomes = ex.outcomes
        self.view = ex.progress.view()
        self.status: str = str_field(self.view, "status")
        self.stop_reason: str = str_field(self.view, "stop_reason")
        scored = spec.expect is not None or spec.score is not None
        typed = _typed(spec, ex.outcomes)
        self.scores = score_outcomes(ex.outcomes, ex.items, spec.inputs.rows, expect=spec.expect,
                                     match=spec.match, score=spec.score,
                                     checks=typed.checks if typed else None) if scored else None
        extra: dict[str, list[object]] = dict(typed.columns) if typed else {}
        self.judge = judged.view() if judged is not None else None
        if judged is not None:
            extra.update(judge_score=list(judged.scores), judge_reason=list(judged.reasons))
            self.view["judge"] = self.judge
            cost = self.view.get("cost")
            if isinstance(cost, (int, float)):  # unknown (None) stays unknown (docs/security.md)
                self.view["cost"] = cost + judged.cost if judged.priced else None
            self.view["input_tokens"] = int_field(self.view, "input_tokens") + judged.input_tokens
            self.view["output_tokens"] = (int_field(self.view, "output_tokens")
                                          + judged.output_tokens)
        self.results: Table = results_table(spec.inputs, ex.items, ex.outcomes, spec.models,
                                            self.scores, extra=extra)
        if typed is not None and hasattr(self.results, "dtypes"):
            from .typed import apply_dtypes

            self.results = apply_dtypes(self.results, _output_spec(spec))
        self.board_rows = (board_rows(ex.items, ex.outcomes, spec.models, self.scores,
                                      ex.progress.unpriced)
                           if scored or len(spec.models) > 1 else [])
        self.board: pd.DataFrame | Sequence[Mapping[str, object]] | None = (
            as_table(self.board_rows) if self.board_rows else None)
        if self.board is not None and hasattr(self.results, "attrs"):
            self.results.attrs["board"] = self.board
        self.view["board"] = [*self.board_rows]
        self.view["preview"] = [
            {"row": i.row + 1, "model": i.model, "status": o["status"],
             "answer": preview(o.get("answer")), "error": preview(o.get("error")),
             "score": None if self.scores is None else self.scores[i.position],
             **({"judge": judged.scores[i.position]} if judged is not None else {})}
            for i, o in zip(ex.items[:PREVIEW_ROWS], ex.outcomes[:PREVIEW_ROWS])]
        # Every result, so the card can say how many the preview leaves out (never silently).
        self.view["results_total"] = len(ex.items)

    def card(self, run_id: str) -> RunCard:
        """The full card of one item's run (see :func:`jupyter_agent.batch.cards.run_card`)."""
        from .cards import run_card

        return run_card(run_id)

    def chart(self) -> bytes | None:
        """The comparison as a PNG (``None`` without matplotlib or without a comparison)."""
        return chart_png(self.board_rows)

    def bundle(self) -> JSONObject:
        """The card as a static MIME bundle (markdown and plain text)."""
        from ..view.batch import batch_bundle

        return batch_bundle(self.view)

    def _repr_mimebundle_(self, include: object = None, exclude: object = None) -> JSONObject:
        return self.bundle()

    def __repr__(self) -> str:
        c = object_field(self.view, "counts")
        return (f"<BatchResult {self.batch_id} {self.status}: {c['done']} done, {c['failed']} "
                f"failed, {c['ask']} waiting for an answer, {c['skipped']} not run>")


def _output_spec(spec: BatchSpec) -> OutputSpec:
    from ..llm.structured import output_spec

    return output_spec(spec.options["output"])


def _typed(spec: BatchSpec, outcomes: list[Outcome]) -> TypedColumns | None:
    """The typed columns of a batch with ``output`` (``None`` without)."""
    if spec.options.get("output") is None:
        return None
    from .typed import typed_columns

    return typed_columns(_output_spec(spec), outcomes)


def _judged(ex: Execution) -> JudgeSummary | None:
    """Run the judge over the finished items (``None`` without ``judge``)."""
    spec = ex.spec
    if not spec.judge:
        return None
    from ..agents.chat import chat
    from .item import FINISHED
    from .judge import judge_outcomes

    model = spec.judge_model or spec.models[0]
    client = spec.clients.get(model)
    cached = spec.options.get("cache")
    cache = None if cached is None else bool(cached)  # as the items read it (``with_cache``)

    def call(prompt: str, schema: type[BaseModel]) -> Run[BaseModel]:
        return chat(prompt, output=schema, model=model, client=client, store=None,
                    session=None, history=0, stream=False, cache=cache)

    pairs: list[tuple[int, int]] = []
    names = ("", "")
    if len(spec.models) == 2:
        names = (spec.models[0], spec.models[1])
        by_row: dict[int, dict[str, int]] = {}
        for item in ex.items:
            by_row.setdefault(item.row, {})[item.model] = item.position
        pairs = [(m[names[0]], m[names[1]]) for m in by_row.values() if len(m) == 2]
    return judge_outcomes(spec.judge, model, [i.prompt for i in ex.items], ex.outcomes,
                          call=call, answered=set(FINISHED), pairs=pairs, names=names,
                          concurrency=spec.concurrency)


def _result(ex: Execution) -> BatchResult:
    return BatchResult(ex, _judged(ex))


def split_models(model: str | list[str] | tuple[str, ...] | None) -> list[str | None]:
    """``"a,b"`` or ``["a", "b"]`` -> ``["a", "b"]``; ``None`` -> ``[None]`` (the default)."""
    if model is None:
        return [None]
    names = model.split(",") if isinstance(model, str) else list(model)
    out: list[str | None] = []
    for n in names:
        if not isinstance(n, str) or not n.strip():
            raise ParameterError(f"model must name models (comma-separated), not {model!r}.")
        out.append(n.strip())
    if not out:
        raise ParameterError(f"model must name models (comma-separated), not {model!r}.")
    return out


class _SpecFields(TypedDict):
    """``batch()``'s own parameters that :class:`BatchSpec` keeps as they are."""

    concurrency: int
    expect: str | None
    match: str
    score: Callable[..., object] | None
    max_cost: float | None
    max_items: int | None
    rerun: bool
    engine: str
    auto_answer: str | None
    judge: str | None
    judge_model: str | None


def _checked_options(kind: str, namespace: Mapping[str, object],
                     options: dict[str, object]) -> dict[str, object]:
    """The items' options of a batch, checked once before any item runs (the table's ``over``
    road, the entry point's parameters, ``context`` names, the schema made once)."""
    if kind not in _KINDS:
        raise ParameterError(f"kind must be chat, toolloop or plan, not {kind!r}.")
    for name in options:
        if name in PER_ITEM and options[name] not in (None, False):
            raise ParameterError(f"{name} is not an option of a batch: {PER_ITEM[name]}.",
                                 parameters=(name,))
    allowed = batch_options(kind)  # the agent layer's first import (agents/entries.py)
    unknown = sorted(n for n in options if n not in allowed and n not in PER_ITEM)
    if unknown:
        hint = python_hint(unknown[0], allowed)  # schema= -> output=, out= -> a cell's own
        raise ParameterError(f"{unknown[0]} is not an option of a {kind} batch" + (
            f": {hint}." if hint else f" (options: {', '.join(sorted(allowed))})."),
            parameters=(unknown[0],))
    options = {k: v for k, v in options.items() if k not in PER_ITEM}
    if options.get("context") and options.get("shell") is None:
        options["shell"] = namespace  # --with / context= read the notebook's variables
    if options.get("context"):
        from ..agents.context import with_variables

        # A missing or secret-looking name: one line before any item starts.
        context = options["context"]
        names = (context if isinstance(context, str) else
                 [n for n in context if isinstance(n, str)] if isinstance(context, Iterable)
                 else None)  # (with_variables reads the text names of a list)
        with_variables("", names, options.get("shell"))
    from ..agents.params import check_parameters

    check_parameters(options, max_rounds=options.get("max_rounds"), option=options.get("option"))
    if options.get("output") is not None:
        from ..agents.turn.start import typed_output

        # A bad schema: one line before any item runs; a good one made once for every item.
        options["output"] = typed_output(options["output"])
    return options


def _check_fields(fields: _SpecFields, clients: Mapping[str, ModelClient] | None,
                  options: Mapping[str, object]) -> None:
    """The batch's own fields that need a look before anything runs (the judge, dask)."""
    judge = fields.get("judge")
    if judge is not None and (not isinstance(judge, str) or not judge.strip()):
        raise ParameterError(f"judge must be the criteria as text, not {judge!r}.",
                             parameters=("judge",))
    if fields.get("judge_model") is not None and judge is None:
        raise ParameterError("judge_model needs judge (the criteria).",
                             parameters=("judge_model", "judge"))
    if fields.get("engine") == "dask":
        from ..base import config

        if clients or options.get("client") or \
                config.settings.cassette_mode != "live":
            raise ParameterError("engine 'dask' makes live model calls only: record and replay "
                                 "run on the thread engine.")
        if options.get("context"):
            raise ParameterError("context reads this kernel's variables: it runs on the thread "
                                 "engine, not on dask workers.", parameters=("context",))


def _spec(template: str, over: object, kind: str, model: str | list[str] | None,
          namespace: Mapping[str, object], options: dict[str, object],
          clients: Mapping[str, ModelClient] | None, **fields: Unpack[_SpecFields]) -> BatchSpec:
    options = _checked_options(kind, namespace, options)
    _check_fields(fields, clients, options)
    from ..clients.factory import resolve_model

    inputs = load_inputs(over)
    models = [resolve_model(m).name for m in split_models(model)]
    per_model = dict(clients or {})
    client = options.pop("client", None)
    if client is not None:
        if len(models) > 1:
            raise ParameterError("client serves one model: pass clients per model, or one model.")
        # What the entry point's client= takes: a wrong object fails at its first call, as
        # in a single run.
        per_model[models[0]] = cast("ModelClient", client)
    # ``kind`` is one of ``_OPTIONS``' keys (checked above), a str to mypy.
    return BatchSpec(kind=kind, template=template, inputs=inputs, models=models,  # type: ignore[arg-type]
                     options=options, clients=per_model, namespace=namespace, **fields)


@overload
def batch(template: str, over: object, *, kind: str = "toolloop",
          model: str | list[str] | None = None, concurrency: int = 4,
          expect: str | None = None, match: str = "exact",
          score: Callable[..., object] | None = None, max_cost: float | None = None,
          max_items: int | None = None, rerun: bool = False, engine: str = "thread",
          auto_answer: str | None = None, namespace: Mapping[str, object] | None = None,
          store: StoreChoice = "default", wait: Literal[True] = True,
          on_progress: Callable[[JSONObject], None] | None = None,
          controller: Controller | None = None, clients: dict[str, ModelClient] | None = None,
          judge: str | None = None, judge_model: str | None = None,
          **options: object) -> BatchResult: ...
@overload
def batch(template: str, over: object, *, kind: str = "toolloop",
          model: str | list[str] | None = None, concurrency: int = 4,
          expect: str | None = None, match: str = "exact",
          score: Callable[..., object] | None = None, max_cost: float | None = None,
          max_items: int | None = None, rerun: bool = False, engine: str = "thread",
          auto_answer: str | None = None, namespace: Mapping[str, object] | None = None,
          store: StoreChoice = "default", wait: Literal[False],
          on_progress: Callable[[JSONObject], None] | None = None,
          controller: Controller | None = None, clients: dict[str, ModelClient] | None = None,
          judge: str | None = None, judge_model: str | None = None,
          **options: object) -> BatchRun: ...
def batch(template: str, over: object, *, kind: str = "toolloop",
          model: str | list[str] | None = None, concurrency: int = 4,
          expect: str | None = None, match: str = "exact",
          score: Callable[..., object] | None = None, max_cost: float | None = None,
          max_items: int | None = None, rerun: bool = False, engine: str = "thread",
          auto_answer: str | None = None, namespace: Mapping[str, object] | None = None,
          store: StoreChoice = "default", wait: bool = True,
          on_progress: Callable[[JSONObject], None] | None = None,
          controller: Controller | None = None, clients: dict[str, ModelClient] | None = None,
          judge: str | None = None, judge_model: str | None = None,
          **options: object) -> BatchResult | BatchRun:
    """Run ``kind`` (``chat``, ``toolloop`` or ``plan``) once per row of ``over``.

    Args:
        template: The prompt; ``{field}`` takes the row's field (``{item}`` for a list of
            plain values), else the variable of ``namespace``.
        over: A pandas or polars DataFrame, a list of dicts, or a list of values.
        model: A model, or several (a list or ``"a,b"``): every row runs on each, and the
            result has a ``model`` column and a comparison board.
        concurrency: Items running at once (default 4).
        expect: The row field holding the expected answer (an evaluation); ``match`` is
            ``exact``, ``icase`` or ``contains``.
        score: Instead of ``expect``: ``score(answer, row)`` returning a number or a bool.
        max_cost: Start no item once this call has spent this much (running items finish).
        max_items: Start at most this many items (a re-run continues with the next ones).
        rerun: Run every item again (default: items finished by an earlier call with the same
            template, options and inputs are taken from the session store).
        engine: ``thread`` (default) or ``dask`` (the active ``dask.distributed`` client, else a
            ``LocalCluster`` started for the batch).
        auto_answer: ``"first"``: a plan item that asks is answered with option 1; without
            it the item waits with status ``ask`` (``%agent pending`` / ``%agent resume``).
        namespace: Variables for template fields the rows lack (default: the caller's
            globals, like a notebook cell).
        store: The session store (``"default"``) or ``None`` (nothing kept, no resuming).
        wait: ``False`` returns a :class:`BatchRun` at once (its ``stop()`` works while it runs).
        on_progress: Called with the card's state, a few times a second.
        controller: Stop requests from elsewhere (the card's button).
        clients: A model client per model name (record/replay cells).
        judge: Criteria an LLM judge scores each answer on (1 to 5, with a reason): the
            ``judge_score`` and ``judge_reason`` columns; with two models, also a win rate.
        judge_model: The judge's model (default: the batch's first model).
        **options: Options of the entry point (``system``, ``tools``, ``max_rounds``,
            ``agent`` for a named agent...). ``output=Model`` makes every answer typed: the
            results get one typed column per field and ``errors``; ``schema_retries`` and
            ``cache=True`` as for a single run.

    Returns:
        A :class:`BatchResult` (a :class:`BatchRun` with ``wait=False``).
    """
    if namespace is None:
        namespace = sys._getframe(1).f_globals  # a notebook cell's variables, as in the cell
    spec = _spec(template, over, kind, model, namespace, dict(options), clients,
                 concurrency=concurrency, expect=expect, match=match, score=score,
                 max_cost=max_cost, max_items=max_items, rerun=rerun, engine=engine,
                 auto_answer=auto_answer, judge=judge, judge_model=judge_model)
    if store == "default":
        from ..session import default_store

        store = default_store()
    run = BatchRun(spec, store, on_progress, controller)
    if not wait:
        return run.start()
    return _result(execute(spec, store=store, controller=run.controller,
                           on_progress=on_progress))


class BatchRun:
    """A batch running in a background thread (``batch(..., wait=False)``)."""

    def __init__(self, spec: BatchSpec, store: Store | None,
                 on_progress: Callable[[JSONObject], None] | None = None,
                 controller: Controller | None = None) -> None:
        self.spec = spec
        self.store = store
        self.on_progress = on_progress
        self.controller = controller or Controller()
        self._thread: threading.Thread | None = None
        self._result: BatchResult | None = None
        self._error: BaseException | None = None

    def start(self) -> BatchRun:
        """Start the batch in a daemon thread."""
        def target() -> None:
            try:
                self._result = _result(execute(self.spec, store=self.store,
                                               controller=self.controller,
                                               on_progress=self.on_progress))
            except BaseException as exc:  # handed to wait()
                self._error = exc

        self._thread = threading.Thread(target=target, name="jupyter-agent-batch", daemon=True)
        self._thread.start()
        return self

    def stop(self, mode: str = "finish") -> None:
        """``finish`` lets running items end; ``abort`` ends them at their next round."""
        self.controller.stop(mode)

    @property
    def done(self) -> bool:
        """Whether the batch has ended."""
        return self._thread is not None and not self._thread.is_alive()

    def wait(self, timeout: float | None = None) -> BatchResult:
        """The result once the batch ends (a fatal mistake is raised here)."""
        assert self._thread is not None, "start() the batch first"
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise TimeoutError("the batch is still running")
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result
