"""``%agent`` subcommands about runs and the model: ``pending``, ``resume``, ``model``.

``help`` is assembled in ``commands/__init__.py`` from every table.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ...base.errors import MagicUsageError, ResumeError
from ...base.flags import integer, text
from ._table import CommandTable

if TYPE_CHECKING:
    from ...agents.resume import Answer
    from ...agents.run import Run
    from ...base.events import BaseEvent
    from ...ui.live import LiveDisplay
    from ._table import Subparsers

__all__ = ["TABLE"]

TABLE = CommandTable()


@TABLE.parsers
def _parsers(sub: Subparsers) -> None:
    sub.add_parser("help")
    r = sub.add_parser("resume")
    r.add_argument("run_id", nargs="?", type=text)
    g = r.add_mutually_exclusive_group()
    g.add_argument("--answer", type=text)
    g.add_argument("--option", type=integer(1))
    g.add_argument("--dismiss", action="store_true")
    _cell_flags(r)
    pend = sub.add_parser("pending")
    pend.add_argument("--session", type=text)
    runs = sub.add_parser("runs")
    runs.add_argument("--session", type=text)
    runs.add_argument("-n", "--last", type=integer(1), default=20)
    m = sub.add_parser("model")
    m.add_argument("name", nargs="?", type=text)


def _cell_flags(parser: argparse.ArgumentParser) -> None:
    """The cell flags, known to ``resume`` only to refuse each by name: a resumed run keeps
    what its cell gave it (the ``resume`` road of ``agents/option_rules.py``)."""
    from ...agents.option_rules import RULES, flag_dest

    own = {"--answer", "--option"}
    for rule in RULES.values():
        for flag in rule.flags:
            if flag not in own:
                parser.add_argument(flag, dest=f"cell_{flag_dest(flag)}", nargs="?", const="",
                                    default=None, help=argparse.SUPPRESS)


def _refuse_cell_flags(args: argparse.Namespace) -> None:
    """One line for the first cell flag the ``resume`` line gave (from the table)."""
    from ...agents.option_rules import RULES, flag_dest, refusal

    given = {flag_dest(f): f for rule in RULES.values() for f in rule.flags
             if getattr(args, f"cell_{flag_dest(f)}", None) is not None}
    message = refusal("resume", given)
    if message is not None:
        raise MagicUsageError(message)


@TABLE.command("pending", "List runs waiting for an answer or an approval.")
def _cmd_pending(args: argparse.Namespace, ns: dict[str, object]) -> None:
    from ...agents.pending import card_of
    from ...session import default_store

    rows = default_store().list_pending(args.session)
    if not rows:
        print("No run is waiting for an answer.")
    for r in rows:
        card = card_of(r.pending)
        if card is None:
            print(f"{r.run_id} ({r.kind}, session {r.session}): (its saved state cannot be read "
                  "by this version)")
            continue
        opts = " | ".join(f"{i}. {o}" for i, o in enumerate(card.options, start=1))
        print(f"{r.run_id} ({r.kind}, session {r.session}): {card.question}\n    {opts}")


@TABLE.command("runs", "The latest runs and how they ended: runs [--session NAME] [-n N].")
def _cmd_runs(args: argparse.Namespace, ns: dict[str, object]) -> None:
    import time

    from ...session import default_store

    rows = default_store().list_runs(args.session)[-args.last:]
    if not rows:
        print("No runs yet.")
    for r in rows:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(r.created))
        # A run whose process died is "interrupted"; the store found it when it was opened.
        why = f": {r.error}" if r.error and r.status in ("error", "interrupted") else ""
        print(f"{r.run_id} {when} {r.kind} (session {r.session}) {r.status}{why}")


def _newest_pending() -> str | None:
    """The newest waiting run's id (what ``%agent resume`` without an id answers), so its
    original card is found and updated too."""
    from ...session import default_store

    store = default_store()
    waiting = store.list_pending() if store is not None else []
    return waiting[-1].run_id if waiting else None


def _answered_already(run_id: str | None, ns: dict[str, object]) -> Run | None:
    """The notebook's last run when it is the one meant (``run_id`` or none given), no longer
    waits, and its question was answered (by a click); else None."""
    from ...agents.run import Run

    run = ns.get("_agent_run")
    if not isinstance(run, Run) or (run_id and run.run_id != run_id) or run.status == "ask":
        return None
    answered = any(getattr(e, "type", "") == "ask_answered" for e in run.events)
    return run if answered else None


@TABLE.command("resume", "Answer a waiting run: RUN_ID --option N | --answer TEXT | --dismiss.")
def _cmd_resume(args: argparse.Namespace, ns: dict[str, object]) -> None:
    from ...agents.resume import Answer, resume
    from ...agents.run import Run
    from ...ui.live import LiveDisplay, displays, show_hint

    _refuse_cell_flags(args)
    if args.option is not None:
        answer = Answer("option", option_index=args.option)
    elif args.answer is not None:
        answer = Answer("other", text=args.answer)
    elif args.dismiss:
        answer = Answer("dismissed")
    else:
        raise MagicUsageError("%agent resume: give --option N, --answer TEXT or --dismiss.")
    run_id = args.run_id or _newest_pending()
    live = displays.get(run_id) if run_id else None
    run_obj = live.run if live is not None and isinstance(live.run, Run) else None
    holder: dict[str, LiveDisplay] = {}

    def listener(event: BaseEvent) -> None:
        if live is not None:
            live.on_event(event)
            return
        if "display" not in holder:
            from ...agents.run import last_run

            r = last_run()
            if r is None:
                return
            holder["display"] = LiveDisplay(r)
        holder["display"].on_event(event)

    try:
        run = resume(run_id, answer, run=run_obj, listeners=[listener])
    except ResumeError:
        done = _answered_already(args.run_id, ns)
        if done is None:
            raise
        # The card was clicked before this cell ran (Run All of a tutorial): not a failure.
        print(f"Run {done.run_id}'s question was already answered on its card; nothing to "
              "resume.")
        return
    ns["_agent_run"] = run
    # This cell's own output: headless (nbconvert, a saved notebook) the card it answered is
    # elsewhere, and an empty output here reads as "nothing happened".
    print(resumed_line(run, answer, in_its_cell=live is not None))
    if run.status == "ask":
        try:
            from ...agents.plan.agent import resume_hint

            show_hint(run, resume_hint(run))
        except ImportError:
            pass


_ENDINGS = {"done": "it finished", "ask": "it waits for another answer",
            "max_rounds": "it stopped at the round limit", "aborted": "it was stopped",
            "incomplete": "it ended without an answer"}


def resumed_line(run: Run, answer: Answer, *, in_its_cell: bool) -> str:
    """One line: which run was resumed, with what answer, and how it ended (``in_its_cell``:
    its card is in the cell that asked, else it was drawn above this line)."""
    given = {"option": f"option {answer.option_index}", "other": "your answer",
             "dismissed": "a dismissal"}.get(answer.how, answer.how)
    ending = _ENDINGS.get(run.status) or (
        f"it failed: {run.error}" if run.error else f"it ended ({run.status})")
    where = "its card, in the cell that asked, shows the rest" if in_its_cell else "card above"
    return f"Resumed run {run.run_id} with {given}: {ending} ({where})."


@TABLE.command("model", "Show the active model, or set it for the following cells: model [NAME].")
def _cmd_model(args: argparse.Namespace, ns: dict[str, object]) -> None:
    from ...base import config
    from ...clients.embedded import profile_for
    from ...clients.factory import resolve_model

    if args.name:
        config.settings.active_model = args.name
    name = resolve_model().name
    prof = profile_for(name)
    print(f"model: {name} (id {prof.model}, context {prof.max_context:,} tokens)")
