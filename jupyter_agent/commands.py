"""``%agent SUBCOMMAND``: one small function per subcommand, parsed with argparse.

Add a subcommand by writing ``_cmd_<name>(args, ns)`` and its parser in ``_parser()``.
"""

from __future__ import annotations

import argparse
import shlex
from typing import Any, Callable

from .errors import MagicUsageError

__all__ = ["run_command", "COMMANDS"]

Command = Callable[[argparse.Namespace, dict[str, Any]], Any]
COMMANDS: dict[str, tuple[Command, str]] = {}


def command(name: str, help: str) -> Callable[[Command], Command]:
    """Register ``fn`` as ``%agent name``."""

    def wrap(fn: Command) -> Command:
        COMMANDS[name] = (fn, help)
        return fn

    return wrap


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, no exit
        raise MagicUsageError(f"%agent: {message} (see `%agent help`)")


def _parser() -> _Parser:
    p = _Parser(prog="%agent", add_help=False)
    sub = p.add_subparsers(dest="cmd", parser_class=_Parser)
    sub.add_parser("help")
    r = sub.add_parser("resume")
    r.add_argument("run_id", nargs="?")
    g = r.add_mutually_exclusive_group()
    g.add_argument("--answer")
    g.add_argument("--option", type=int)
    g.add_argument("--dismiss", action="store_true")
    pend = sub.add_parser("pending")
    pend.add_argument("--session")
    runs = sub.add_parser("runs")
    runs.add_argument("--session")
    runs.add_argument("-n", "--last", type=int, default=20)
    m = sub.add_parser("model")
    m.add_argument("name", nargs="?")
    for extra in _EXTRA_PARSERS:
        extra(sub)
    return p


_EXTRA_PARSERS: list[Callable[[Any], None]] = []


def add_parser(fn: Callable[[Any], None]) -> Callable[[Any], None]:
    """Register a function that adds subcommand parsers (used by other modules)."""
    _EXTRA_PARSERS.append(fn)
    return fn


def run_command(line: str, ns: dict[str, Any]) -> Any:
    """Parse and run one ``%agent`` line."""
    _load_extensions()
    try:
        argv = shlex.split(line)
    except ValueError as exc:
        raise MagicUsageError(f"%agent: {exc}") from None
    if not argv:
        argv = ["help"]
    args = _parser().parse_args(argv)
    entry = COMMANDS.get(args.cmd)
    if entry is None:
        raise MagicUsageError(f"%agent: unknown command {argv[0]!r} (see `%agent help`)")
    return entry[0](args, ns)


def _load_extensions() -> None:
    import importlib

    for mod in ("jupyter_agent.runtime.commands", "jupyter_agent.replay.commands"):
        try:
            importlib.import_module(mod)
        except ImportError:
            pass


@command("help", "List the %agent commands.")
def _cmd_help(args: argparse.Namespace, ns: dict[str, Any]) -> None:
    lines = ["%agent commands:"] + [f"  {name:<10} {h}" for name, (_, h) in sorted(COMMANDS.items())]
    print("\n".join(lines))


@command("pending", "List runs waiting for an answer or an approval.")
def _cmd_pending(args: argparse.Namespace, ns: dict[str, Any]) -> None:
    from .session import default_store

    rows = default_store().list_pending(args.session)
    if not rows:
        print("No run is waiting for an answer.")
    for r in rows:
        ask = (r.pending or {}).get("ask") or {}
        opts = " | ".join(f"{i}. {o}" for i, o in enumerate(ask.get("options") or [], start=1))
        print(f"{r.run_id} ({r.kind}, session {r.session}): {ask.get('question', '')}\n    {opts}")


@command("runs", "The latest runs and how they ended: runs [--session NAME] [-n N].")
def _cmd_runs(args: argparse.Namespace, ns: dict[str, Any]) -> None:
    import time

    from .session import default_store

    rows = default_store().list_runs(args.session)[-max(1, args.last):]
    if not rows:
        print("No runs yet.")
    for r in rows:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(r.created))
        # A run whose process died is "interrupted"; the store found it when it was opened.
        why = f": {r.error}" if r.error and r.status in ("error", "interrupted") else ""
        print(f"{r.run_id} {when} {r.kind} (session {r.session}) {r.status}{why}")


@command("resume", "Answer a waiting run: RUN_ID --option N | --answer TEXT | --dismiss.")
def _cmd_resume(args: argparse.Namespace, ns: dict[str, Any]) -> None:
    from .agents.resume import Answer, resume
    from .ui.live import LiveDisplay, displays

    if args.option is not None:
        answer = Answer("option", option_index=args.option)
    elif args.answer is not None:
        answer = Answer("other", text=args.answer)
    elif args.dismiss:
        answer = Answer("dismissed")
    else:
        raise MagicUsageError("%agent resume: give --option N, --answer TEXT or --dismiss.")
    live = displays.get(args.run_id) if args.run_id else None
    run_obj = live.run if live is not None else None
    holder: dict[str, Any] = {}

    def listener(event: Any) -> None:
        if live is not None:
            live.on_event(event)
            return
        if "display" not in holder:
            from .agents.run import last_run

            r = last_run()
            if r is None:
                return
            holder["display"] = LiveDisplay(r)
        holder["display"].on_event(event)

    run = resume(args.run_id, answer, run=run_obj, listeners=[listener])
    ns["_agent_run"] = run
    if run.status == "ask":
        try:
            from .agents.plan.agent import resume_hint
            from .magics import _show_hint

            _show_hint(run, resume_hint(run))
        except ImportError:
            pass


@command("model", "Show the active model, or set it for the following cells: model [NAME].")
def _cmd_model(args: argparse.Namespace, ns: dict[str, Any]) -> None:
    from .config import choose_model, settings
    from .llm.profiles import resolve_profile

    if args.name:
        settings.active_model = args.name
    name = choose_model()
    prof = resolve_profile(name)
    print(f"model: {name} (id {prof.model}, context {prof.max_context:,} tokens)")
