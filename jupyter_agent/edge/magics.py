"""The Jupyter edge: ``%%chat``, ``%%toolloop``, ``%%plan`` and ``%agent``.

This module only parses arguments, interpolates the cell, calls the agent layer and hands its
events to the live display. Errors a user can cause become one ``UsageError`` line.
"""

from __future__ import annotations

import argparse
import string
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class
from traitlets import Bool, Float, Int, List, Unicode, observe

from ..base import flags
from ..base.errors import JupyterAgentError, ResumeError
from ..base.flags import usage_message
from ..base.jsontypes import JSONObject, as_list, int_field, object_field
from .batch_magic import batch_arguments, run_batch_cell
from .cell_options import (
    CellKind,
    CellOptions,
    EntryOptions,
    check_road,
    given_flags,
    load_cell,
    read_cell_options,
)
from .click_gate import GATE
from .magic_args import F, argument, cell_magic, magic_arguments, parse_argstring

if TYPE_CHECKING:
    from IPython.core.interactiveshell import ExecutionInfo, InteractiveShell
    from traitlets.utils.bunch import Bunch

    from ..agents.run import Run
    from ..base.events import BaseEvent
    from ..llm.protocol import ModelClient
    from ..ui.live import LiveDisplay

    Listener = Callable[[BaseEvent], None]

__all__ = ["AgentMagics", "interpolate", "cell_flags_help"]

_MASK = "********"
_SYNCED = ("model", "api_key", "base_url", "max_retries", "retry_base_delay", "fallback_models",
           "request_deadline", "read_timeout", "cache")
_EMPTY_CELL = {"chat": "The cell is empty: write the message to send below %%chat.",
               "toolloop": "The cell is empty: write the task below %%toolloop.",
               "plan": "The cell is empty: write the task below %%plan."}


def interpolate(text: str, namespace: Mapping[str, object]) -> str:
    """Fill ``{expr}`` fields from the notebook namespace (``{{``/``}}`` for literal braces)."""
    from ..base.template import prompt_fields

    formatter = string.Formatter()
    try:
        fields = prompt_fields(text, "the cell")  # the same rules as a --over template
    except JupyterAgentError as exc:
        raise UsageError(str(exc)) from None
    for root in fields:
        if root not in namespace:
            raise UsageError(f"Unknown variable {{{root}}} in the cell: define it, or write "
                             "{{ and }} for literal braces.")
    from ..base.secrets import filled_in_secret, mask

    try:
        filled = formatter.vformat(text, (), namespace)
    except Exception as exc:  # a bad index or attribute inside a field (its text may hold a key)
        raise UsageError(f"Could not fill the cell's {{...}} fields: {mask(str(exc))}") from None
    if filled_in_secret(text, filled):
        raise UsageError("A {field} of the cell filled in a secret (a key or token the kernel "
                         "knows, e.g. from {os.environ}): it is never put into a prompt.")
    return filled


