"""The one table of option refusals: for every option of a run, on which road it is taken.

A run's options reach it on six roads (docs/behaviour.md §1.1, "Options on every road"):

* ``cell``: a plain ``%%chat``/``%%toolloop``/``%%plan`` cell;
* ``over``: a ``--over`` cell, and ``jupyter_agent.batch(**options)`` from Python;
* ``acp``: a ``%%toolloop --acp`` cell (an external agent brings its own model and tools);
* ``python``: the keyword options of ``chat()``, ``toolloop()``, ``plan()``;
* ``resume``: a resumed run (a click, ``%agent resume``, an answer given up front). The run
  keeps what its first turn was given: a row says here why an option is *not* carried;
  ``%agent resume`` takes no cell flag, and refuses one by name from this column;
* ``replay``: a cell run while ``%agent replay`` replays a cassette. The cassette compares each
  request with its recording (a different request is one line there); a row says here what
  cannot be replayed at all.

Each row is keyed by the option's name (the field of the cell's options record
``edge/cell_options.py``, which is the keyword of the Python API where there is one) and says,
per road, ``None`` (taken: it does what it says; on ``resume``: carried unchanged) or the one
reason it is refused there. Every road checks its entry against this table once
(:func:`refusal`, :func:`python_refusal`); no other list of refusals exists.

Pure data: importing this module imports nothing of the package.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Literal

__all__ = ["Road", "ROADS", "Rule", "RULES", "NOT_OPTIONS", "flag_dest", "rule_of_dest",
           "refusal", "python_refusal", "python_hint", "acp_flags", "refused_on", "RESUME_KEEPS"]

Road = Literal["cell", "over", "acp", "python", "resume", "replay"]
ROADS: tuple[Road, ...] = ("cell", "over", "acp", "python", "resume", "replay")

_ACP = "the ACP agent brings its own model, tools and permissions"
_BATCH = "needs --over VAR (a batch)"
_BATCH_IN_PYTHON = "it is a keyword of jupyter_agent.batch(), which runs one agent per row"
_BATCH_ON_RESUME = ("an item resumed by %agent resume continues outside its batch; re-run the "
                    "batch cell to count, score and judge it with the rest")
_EDGE_ONLY = "a cell's own (in Python the call returns the result)"
_NO_SESSION = "batch items run without a session"
RESUME_KEEPS = ("a resumed run keeps the options its cell started it with; run the cell again "
                "to change them")
"""What ``%agent resume`` says of a cell flag the run carries (the ``resume`` column is None)."""


@dataclass(frozen=True)
class Rule:
    """One option: its cell flags and, per road, ``None`` (taken) or why it is refused."""

    flags: tuple[str, ...] = ()
    """The cell flags that set it, long spellings (none: a Python-only option)."""
    cell: str | None = None
    over: str | None = None
    acp: str | None = _ACP
    python: str | None = None
    resume: str | None = None
    """``None``: a resumed run carries the first turn's value unchanged."""
    replay: str | None = None


RULES: dict[str, Rule] = {
    # ---- the shared flags of the three magics
    "model": Rule(("--model",)),  # --over: several models; batch(model=) its own keyword
    "system": Rule(("--system",)),
    "session": Rule(("--session",), over=_NO_SESSION, acp=None),
    "history": Rule(("--history", "--no-history"), over="batch items run without history"),
    "temperature": Rule(("--temperature",)),
    "max_tokens": Rule(("--max-tokens",)),
    "knowledge": Rule(("--knowledge",)),
    "quote_role": Rule(("--quote-role",)),
    "quote_prompt": Rule(("--quote-prompt",)),
    "quote_template": Rule(("--quote-template",)),
    "stream": Rule(("--no-stream",), over="batch items never stream",
                   acp="an ACP agent streams its updates itself (the card draws them as they "
                       "come)"),
    "context": Rule(("--with",)),
    "cassette": Rule(
        ("--record", "--replay"),
        python="a cell's --record/--replay: in Python pass client= (a cassette's client), or "
               "run %agent record / %agent replay first",
        replay="this notebook replays its cassette, and a --record cell would call the model "
               "live and write into that cassette; run %agent record (or %agent live) first"),
    "output": Rule(("--schema",)),
    "schema_retries": Rule(("--schema-retries",)),
    "cache": Rule(("--cache",)),
    # ---- %%toolloop and %%plan
    "tools": Rule(("--tools",)),
    "max_rounds": Rule(("--max-rounds",)),
    "agent": Rule(("--agent",)),
    "notebook": Rule(("--notebook",),
                     over="batch items run side by side in worker threads and must not run "
                          "code in this kernel or edit its cells"),
    "skills": Rule(("--skills",)),
    "approve": Rule(("--approve",)),
    # ---- %%toolloop
    "parallel": Rule(("--parallel",)),
    "tool_choice": Rule(("--tool-choice",), resume="it forces the first request only"),
    # Under %agent replay an ACP agent runs live (it makes no model call of ours) and no
    # cassette answers its permission (docs/security.md): taken, as docs/acp-in-a-cell.md says.
    "acp": Rule(("--acp",), acp=None, over="an ACP agent runs one prompt, not a batch",
                python=_EDGE_ONLY),
    # ---- %%plan
    "answer": Rule(("--answer",), resume="it answers the first question only"),
    "option": Rule(("--option",), resume="it answers the first question only"),
    "auto_answer": Rule(("--auto-answer",)),  # with --over: batch()'s own auto_answer=
    # ---- the edge's own: the answer's variable, the batch flags
    "out": Rule(("--out",), acp=None, python=_EDGE_ONLY),
    "over": Rule(("--over",), python=_BATCH_IN_PYTHON, resume=_BATCH_ON_RESUME),
    **{name: Rule((flag,), cell=_BATCH, python=_BATCH_IN_PYTHON, resume=_BATCH_ON_RESUME)
       for name, flag in (("concurrency", "--concurrency"), ("expect", "--expect"),
                          ("match", "--match"), ("score", "--score"),
                          ("max_cost", "--max-cost"), ("max_items", "--max-items"),
                          ("rerun", "--rerun"), ("engine", "--engine"), ("judge", "--judge"),
                          ("judge_model", "--judge-model"))},
    # ---- set by the edge, not by a flag
    "shell": Rule(resume="a resumed run's notebook tools read the kernel that resumes it"),
    "origin": Rule(over="batch items supersede no question"),
    # ---- Python only (TurnOptions fields no flag sets)
    "listeners": Rule(resume="resume() takes its own listeners= (the card that asked draws "
                             "the rest)"),
    "store": Rule(over="the store is batch()'s own store=", resume="resume() takes its own store="),
    "client": Rule(resume="resume() takes its own client= (else the client the run was "
                          "suspended on, or its saved model's)"),  # a batch: its one model's
    "agent_model": Rule(over="set by the runtime", python="set by the runtime when it picks "
                                                          "the agent"),
    "auto_approve": Rule(),
    "is_aborted": Rule(over="the batch's stop aborts its items"),
    "on_end": Rule(over="the batch collects its items' results itself"),
    "on_superseded": Rule(over="batch items supersede no question",
                          resume="a resumed run supersedes no question"),
}
"""Option name -> its :class:`Rule` (docs/behaviour.md §1.1 prints this table)."""

