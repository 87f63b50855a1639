"""``%agent`` subcommands for sessions and agents .

``sessions``, ``session NAME``, ``new [NAME]``, ``reset``, ``usage``, ``history``,
``export PATH.ipynb`` and ``agents``. Each prints a short report; none needs a model key.
"""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING

from ...base.errors import MagicUsageError
from ...base.flags import integer, text
from ._table import CommandTable

if TYPE_CHECKING:
    from ...session.store import Store
    from ._table import Subparsers

__all__ = ["TABLE"]

TABLE = CommandTable()

PAGE = 50
"""Sessions (and history messages) shown per page: a store can hold tens of thousands."""


@TABLE.parsers
def _parsers(sub: Subparsers) -> None:
    # Every value is checked where it is parsed: an empty name or a count below 1 is a
    # one-line error, never a silent "use the default".
    s = sub.add_parser("sessions")
    s.add_argument("--group", type=text)
    s.add_argument("--page", type=integer(1), default=1,
                   help=f"Page P of {PAGE} sessions, most recently updated first.")
    s = sub.add_parser("session")
    s.add_argument("name", nargs="?", type=text)
    s.add_argument("--group", type=text)
    s.add_argument("--agent", type=text)
    s.add_argument("--model", type=text)
    s.add_argument("--unbind", action="store_true")
    s = sub.add_parser("new")
    s.add_argument("name", nargs="?", type=text)
    s.add_argument("--group", type=text)
    s = sub.add_parser("reset")
    s.add_argument("name", nargs="?", type=text)
    s = sub.add_parser("usage")
    s.add_argument("name", nargs="?", type=text)
    s = sub.add_parser("history")
    s.add_argument("name", nargs="?", type=text)
    s.add_argument("-n", "--last", type=integer(1), help="Only the last N messages.")
    s.add_argument("--page", type=integer(1),
                   help=f"Page P, counted from the newest, of N (default {PAGE}) messages.")
    s = sub.add_parser("export")
    s.add_argument("path", type=text)
    s.add_argument("--session", type=text)
    sub.add_parser("agents")


def _store() -> Store:
    from ...session import default_store

    return default_store()


def _current() -> str:
    from ...runtime.sessions import current_session

    return current_session()


def _when(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(t))


@TABLE.command("sessions", f"List sessions (* marks the current one), {PAGE} a page, newest "
                           "first: sessions [--group G] [--page P].")
def _cmd_sessions(args: argparse.Namespace, ns: dict[str, object]) -> None:
    store = _store()
    first = (args.page - 1) * PAGE
    rows = store.list_sessions(args.group, limit=PAGE, offset=first)
    current = _current()
    if not rows:
        total = store.count_sessions(args.group) if args.page > 1 else 0
        print(f"No sessions on page {args.page} (there are {total})." if total
              else f"No sessions yet; the current session is {current!r}.")
        return
    for r in rows:
        mark = "*" if r.name == current else " "
        extra = ", ".join(x for x in (f"group {r.group}" if r.group else "",
                                      f"agent {r.agent}" if r.agent else "",
                                      f"model {r.model}" if r.model else "") if x)
        print(f"{mark} {r.name:<24} {_when(r.updated)}" + (f"  ({extra})" if extra else ""))
    if len(rows) == PAGE or args.page > 1:
        total = store.count_sessions(args.group)
        more = (f"; next: %agent sessions{' --group ' + args.group if args.group else ''}"
                f" --page {args.page + 1}") if first + len(rows) < total else ""
        print(f"(sessions {first + 1}-{first + len(rows)} of {total:,}{more})")


@TABLE.command("session", "Switch the current session (created if new): session NAME [--agent A] "
                    "[--model M] [--unbind]; without NAME, show it.")
def _cmd_session(args: argparse.Namespace, ns: dict[str, object]) -> None:
    from ...runtime.agents import Agent, resolve_agent
    from ...runtime.sessions import set_current_session

    store = _store()
    name = args.name or _current()
    record = store.ensure_session(name, args.group)
    if args.name:
        set_current_session(name)
    if args.unbind:
        record = store.bind_agent(name, None)
        record = store.bind_model(name, None)
    if args.agent:
        value = ns.get(args.agent)
        agent = value if isinstance(value, Agent) else resolve_agent(args.agent)
        assert agent is not None  # resolve_agent gives None only for None, and args.agent is set
        record = store.bind_agent(name, agent.name, agent.workspace)
    if args.model:
        record = store.bind_model(name, args.model)
    turns = len(store.list_turns(name))
    print(f"session: {name}" + (f" (group {record.group})" if record.group else "")
          + f", {turns} turns; agent: {record.agent or 'default'}; workspace: "
          f"{record.workspace or 'current directory'}; model: {record.model or 'not bound'}")