def _shared_arguments(fn: F) -> F:
    """Options every agent magic takes (applied below ``@magic_arguments``)."""
    for decorator in reversed([
        argument("-m", "--model", type=flags.text,
                 help="Model or profile name for this cell."),
        argument("-s", "--system", type=flags.text, help="Extra system prompt text."),
        argument("-o", "--out", type=flags.identifier,
                 help="Store the answer text in this notebook variable (with --over: the "
                      "results table)."),
        argument("--session", type=flags.text,
                 help="Session whose history is used (default: the current session, see "
                      "%%agent session)."),
        argument("--history", type=flags.integer(0),
                 help="Rounds of history to send (default 6; 0 sends none)."),
        argument("--no-history", action="store_true", help="Send no history."),
        argument("--temperature", type=flags.number(0, 2),
                 help="Sampling temperature, 0 to 2 (clamped to the model's range)."),
        argument("--max-tokens", type=flags.integer(1), help="Cap on the answer's tokens."),
        argument("-k", "--knowledge", type=flags.text,
                 help="Variable holding documents or a retriever function."),
        argument("--quote-role", type=flags.text, choices=["system", "user"],
                 help="With --knowledge: put the knowledge in the system prompt (default) or "
                      "in the user message."),
        argument("--quote-prompt", type=flags.identifier,
                 help="With --knowledge: variable holding the knowledge prompt ({{quote}}, "
                      "and {{question}} for the user role)."),
        argument("--quote-template", type=flags.identifier,
                 help="With --knowledge: variable holding the template of one item ({{q}}, "
                      "{{a}}, {{source}}...)."),
        argument("--no-stream", action="store_true", help="Wait for the whole answer."),
        argument("--with", dest="with_vars", type=flags.variable_list,
                 help="Notebook variables whose summaries go into the prompt (a,b)."),
        argument("--record", action="store_true",
                 help="Record this cell's model calls into the cassette (see %%agent record)."),
        argument("--replay", action="store_true",
                 help="Replay this cell's model calls from the cassette: no key needed."),
        argument("--schema", type=flags.identifier,
                 help="Typed answer: a variable holding a pydantic model class or a JSON "
                      "schema; --out then stores the instance (with --over: typed columns)."),
        argument("--schema-retries", type=flags.integer(0),
                 help="With --schema: times an invalid answer is sent back (default 2)."),
        argument("--cache", action="store_true",
                 help="Answer identical requests from the answer cache (see %%agent cache)."),
    ]):
        fn = decorator(fn)
    return fn


def _tool_arguments(fn: F) -> F:
    for decorator in reversed([
        argument("-t", "--tools", type=flags.name_list,
                 help="Comma-separated tool names (default: the agent's; an agent with a "
                      "workspace: built-ins, MCP and @tool functions; else every @tool)."),
        argument("--max-rounds", type=flags.integer(1),
                 help="Model requests before the final answer (1 or more)."),
        argument("--agent", type=flags.text,
                 help="Named agent profile (or a variable holding an Agent)."),
        argument("--notebook", action="store_true",
                 help="Offer the notebook tools: variables, run_python, cells, insert_cell."),
        argument("--skills", type=flags.text,
                 help="Skill folders (a folder with SKILL.md, or a folder of them; a,b): "
                      "names and descriptions in the prompt, read with read_skill."),
        argument("--approve", type=flags.name_list,
                 help="Tools you approve for this cell (bash,run_python): their calls run "
                      "without a card."),
    ]):
        fn = decorator(fn)
    return fn


