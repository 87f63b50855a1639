"""The one options record of an agent cell: the flags of ``%%chat``, ``%%toolloop`` and
``%%plan``, read once into a :class:`CellOptions`.

A plain cell hands :meth:`CellOptions.entry_options` to ``chat()``/``toolloop()``/``plan()``;
a cell with ``--over`` hands :meth:`CellOptions.batch_options` to
:func:`jupyter_agent.batch.batch` (``batch_magic.py``). Both come from the same record, so a
flag reaches a batch item exactly as it reaches a plain cell, or the ``--over`` cell refuses it
by name in one line. Which road refuses which flag, and why, is the one table
``jupyter_agent/agents/option_rules.py`` (docs/behaviour.md §1.1); each road checks it once, at
its entry (:func:`check_road`). Whether a flag was *given*
is read from the parser itself (a value other than the flag's default), so a flag added to a
magic is covered without a list to update here.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, TypedDict

from IPython.core.error import UsageError

from ..agents.option_rules import Road, refusal, rule_of_dest

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

    from ..agents.run import Run
    from ..llm.protocol import ModelClient
    from ..runtime.agents import Agent

__all__ = ["CellKind", "CellOptions", "EntryOptions", "ItemOptions", "read_cell_options",
           "given_flags", "check_road", "load_cell"]

CellKind = Literal["chat", "toolloop", "plan"]


class ItemOptions(TypedDict, total=False):
    """The keyword options a cell hands every run it makes: :func:`jupyter_agent.batch.batch`
    carries them to each item of a ``--over`` cell. Each is a field of
    :class:`~jupyter_agent.agents.turn.options.TurnOptions` or a parameter of the entry point;
    an absent key: the entry point's default."""

    system: str | None
    temperature: float | None
    max_tokens: int | None
    knowledge: object
    """A notebook variable: documents or a retriever function (the turn checks which)."""
    quote_role: Literal["system", "user"]
    quote_prompt: str | None
    quote_template: str | None
    context: list[str] | None
    tools: list[str] | None
    agent: Agent | str | None
    max_rounds: int
    parallel: bool
    tool_choice: str | None
    answer: str | None
    option: int | None
    output: object
    """``--schema``'s notebook variable: a pydantic model class or a JSON schema dict (the
    turn checks which, and says so in one line when it is neither)."""
    schema_retries: int
    cache: bool
    skills: str
    approve: str
    shell: InteractiveShell | None


class EntryOptions(ItemOptions, total=False):
    """The keyword options of ``chat()``/``toolloop()``/``plan()`` for a plain cell: those of
    every item and the ones a batch sets per item itself (model, session, history...)."""

    model: str | None
    session: str | None
    stream: bool
    origin: str | None
    on_superseded: Callable[[list[str]], None] | None
    notebook: bool
    history: int
    auto_answer: Literal["first"] | None
    client: ModelClient
    on_end: Callable[[Run], None]
    """Told each part of the run that ends (``--out``: ``magics._out_setter``)."""

def check_road(road: Road, given: Mapping[str, str]) -> None:
    """Refuse, in one line, a flag of ``given`` that ``road`` (``cell``, ``over``, ``acp``)
    does not take, and while ``%agent replay`` replays a cassette, one that cannot be
    replayed: both from the one table (``agents/option_rules.py``)."""
    from ..base import config

    roads: list[Road] = [road]
    if config.settings.cassette_mode == "replay":
        roads.append("replay")
    for each in roads:
        message = refusal(each, given)
        if message is not None:
            raise UsageError(message)


def load_cell(kind: CellKind, *modules: str) -> None:
    """Import what a cell of ``kind`` runs: the agent layer (``agents/entries.py``: a fresh
    stack, its objects straight to the collector's oldest generation), then ``modules`` the
    same way; a kernel's first cell does it here, before its options import any of it. A
    missing module (a broken install, an extra not installed) is one line (``%%plan is not
    available: No module named ...``); any other import error keeps its traceback: it is a
    bug to report, not a step the user missed."""
    from ..agents.entries import entry_point
    from ..base.fresh_stack import preimport

    try:
        entry_point(kind)
        for name in modules:
            preimport(name)
    except ModuleNotFoundError as exc:
        raise UsageError(f"%%{kind} is not available: {exc}") from None


