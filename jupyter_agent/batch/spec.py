"""A batch as data: what to run (agent, template, options, models) over which rows, and how.

Items are the rows times the models, row by row (row 1 on every model, then row 2...), so a
stopped comparison has compared the same rows. Each item is keyed by what it computes: the
hash of its prompt and which occurrence of that prompt it is (two identical rows are two
items). With the hash of the spec (agent, template, options) and the model, that key finds
the item's stored outcome again when the cell is re-run.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from ..base.errors import ParameterError
from ..base.jsontypes import JSONValue
from .inputs import Inputs, check_fields, render

if TYPE_CHECKING:
    from ..llm.protocol import ModelClient

__all__ = ["BatchSpec", "Item", "build_items", "check_spec", "spec_key", "inputs_hash",
           "fingerprint", "KINDS", "MATCH_MODES", "ENGINES", "MAX_CONCURRENCY"]

Kind = Literal["chat", "toolloop", "plan"]
KINDS = ("chat", "toolloop", "plan")
MATCH_MODES = ("exact", "icase", "contains")
ENGINES = ("thread", "dask")
_LONG_TEXT = 200
_LONG_LIST = 50
MAX_CONCURRENCY = 256
"""Items running at once, at most: each is a thread (or a Dask task slot) and a connection."""


@dataclass
class BatchSpec:
    """Everything a batch needs; :func:`jupyter_agent.batch.batch` builds it from parameters."""

    kind: Kind
    template: str
    inputs: Inputs
    models: list[str]
    """Resolved model names (at least one); every row runs on each."""
    options: dict[str, object] = field(default_factory=dict)
    """Keyword options of the entry point (``system``, ``tools``, ``max_rounds``...)."""
    clients: dict[str, ModelClient] = field(default_factory=dict)
    """A client per model name, when the caller supplies them (record/replay cells)."""
    namespace: Mapping[str, object] = field(default_factory=dict)
    concurrency: int = 4
    max_cost: float | None = None
    max_items: int | None = None
    rerun: bool = False
    engine: str = "thread"
    auto_answer: str | None = None
    expect: str | None = None
    match: str = "exact"
    score: Callable[..., object] | None = None
    judge: str | None = None
    """Criteria an LLM judge scores each answer on (``batch/judge.py``)."""
    judge_model: str | None = None
    """The judge's model; ``None``: the batch's first model."""


@dataclass
class Item:
    """One prompt on one model."""

    position: int
    """Place in the results (row by row, models in order)."""
    row: int
    model: str
    prompt: str
    key: str
    error: str | None = None
    """Why this row cannot run (a field with no value); the item fails without a request."""


def fingerprint(value: object, depth: int = 0) -> JSONValue:
    """A small JSON value standing for ``value`` in a hash (and in the stored batch): plain
    data as is, long texts and long lists (knowledge documents) by their hash, a tool or agent
    by its name, a function by its qualified name, anything else by its type."""
    if isinstance(value, str) and len(value) > _LONG_TEXT:
        return "sha256:" + _digest(value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if depth > 4:
        return type(value).__name__
    if isinstance(value, Mapping):
        return {str(k): fingerprint(v, depth + 1) for k, v in sorted(value.items(), key=str)}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=str) if isinstance(value, (set, frozenset)) else value
        out = [fingerprint(v, depth + 1) for v in items]
        return out if len(out) <= _LONG_LIST else f"{len(out)} items, sha256:{_digest(out)}"
    name = getattr(value, "name", None)
    if isinstance(name, str):
        return f"{type(value).__name__}:{name}"
    if callable(value):
        return f"{getattr(value, '__module__', '')}.{getattr(value, '__qualname__', '')}"
    return type(value).__name__


def _digest(obj: object) -> str:
    text = json.dumps(obj, sort_keys=True, ensure_ascii=False, default=str, allow_nan=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def spec_key(spec: BatchSpec) -> str:
    """The hash of what every item computes (agent, template and options, not the rows)."""
    # An option left at its default (None, False) is the same work as an option not given:
    # a cell (which passes every flag) and a script (which passes few) find each other's items.
    opts = {k: v for k, v in spec.options.items()
            if k not in ("listeners", "store", "client", "cache", "shell") and v is not None
            and v is not False}
    if "output" in opts:  # the schema itself, not the class's name: a changed field counts
        from ..llm.structured import output_spec

        opts["output"] = output_spec(opts["output"]).schema
    return _digest({"kind": spec.kind, "template": spec.template, "options": fingerprint(opts),
                    "auto_answer": spec.auto_answer})


def inputs_hash(items: list[Item]) -> str:
    """The hash of the batch's items (their prompts, in order, and models)."""
    return _digest([[i.key, i.model] for i in items])