@magics_class
class AgentMagics(Magics):
    """Agent cell magics. Configure with ``%config AgentMagics.<name> = value``."""

    model = Unicode("", help="Default model when neither --model nor JUPYTER_AGENT_MODEL is set.").tag(config=True)
    api_key = Unicode("", help="API key (kept out of outputs; prefer OPENAI_API_KEY).").tag(config=True)
    base_url = Unicode("", help="OpenAI-compatible base URL (else OPENAI_BASE_URL).").tag(config=True)
    max_retries = Int(3, help="Retries of 429/5xx/connection errors.").tag(config=True)
    retry_base_delay = Float(0.5, help="First retry delay in seconds (doubles each time).").tag(config=True)
    request_deadline = Float(900.0, min=1.0, help="Seconds one model call may take in all (retries included).").tag(config=True)
    read_timeout = Float(600.0, min=1.0, help="Seconds one network read of a model call may wait (then it is retried).").tag(config=True)
    widgets = Bool(True, help="Show runs as live widgets (else markdown only).").tag(config=True)
    fallback_models = List(Unicode(), help="Profiles to fail over to, in order.").tag(config=True)
    cache = Bool(False, help="Answer identical requests from the on-disk answer cache (see %agent cache).").tag(config=True)

    def __init__(self, shell: InteractiveShell | None = None, **kwargs: object) -> None:
        super().__init__(shell=shell, **kwargs)
        self._cell_id: str | None = None
        events = getattr(shell, "events", None)
        if events is not None:
            # JupyterLab and Notebook 7 name the cell being run (IPython 8 hands its id to
            # pre_run_cell): a re-run of a cell replaces the question its last run left waiting.
            events.register("pre_run_cell", self._on_pre_run_cell)
            # A click on a waiting card is applied only when no cell runs (click_gate.py).
            events.register("pre_run_cell", GATE.cell_started)
            events.register("post_run_cell", GATE.cell_ended)
        # Only traits set in a config file need copying now; the defaults match the settings'.
        # Skipping the copy keeps `%load_ext` from importing pydantic and the model layer.
        if any(getattr(self, n) != self.trait_defaults(n) for n in _SYNCED):
            self._sync_settings()

    @observe(*_SYNCED)
    def _on_config(self, change: Bunch) -> None:
        from ..base import config

        if change["name"] == "api_key" and change["new"] not in ("", _MASK):
            config.settings.api_key = change["new"]
            # Never keep the key on the trait: `%config AgentMagics` would print it.
            self.api_key = _MASK
        self._sync_settings()

    def _sync_settings(self) -> None:
        from ..base import config

        s = config.settings
        s.model = self.model or None
        s.base_url = self.base_url or None
        s.max_retries = self.max_retries
        s.retry_base_delay = self.retry_base_delay
        s.request_deadline = self.request_deadline
        s.timeout = self.read_timeout
        s.fallback_models = list(self.fallback_models)
        s.cache = self.cache
        from ..clients.factory import clear_client_cache

        clear_client_cache()

    def _on_pre_run_cell(self, info: ExecutionInfo | None = None) -> None:
        cell_id = getattr(info, "cell_id", None)
        self._cell_id = cell_id if isinstance(cell_id, str) and cell_id else None

    def _origin(self) -> str | None:
        """Where this cell's run starts: ``cell:<id>`` when the front end named the cell."""
        return f"cell:{self._cell_id}" if self._cell_id else None

    # ---------------------------------------------------------------- helpers
    def namespace(self) -> dict[str, object]:
        """The notebook's variables (an empty dict without a shell)."""
        return self.shell.user_ns if self.shell is not None else {}

    def cell_options(self, kind: CellKind, args: argparse.Namespace) -> CellOptions:
        """The options record of a parsed ``%%chat``/``%%toolloop``/``%%plan`` line: the same
        record for a plain cell and for ``--over`` (``jupyter_agent/edge/cell_options.py``)."""
        return read_cell_options(kind, args, magic_parser(kind), ns=self.namespace(), shell=self.shell,
                                 origin=self._origin())

    def cell_prompt(self, cell: str, magic: str) -> str:
        """The cell's text with its ``{expr}`` fields filled (one line for an empty cell)."""
        if not cell or not cell.strip():
            raise UsageError("The cell is empty: write your message below the magic line.")
        prompt = interpolate(cell.strip(), self.namespace())
        if not prompt.strip():  # every {field} filled in empty
            raise UsageError(_EMPTY_CELL[magic])
        return prompt

    def _entry(self, kind: CellKind, args: argparse.Namespace, cell: str
               ) -> tuple[str, EntryOptions]:
        """A plain cell's prompt and the keyword options of its entry point."""
        load_cell(kind, "jupyter_agent.ui.live")
        from ..base import config

        options = self.cell_options(kind, args)
        options.refuse_batch_flags()
        prompt = self.cell_prompt(cell, kind)
        try:
            opts = options.entry_options(_cell_client, on_superseded=_close_superseded,
                                         default_session=config.settings.session)
        except JupyterAgentError as exc:
            raise UsageError(usage_message(exc)) from None
        if args.out:
            opts["on_end"] = _out_setter(self.namespace(), args.out, typed=bool(args.schema))
        return prompt, opts

    def _run(self, start: Callable[[list[Listener]], Run]) -> None:
        """Start a run with a live display; map user errors to one line."""
        from ..ui.live import LiveDisplay

        holder: dict[str, LiveDisplay] = {}

        def listener(event: BaseEvent) -> None:
            # The display opens on run_started (see _Starter), before any other event.
            if "display" in holder:
                holder["display"].on_event(event)

        ns = self.namespace()

        def on_start(run: Run) -> None:
            holder["display"] = LiveDisplay(run, widgets=self.widgets,
                                            on_answer=lambda msg: GATE.apply(
                                                lambda: _on_click(run, msg)),
                                            on_decide=lambda msg: GATE.apply(
                                                lambda: _on_decide(run, msg)))

        try:
            run = start([_Starter(on_start, listener)])
        except JupyterAgentError as exc:
            raise UsageError(usage_message(exc)) from None
        ns["_agent_run"] = run  # ``--out`` was filled by the turn's on_end (_out_setter)
        if run.status == "error":
            # The display already shows the run; the cell still fails (Run All stops here),
            # with one line and no traceback.
            raise UsageError(run.error or "The run failed.")

    # ---------------------------------------------------------------- magics
    @magic_arguments("%chat")  # usage line: %%chat
    @_shared_arguments
    @batch_arguments
    @cell_magic
    def chat(self, line: str, cell: str) -> None:
        """Send the cell to the model once and stream the answer."""
        args = parse_argstring(self.chat, line)
        if args.over:
            return run_batch_cell(self, "chat", args, cell)
        prompt, opts = self._entry("chat", args, cell)
        self._run(lambda listeners: _start("chat", prompt, listeners, opts))

    @magic_arguments("%toolloop")  # usage line: %%toolloop
    @_shared_arguments
    @_tool_arguments
    @argument("--parallel", action="store_true", help="Run batchable tool calls in parallel.")
    @argument("--tool-choice", type=flags.text,
              help="Force the first request: a tool name, auto, required or none.")
    @argument("--acp", type=flags.text,
              help="Run an ACP agent instead of the model: its command line, or a variable "
                   "holding a list (\"npx @zed-industries/claude-code-acp\").")
    @batch_arguments
    @cell_magic
    def toolloop(self, line: str, cell: str) -> None:
        """Let the model call your @tool functions until it answers."""
        args = parse_argstring(self.toolloop, line)
        if args.acp is not None:
            return self._acp_cell(args, cell)
        if args.over:
            return run_batch_cell(self, "toolloop", args, cell)
        prompt, opts = self._entry("toolloop", args, cell)
        from ..agents.run import Run

        self._run(lambda listeners: _start("toolloop", prompt, listeners, opts))
        run = self.namespace().get("_agent_run")
        if isinstance(run, Run) and run.status == "ask":  # waiting on an approval card
            from ..agents.toolloop_resume import approval_hint
            from ..ui.live import show_hint

            show_hint(run, approval_hint(run))

    def _acp_cell(self, args: argparse.Namespace, cell: str) -> None:
        """``%%toolloop --acp COMMAND``: the cell is the prompt of an external ACP agent
        (``jupyter_agent/acp/bridge.py``, docs/acp-in-a-cell.md)."""

        check_road("acp", given_flags(args, magic_parser("toolloop")))  # agents/option_rules.py
        try:
            import acp  # noqa: F401  (the SDK, an extra)
        except ImportError:
            raise UsageError('--acp needs the ACP SDK: pip install "jupyter-agent[acp]"') from None
        from ..acp.bridge import parse_command, run_prompt
        from ..acp.client import AcpError
        from ..agents.run import Run
        from ..base import config
        from ..session import default_store

        value: object = args.acp
        ns = self.namespace()
        if isinstance(value, str) and value.isidentifier() and isinstance(ns.get(value), (list, tuple)):
            value = ns[value]  # a variable holding the command as a list
        try:
            argv = parse_command(value)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        prompt = self.cell_prompt(cell, "toolloop")
        session = args.session or config.settings.session

        def start(listeners: list[Listener]) -> Run:
            try:
                return run_prompt(argv, prompt, session=session, store=default_store(),
                                  listeners=listeners, origin=self._origin(),
                                  on_end=_out_setter(ns, args.out, typed=False)
                                  if args.out else None)
            except AcpError as exc:
                raise UsageError(str(exc)) from None

        self._run(start)
        run = ns.get("_agent_run")
        if isinstance(run, Run) and run.status == "ask":
            from ..ui.live import show_hint

            show_hint(run, f"The ACP agent asks: click an option, or run `%agent resume "
                           f"{run.run_id} --option N` (N from 1) or `--dismiss` to cancel.")

    @magic_arguments("%plan")  # usage line: %%plan
    @_shared_arguments
    @_tool_arguments
    @argument("--answer", type=flags.text,
              help="Answer the first question up front (headless runs).")
    @argument("--option", type=flags.integer(1),
              help="Answer the first question with option N (from 1).")
    @argument("--auto-answer", type=flags.text, choices=["first"],
              help="Answer every question with option 1 (never an approval card).")
    @batch_arguments
    @cell_magic
    def plan(self, line: str, cell: str) -> None:
        """Run the planning agent: a live plan, questions as buttons, a stop gate."""
        args = parse_argstring(self.plan, line)
        if args.over:
            return run_batch_cell(self, "plan", args, cell)
        prompt, opts = self._entry("plan", args, cell)
        from ..agents.plan.agent import resume_hint
        run_box: dict[str, Run] = {}

        def start(listeners: list[Listener]) -> Run:
            run = _start("plan", prompt, listeners, opts)
            run_box["run"] = run
            return run

        self._run(start)
        run = run_box.get("run")
        if run is not None and run.status == "ask":
            from ..ui.live import show_hint

            show_hint(run, resume_hint(run))

    @line_magic
    def agent(self, line: str) -> object:
        """Sessions, models, usage, pending questions: `%agent help` lists the commands."""
        from .commands import run_command, shows_result

        try:
            result = run_command(line, self.namespace())
        except JupyterAgentError as exc:
            raise UsageError(usage_message(exc)) from None
        if line.split()[:1] in ([], ["help"]):
            print(cell_flags_help())
        return result if shows_result(line) else None