def given_flags(args: argparse.Namespace, parser: argparse.ArgumentParser) -> dict[str, str]:
    """The parser destinations the line set (a value other than the default) -> the flag's
    longest spelling (``{"max_tokens": "--max-tokens"}``)."""
    out: dict[str, str] = {}
    for action in parser._actions:
        if not action.option_strings or action.dest == "help":
            continue
        if getattr(args, action.dest, action.default) != action.default:
            out[action.dest] = max(action.option_strings, key=len)
    return out


@dataclass(frozen=True)
class CellOptions:
    """What the flags of one agent cell ask for (values read from the notebook already)."""

    kind: CellKind
    given: Mapping[str, str] = field(default_factory=dict)
    """The flags the line gave: parser destination -> flag (``--max-tokens``)."""
    model: str | None = None
    system: str | None = None
    session: str | None = None
    history: int | None = None
    """``None``: the default rounds of history (``0`` with ``--no-history``)."""
    temperature: float | None = None
    max_tokens: int | None = None
    knowledge: object = None
    quote_role: Literal["system", "user"] = "system"
    quote_prompt: str | None = None
    quote_template: str | None = None
    stream: bool = True
    context: list[str] | None = None
    """``--with``: notebook variables whose summaries go into the prompt."""
    cassette: Literal["record", "replay"] | None = None
    tools: list[str] | None = None
    max_rounds: int | None = None
    agent: Agent | str | None = None
    """An :class:`~jupyter_agent.runtime.agents.Agent` from the notebook, or an agent's name."""
    notebook: bool = False
    parallel: bool = False
    tool_choice: str | None = None
    answer: str | None = None
    option: int | None = None
    auto_answer: Literal["first"] | None = None
    output: object = None
    """``--schema NAME``: the notebook's model class or JSON schema dict (the run is typed)."""
    schema_retries: int | None = None
    """``--schema-retries N`` (needs ``--schema``); ``None``: the default."""
    cache: bool = False
    """``--cache``: answer a request identical to an earlier one from the answer cache."""
    skills: str | None = None
    """``--skills a,b``: skill folders (``%%toolloop``/``%%plan``)."""
    approve: str | None = None
    """``--approve bash,run_python``: tools the person approved for this cell (the entry
    point reads the names, as from ``approve=`` in Python)."""
    shell: InteractiveShell | None = None
    origin: str | None = None

    def refuse_batch_flags(self) -> None:
        """A cell without ``--over``: batch flags (the table's ``cell`` road) and several
        models are one-line errors."""
        check_road("cell", self.given)
        if self.model and "," in self.model:
            raise UsageError(f"Several models (--model {self.model}) need --over VAR: each "
                             "row runs on each model.")

    def _common(self, opts: ItemOptions) -> None:
        """Fill ``opts`` with what every run of the cell takes (a plain cell's, each item's)."""
        opts.update(ItemOptions(
            system=self.system, temperature=self.temperature, max_tokens=self.max_tokens,
            knowledge=self.knowledge, quote_prompt=self.quote_prompt, quote_template=self.quote_template,
            context=self.context))
        if self.quote_role != "system":  # the default left out: a script's batch omits it too
            opts["quote_role"] = self.quote_role
        if self.kind != "chat":
            opts["tools"], opts["agent"] = self.tools, self.agent
            if self.max_rounds is not None:
                opts["max_rounds"] = self.max_rounds
        if self.kind == "toolloop":
            opts["parallel"], opts["tool_choice"] = self.parallel, self.tool_choice
        if self.kind == "plan":
            opts["answer"], opts["option"] = self.answer, self.option
        if self.output is not None:
            opts["output"] = self.output
        if self.schema_retries is not None:
            opts["schema_retries"] = self.schema_retries
        if self.cache:
            opts["cache"] = True
        if self.skills is not None:
            opts["skills"] = self.skills
        if self.approve is not None:
            opts["approve"] = self.approve

    def entry_options(self, client: Callable[[Literal["record", "replay"], str | None], ModelClient],
                      *, on_superseded: Callable[[list[str]], None] | None = None,
                      default_session: str | None = None) -> EntryOptions:
        """Keyword options of ``chat()``/``toolloop()``/``plan()`` for a plain cell.

        ``client(mode, model)`` makes the record/replay client of ``--record``/``--replay``.
        """
        opts = EntryOptions()
        self._common(opts)
        opts.update(EntryOptions(
            shell=self.shell, model=self.model, session=self.session or default_session,
            stream=self.stream, origin=self.origin, on_superseded=on_superseded,
            notebook=self.notebook))
        if self.history is not None:
            opts["history"] = self.history
        if self.kind == "plan":
            opts["auto_answer"] = self.auto_answer
        if self.cassette is not None:
            opts["client"] = client(self.cassette, self.model)
        return opts

    def batch_options(self) -> ItemOptions:
        """Keyword options of :func:`jupyter_agent.batch.batch` for a ``--over`` cell (the
        batch's own flags and the models excepted: the batch edge passes those).

        Raises:
            UsageError: a flag a batch cannot carry (the table's ``over`` road), by name.
        """
        check_road("over", self.given)
        opts = ItemOptions()
        self._common(opts)
        if self.context:  # --with reads this kernel's variables (the thread engine only)
            opts["shell"] = self.shell
        return opts


