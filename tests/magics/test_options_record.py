"""One options record: every flag of ``%%chat``/``%%toolloop``/``%%plan`` is a typed field of
:class:`~jupyter_agent.edge.cell_options.CellOptions`, read once by ``read_cell_options`` (no
untyped bag, nothing read in ``magics.py``), and a flag without its field is refused at once.
The flags are read from the magics' own parsers, so a new flag is covered without a list."""

from __future__ import annotations

import dataclasses

import pytest
from IPython.core.error import UsageError

from jupyter_agent.edge.cell_options import CellOptions, read_cell_options
from jupyter_agent.edge.magics import AgentMagics

EDGE_ONLY = {"out", "over", "concurrency", "expect", "match", "score", "max_cost", "max_items",
             "rerun", "engine", "judge", "judge_model", "record", "replay", "no_history",
             "no_stream", "with_vars", "schema", "acp"}
"""Destinations the edge reads into another field (``--schema`` -> ``output``, ``--with`` ->
``context``...) or keeps itself (``--out``, the batch flags, ``--acp``: an external agent's
cell never builds the record, and refuses every flag but its own few)."""


@pytest.mark.parametrize("kind", ["chat", "toolloop", "plan"])
def test_every_flag_is_a_field_of_the_record(kind: str) -> None:
    parser = getattr(AgentMagics, kind).parser
    dests = {a.dest for a in parser._actions if a.option_strings and a.dest != "help"}
    fields = {f.name for f in dataclasses.fields(CellOptions)}
    assert "extra" not in fields
    assert sorted(dests - fields - EDGE_ONLY) == []


def _read(line: str, ns: dict[str, object]) -> CellOptions:
    parser = AgentMagics.plan.parser
    return read_cell_options("plan", parser.parse_args(line.split()), parser, ns=ns)


def test_schema_cache_skills_and_approve_are_read_once_into_typed_fields() -> None:
    class Pick:
        pass

    opts = _read("--schema Pick --schema-retries 2 --cache --skills sk --approve bash,x",
                 {"Pick": Pick})
    assert (opts.output, opts.schema_retries, opts.cache, opts.skills, opts.approve) == (
        Pick, 2, True, "sk", "bash,x")
    entry = opts.entry_options(lambda mode, model: None)
    assert (entry["output"], entry["schema_retries"], entry["cache"], entry["skills"],
            entry["approve"]) == (Pick, 2, True, "sk", "bash,x")
    assert "output" in opts.batch_options()  # the same record reaches a batch's items


def test_a_bad_schema_flag_is_one_line() -> None:
    with pytest.raises(UsageError, match="no variable named 'Nope'"):
        _read("--schema Nope", {})
    with pytest.raises(UsageError, match="--schema-retries needs --schema"):
        _read("--schema-retries 2", {})