def cell_flags_help() -> str:
    """Every flag of ``%%chat``, ``%%toolloop`` and ``%%plan`` with its help line (from the
    parsers themselves, so the list cannot fall behind them)."""
    lines: list[str] = []
    for name in ("chat", "toolloop", "plan"):
        parser = magic_parser(name)
        lines.append(f"\n%%{name} flags:")
        for action in parser._actions:
            if not action.option_strings or action.dest == "help":
                continue
            spelled = "/".join(action.option_strings)
            if action.nargs != 0:
                metavar = action.metavar  # a tuple names each of several values
                shown = " ".join(metavar) if isinstance(metavar, tuple) else metavar
                spelled += " " + (shown or action.dest.upper())
            lines.append(f"  {spelled:<28} {(action.help or '').replace('%%', '%')}")
    return "\n".join(lines)


def magic_parser(kind: str) -> argparse.ArgumentParser:
    """The argument parser IPython's ``magic_arguments`` attached to the ``kind`` magic."""
    parser = getattr(getattr(AgentMagics, kind), "parser", None)
    assert isinstance(parser, argparse.ArgumentParser), kind  # every agent magic has one
    return parser


def _start(kind: CellKind, prompt: str, listeners: list[Listener], opts: EntryOptions) -> Run:
    """Run ``kind``'s entry point (``chat()``, ``toolloop()``, ``plan()``) on the cell's prompt
    and options. Through :func:`~jupyter_agent.agents.entries.entry_point`: the cell's options
    hold notebook values (``--schema``'s class or dict) that the entry point checks."""
    from ..agents.entries import entry_point

    run: Run = entry_point(kind)(prompt, listeners=listeners, **opts)
    return run