@TABLE.command("new", "Start a new session and make it current: new [NAME] [--group G].")
def _cmd_new(args: argparse.Namespace, ns: dict[str, object]) -> None:
    from ...runtime.sessions import new_session_name, set_current_session

    store = _store()
    name = args.name or new_session_name(store)
    if args.name and store.get_session(name) is not None:
        raise MagicUsageError(f"%agent new: session {name!r} exists; use `%agent session {name}`.")
    store.ensure_session(name, args.group)
    set_current_session(name)
    print(f"New session {name!r}" + (f" in group {args.group!r}" if args.group else "")
          + " is now current.")


@TABLE.command("reset", "Forget the history of the current session (or NAME): reset [NAME].")
def _cmd_reset(args: argparse.Namespace, ns: dict[str, object]) -> None:
    name = args.name or _current()
    store = _store()
    if store.get_session(name) is None:
        raise MagicUsageError(f"%agent reset: no session {name!r}.")
    store.reset_session(name)
    print(f"Session {name!r}: history and turns cleared (bindings and permissions kept).")


@TABLE.command("usage", "Tokens, cost and time of the current session (or NAME): usage [NAME].")
def _cmd_usage(args: argparse.Namespace, ns: dict[str, object]) -> None:
    name = args.name or _current()
    u = _store().usage(name)
    print(f"session {name}: {u.turns} turns, {u.input_tokens:,} input + {u.output_tokens:,} "
          f"output tokens, cost {u.cost:.6f}, {u.seconds:.1f} s")
    for model, m in u.by_model.items():
        print(f"  {model or '(unknown model)'}: {int(m['turns'])} turns, "
              f"{int(m['input_tokens']):,} + {int(m['output_tokens']):,} tokens, "
              f"cost {m['cost']:.6f}")


def _short(text: str, n: int = 200) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= n else text[: n - 1] + "…"


@TABLE.command("history", f"The conversation of the current session (or NAME), the last {PAGE} "
                          "messages: history [NAME] [-n N] [--page P].")
def _cmd_history(args: argparse.Namespace, ns: dict[str, object]) -> None:
    name = args.name or _current()
    size = args.last or PAGE
    page = args.page or 1
    # One more than the pages asked for: whether older messages remain (read from the end).
    entries = _store().session_transcript(name, last=size * page + 1)
    older = len(entries) > size * page
    end = len(entries) - size * (page - 1)
    entries = entries[max(0, end - size):max(0, end)]
    if not entries:
        print(f"Session {name!r} has no messages"
              + (f" on page {page}." if page > 1 else "."))
    for e in entries:
        if e["role"] == "tool":
            flag = " (error)" if e.get("tool_error") else ""
            print(f"[{e['seq']}]   <- {e.get('tool_name') or 'tool'}{flag}: {_short(e['text'])}")
            continue
        if e["text"]:
            print(f"[{e['seq']}] {e['role']}: {_short(e['text'], 400)}")
        for c in e["tool_calls"]:
            print(f"[{e['seq']}]   -> {c['name']}({_short(c['arguments'], 120)})")
    if older and (args.page or not args.last):  # `-n N` alone: just those, as before
        size_flag = f" -n {args.last}" if args.last else ""
        print(f"(older messages: %agent history{' ' + args.name if args.name else ''}"
              f"{size_flag} --page {page + 1})")


@TABLE.command("export", "Write a session as a notebook: export PATH.ipynb [--session NAME].")
def _cmd_export(args: argparse.Namespace, ns: dict[str, object]) -> None:
    from ...view.notebook_export import export_session

    path = export_session(args.path, args.session or _current(), store=_store())
    print(f"Exported session {args.session or _current()!r} to {path}")


@TABLE.command("agents", "List the agents defined in this kernel.")
def _cmd_agents(args: argparse.Namespace, ns: dict[str, object]) -> None:
    from ...runtime.agents import list_agents

    agents = list_agents()
    if not agents:
        print("No agents defined. Define one: Agent('name', instructions=..., tools=[...]).")
    for a in agents:
        parts = [f"model {a.model}" if a.model else "", f"tools {', '.join(a.tool_names())}"
                 if a.tools is not None else "tools: built-ins, MCP, every @tool"
                 if a.workspace else "tools: every @tool",
                 f"workspace {a.workspace}" if a.workspace else "",
                 f"intents {', '.join(a.intents)}" if a.intents else "",
                 "read-only" if a.read_only else ""]
        head = f"{a.name}: {a.description}" if a.description else a.name
        print(f"{head}  ({'; '.join(p for p in parts if p)})")