def _text_var(ns: Mapping[str, object], name: str | None, flag: str) -> str | None:
    """A flag naming a notebook variable that holds a string (a template)."""
    if name is None:
        return None
    value = ns.get(name)
    if not isinstance(value, str):
        raise UsageError(f"{flag}: {name!r} is not a string variable in the notebook.")
    return value


def _agent(ns: Mapping[str, object], name: str | None) -> Agent | str | None:
    """``--agent``: a variable holding an Agent, or an agent's name."""
    if not name:
        return None
    from ..runtime.agents import Agent

    value = ns.get(name)
    return value if isinstance(value, Agent) else name


def read_cell_options(kind: CellKind, args: argparse.Namespace,
                      parser: argparse.ArgumentParser, *, ns: Mapping[str, object],
                      shell: InteractiveShell | None = None, origin: str | None = None) -> CellOptions:
    """The :class:`CellOptions` of a parsed magic line (notebook variables looked up now).

    Raises:
        UsageError: a flag naming a missing variable, ``--record`` with ``--replay``,
            ``--schema-retries`` without ``--schema``.
        TypeError: a parser destination the table of ``agents/option_rules.py`` does not know
            (a flag added to a magic without its row: a bug, caught by the tests).
    """
    given = given_flags(args, parser)
    unknown = sorted(d for d in given if rule_of_dest(d) is None)
    if unknown:  # a flag added to a magic without its row: it would be dropped on some road
        raise TypeError(f"cell flags without a row in agents/option_rules.py: {unknown}")
    output = None
    schema = getattr(args, "schema", None)
    if schema:
        if schema not in ns:
            raise UsageError(f"--schema: no variable named {schema!r}.")
        output = ns[schema]
    schema_retries = getattr(args, "schema_retries", None)
    if schema_retries is not None and not schema:
        raise UsageError("--schema-retries needs --schema NAME.")
    approve = getattr(args, "approve", None)
    knowledge = None
    if args.knowledge:
        if args.knowledge not in ns:
            raise UsageError(f"--knowledge: no variable named {args.knowledge!r}.")
        knowledge = ns[args.knowledge]
    if args.record and args.replay:
        raise UsageError("Give --record or --replay, not both.")
    cassette: Literal["record", "replay"] | None = (
        "record" if args.record else "replay" if args.replay else None)
    tools = getattr(args, "tools", None)
    return CellOptions(
        kind=kind, given=given, model=args.model, system=args.system, session=args.session,
        history=0 if args.no_history else args.history, temperature=args.temperature,
        max_tokens=args.max_tokens, knowledge=knowledge,
        quote_role=args.quote_role or "system",
        quote_prompt=_text_var(ns, args.quote_prompt, "--quote-prompt"),
        quote_template=_text_var(ns, args.quote_template, "--quote-template"),
        stream=not args.no_stream,
        context=args.with_vars.split(",") if args.with_vars else None, cassette=cassette,
        tools=[t.strip() for t in tools.split(",") if t.strip()] if tools else None,
        max_rounds=getattr(args, "max_rounds", None), agent=_agent(ns, getattr(args, "agent", None)),
        notebook=bool(getattr(args, "notebook", False)),
        parallel=bool(getattr(args, "parallel", False)),
        tool_choice=getattr(args, "tool_choice", None), answer=getattr(args, "answer", None),
        option=getattr(args, "option", None), auto_answer=getattr(args, "auto_answer", None),
        output=output, schema_retries=schema_retries, cache=bool(getattr(args, "cache", False)),
        skills=getattr(args, "skills", None),
        approve=approve, shell=shell, origin=origin)