def _cell_client(mode: str, model: str | None) -> ModelClient:
    """The record/replay client of a cell's ``--record``/``--replay``."""
    from ..replay.mode import cell_client

    return cell_client("record" if mode == "record" else "replay", model)


class _Starter:
    """A listener that also learns the Run object from ``run_started`` to open the display."""

    def __init__(self, on_start: Callable[[Run], None], listener: Listener) -> None:
        self.on_start = on_start
        self.listener = listener
        self.started = False

    def __call__(self, event: BaseEvent) -> None:
        if not self.started and getattr(event, "type", "") == "run_started":
            from ..agents.run import last_run

            self.started = True
            run = last_run()
            if run is not None:  # the run that sent run_started is the last one made
                self.on_start(run)
        self.listener(event)


def _close_superseded(run_ids: list[str]) -> None:
    """The cards of runs a new turn superseded say so at once (buttons off, hint gone)."""
    from ..agents.run import Run
    from ..ui.live import close_superseded, displays

    reason = "superseded: its cell was run again; this question was withdrawn."
    for run_id in run_ids:
        live = displays.get(run_id)
        if live is not None and isinstance(live.run, Run):
            live.run.status, live.run.pending, live.run.error = "superseded", None, reason
        close_superseded(run_id, reason)


def _on_decide(run: Run, msg: JSONObject) -> None:
    """A click on Keep, Discard or Undo of a change row: the same road as ``%agent
    keep|discard|undo ID`` (``ui/decide.py``); the row then says what happened."""
    from ..ui.decide import decide_click
    from ..ui.live import displays

    try:
        if decide_click(run.view, msg) is None:
            return
    except Exception as exc:  # a click that fails silently is the worst bug: show it
        as_list(run.view.get("items")).append(
            {"kind": "warning", "message": f"The decision failed: {exc}"})
    live = displays.get(run.run_id)
    if live is not None:
        # Kept in ``displays`` (bounded): a second click that raced the first is drawn too.
        live.refresh()