def build_items(spec: BatchSpec) -> list[Item]:
    """The items of ``spec``, rendered and keyed.

    Raises:
        ParameterError: a template field neither the rows nor the notebook have.
    """
    if not spec.inputs.rows:
        return []
    fields = check_fields(spec.template, spec.inputs, spec.namespace)
    seen: dict[str, int] = {}
    items: list[Item] = []
    for r, row in enumerate(spec.inputs.rows):
        error = None
        try:
            prompt = render(spec.template, fields, row, spec.namespace)
        except ValueError as exc:
            prompt, error = "", f"Row {r + 1}: {exc}"
        if not error and not prompt.strip():
            error = f"Row {r + 1}: the prompt is empty."
        base = _digest(prompt) if not error else _digest(["no prompt", r])
        n = seen.get(base, 0)
        seen[base] = n + 1
        key = f"{base}:{n}"
        for model in spec.models:
            items.append(Item(position=len(items), row=r, model=model, prompt=prompt, key=key,
                              error=error))
    return items


def check_spec(spec: BatchSpec) -> None:
    """Raise :class:`ParameterError` (naming the parameter) for a value outside its range."""
    if spec.kind not in KINDS:
        raise ParameterError(f"kind must be one of {', '.join(KINDS)}, not {spec.kind!r}.")
    if not spec.template or not spec.template.strip():
        raise ParameterError("template must not be empty.")
    n = spec.concurrency
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_CONCURRENCY:
        raise ParameterError(f"concurrency must be an integer from 1 to {MAX_CONCURRENCY}, "
                             f"not {n!r}.")
    if spec.max_items is not None and (isinstance(spec.max_items, bool)
                                       or not isinstance(spec.max_items, int)
                                       or spec.max_items < 1):
        raise ParameterError(f"max_items must be an integer of 1 or more, not "
                             f"{spec.max_items!r}.")
    if spec.max_cost is not None and not (isinstance(spec.max_cost, (int, float))
                                          and 0 < spec.max_cost < float("inf")):
        raise ParameterError(f"max_cost must be a number above 0, not {spec.max_cost!r}.")
    if spec.match not in MATCH_MODES:
        raise ParameterError(f"match must be one of {', '.join(MATCH_MODES)}, not "
                             f"{spec.match!r}.")
    if spec.engine not in ENGINES:
        raise ParameterError(f"engine must be one of {', '.join(ENGINES)}, not {spec.engine!r}.")
    if spec.expect is not None and spec.score is not None:
        raise ParameterError("Give expect or score, not both.")
    if spec.score is not None and not callable(spec.score):
        raise ParameterError(f"score must be a function, not a {type(spec.score).__name__}.")
    if spec.expect is not None and spec.inputs.rows:
        missing = next((i for i, row in enumerate(spec.inputs.rows) if spec.expect not in row),
                       None)
        if missing is not None:
            raise ParameterError(f"expect: row {missing + 1} has no field {spec.expect!r}.")
    if not spec.models or any(not isinstance(m, str) or not m.strip() for m in spec.models):
        raise ParameterError("models must name at least one model (no empty names).")
    if len(set(spec.models)) != len(spec.models):
        raise ParameterError(f"models name one model twice: {', '.join(spec.models)}.")