NOT_OPTIONS = frozenset({"kind", "given"})
"""Fields of the cell's options record that are no option (what magic, which flags given)."""

_DEST_OF = {"--with": "with_vars"}
"""Flags whose parser destination is not their spelling's (``--with`` is a keyword)."""


def flag_dest(flag: str) -> str:
    """The parser destination of a long flag (``--no-history`` -> ``no_history``)."""
    return _DEST_OF.get(flag, flag[2:].replace("-", "_"))


_BY_DEST = {flag_dest(f): name for name, rule in RULES.items() for f in rule.flags}
_BY_FLAG = {f: name for name, rule in RULES.items() for f in rule.flags}


def rule_of_dest(dest: str) -> str | None:
    """The option a parser destination sets (``no_history`` -> ``history``), or ``None``."""
    return _BY_DEST.get(dest)


def refused_on(road: Road) -> dict[str, str]:
    """Option name -> why ``road`` refuses it (the options it refuses, in table order)."""
    out: dict[str, str] = {}
    for name, rule in RULES.items():
        reason: str | None = getattr(rule, road)
        if reason is not None:
            out[name] = reason
    return out


def acp_flags() -> list[str]:
    """The flags a ``--acp`` cell takes besides ``--acp`` (``--session``, ``--out``...)."""
    return [f for name, rule in RULES.items() if rule.acp is None and name != "acp"
            for f in rule.flags]


def refusal(road: Road, given: Mapping[str, str]) -> str | None:
    """The one line refusing the first of ``given`` (parser destination -> the flag as the
    line spelled it) that ``road`` refuses, else ``None``."""
    for dest, flag in given.items():
        name = _BY_DEST.get(dest)
        if name is None:
            continue
        reason: str | None = getattr(RULES[name], road)
        if road == "resume":  # the command takes no cell flag: why, carried or not
            return f"{flag} on %agent resume: {reason or RESUME_KEEPS}."
        if reason is None:
            continue
        if road == "cell":
            return f"{flag} {reason}."
        if road == "over":
            return f"{flag} with --over: {reason}; remove {flag}."
        if road == "acp":
            return (f"{flag} with --acp: {reason}; remove {flag} (--acp takes "
                    f"{_join(acp_flags())}).")
        return f"{flag} under %agent replay: {reason}."
    return None


def python_hint(name: str, accepted: Iterable[str]) -> str | None:
    """Why the keyword ``name`` is refused, when the table knows (``None``: taken, or unknown
    to it): the ``python`` column's reason, or the keyword a flag's name stands for
    (``schema=`` -> ``write output= (the cell's --schema)``)."""
    refused = RULES[name].python if name in RULES else None
    if refused is not None:  # the table wins over a field that exists (agent_model)
        return refused
    flag = "--" + name.replace("_", "-")
    meant = None if name in RULES else _BY_FLAG.get(flag)  # schema= -> output
    if meant is None:
        return None
    reason = RULES[meant].python
    if reason is not None:
        return reason
    return f"write {meant}= (the cell's {flag})" if meant in set(accepted) else None


def python_refusal(entry: str, names: Iterable[str], accepted: Iterable[str]) -> str | None:
    """The one line refusing the first keyword of ``names`` that the table's ``python`` column
    refuses or ``entry`` (``toolloop``...) does not take (``accepted``): the table's reason
    (:func:`python_hint`), else the options it takes."""
    taken = set(accepted)
    for name in names:
        hint = python_hint(name, taken)
        if hint is not None:
            return f"{name} is not an option of {entry}(): {hint}."
        if name not in taken:
            return f"{name} is not an option of {entry}() (its options: {_join(sorted(taken))})."
    return None


def _join(items: list[str]) -> str:
    return ", ".join(items[:-1]) + f" and {items[-1]}" if len(items) > 1 else "".join(items)


assert {f.name for f in fields(Rule)} - {"flags"} == set(ROADS)  # a road is a column