def _out_setter(ns: dict[str, object], name: str, *, typed: bool) -> Callable[[Run], None]:
    """The turn's ``on_end`` for ``--out NAME``: each part of the run that ends (the cell's,
    then a click's, ``%agent resume``'s, an answer given up front) stores a typed run's
    instance (``None`` when it never validated), else the answer text."""
    def on_end(run: Run) -> None:
        ns[name] = run.output if typed else run.answer

    return on_end


def _on_click(run: Run, msg: JSONObject) -> None:
    """A click on an ask or approval card: resume the run in the same output (``--out`` is
    filled by the turn's ``on_end``, as for every resume). Runs in a comm callback, after the
    cell finished: errors go into the widget, not stdout.
    """
    from ..agents.resume import Answer, resume
    from ..ui.live import displays

    live = displays.get(run.run_id)
    listeners = [live.on_event] if live is not None else []
    try:
        call_id = msg.get("call_id")
        if not isinstance(call_id, str) or not call_id:
            # A click answers the card it came from; one naming no card must not answer
            # whatever happens to be waiting.
            raise ResumeError("The click named no card (no call id); nothing changed.")
        resume(run.run_id, Answer.from_message(msg), run=run, listeners=listeners,
               expected_call_id=call_id)
    except Exception as exc:  # a click that fails silently is the worst bug: show it
        ask = run.view.get("ask")
        if (isinstance(exc, ResumeError) and isinstance(ask, dict) and not ask.get("answered")
                and ask.get("call_id") == msg.get("call_id")):
            # Refused while the question still waits (replay: not the recorded answer): the
            # card says so in its own line and takes a click again (seq: each refusal anew).
            seq = int_field(object_field(ask, "refused"), "seq") + 1
            ask["refused"] = {"message": str(exc), "seq": seq}
        else:
            as_list(run.view.get("items")).append({"kind": "warning", "message": str(exc)})
        if live is not None:
            live.refresh()
