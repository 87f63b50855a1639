"""The turn driver: the start of every turn, for ``%%chat``, ``%%toolloop``, ``%%plan`` and
sub-agents, written once.

:func:`start_turn` does, in this order:

1. validation: an empty prompt, values outside their range (a
   :class:`~jupyter_agent.base.errors.ParameterError` naming the parameter);
2. the runtime setup (``%%toolloop``, ``%%plan``): agent, intent, workspace, tools and
   permissions (:func:`~jupyter_agent.agents.turn.setup.setup_turn`); ``%%chat`` recognizes the
   intent only. An unknown tool fails here, before anything is saved;
3. the model and client (a missing key fails here, still before anything is saved);
4. the question its own cell's last run left waiting is superseded (the cell was re-run;
   ``TurnOptions.origin``); questions of other cells stay waiting;
5. the turn is opened (run and turn records, ``run_started``, the session history) and the
   setup bound to it;
6. knowledge, the system prompt and the user's message: the first request
   (:meth:`Turn.messages`).

A resumed run starts its turn from the saved state instead (:func:`restore_setup`), and a
sub-agent from its :class:`~jupyter_agent.agents.delegation.SubAgentTask`
(:func:`run_sub_agent`, the one sub-agent runner).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ...base.errors import ConfigError, ParameterError, ToolError
from ...base.events import UsageRecorded
from ...llm.profiles import ModelProfile
from ...llm.structured import FINAL_ANSWER_TOOL, OutputSpec, output_spec
from ...llm.types import Message, Usage
from ...llm.usage_context import report_usage
from ...runtime.catalog import SPAWN_TOOL_NAME
from ...runtime.grants import parse_approve
from ...runtime.intent import IntentResult, intent_system_text
from ...tools.registry import AnyTool
from ..context import CHAT_SEPARATOR, TOOL_SEPARATOR, apply_knowledge, join_system, with_variables
from ..limits import SUB_AGENT_MAX_ROUNDS
from ..option_rules import python_refusal
from ..params import Checks, check_parameters
from ..run import Run, last_run, set_last_run
from ..tooling import ToolSpec, forced_choice, loop_parts
from .drive import calling_abort_check, drive
from .open import TurnContext, open_turn
from .options import OutputOption, TurnArgs, TurnOptions, client_of, profile_of, store_of
from .recognize import recognize_intent
from .saving import saving_store
from .setup import TurnSetup, restore_turn, setup_turn

if TYPE_CHECKING:
    from ...session.models import Mode
    from ..delegation import SubAgentTask
    from ..pending import TurnState

__all__ = ["TurnKind", "Turn", "start_turn", "restore_setup", "run_sub_agent"]

TurnKind = Literal["chat", "toolloop", "plan"]

_WHAT = {"chat": "the message to send", "toolloop": "the task", "plan": "the task"}
_TURN_OPTIONS = frozenset(f.name for f in dataclasses.fields(TurnOptions))


@dataclass
class Turn:
    """A turn ready for its first request."""

    ctx: TurnContext
    opt: TurnOptions
    setup: TurnSetup | None
    """The runtime setup (``None`` for ``%%chat``)."""
    system: str
    """The system prompt: the profile's default, the role, ``system``, the knowledge part."""
    user_message: Message

    def messages(self) -> list[Message]:
        """The system prompt, the session history without its old system prompts (this turn's
        replaces them), then the user's message."""
        out: list[Message] = [{"role": "system", "content": self.system}] if self.system else []
        out.extend(m for m in self.ctx.history if m.get("role") != "system")
        out.append(self.user_message)
        return out


def _checked_options(kind: TurnKind, prompt: str, options: TurnArgs, output: OutputOption,
                     checks: Checks | None) -> TurnOptions:
    """The turn's options, checked before anything is set up: a prompt, values in range, and
    nothing a chat cannot do (``notebook``, ``skills``, approvals)."""
    if not prompt or not prompt.strip():
        raise ParameterError(f"prompt is empty: give {_WHAT[kind]}.", parameters=("prompt",))
    unknown = python_refusal(kind, options, _TURN_OPTIONS)  # agents/option_rules.py
    if unknown is not None:
        raise ParameterError(unknown, parameters=(unknown.split(" ", 1)[0],))
    check_parameters(options, **(checks or {}))
    opt = TurnOptions(**options)
    if output is not None:
        opt.output = typed_output(output)
    if kind == "chat" and opt.notebook:
        raise ParameterError("notebook: a chat calls no tools; use toolloop or plan.",
                             parameters=("notebook",))
    if kind == "chat" and opt.skills:
        raise ParameterError("skills: a chat calls no tools (skills are read with one); use "
                             "toolloop or plan.", parameters=("skills",))
    opt.approve = _approved_names(kind, opt.approve)
    return opt


def start_turn(kind: TurnKind, prompt: str, options: TurnArgs, *, output: OutputOption = None,
               tools: Sequence[ToolSpec] | None = None, checks: Checks | None = None) -> Turn:
    """Validate, set up and open a new turn of ``kind`` (the order is in the module doc).

    Args:
        kind: ``chat``, ``toolloop`` or ``plan``.
        prompt: The user's message.
        options: :class:`~jupyter_agent.agents.turn.options.TurnOptions` fields, as the caller gave
            them.
        output: A typed answer (a pydantic model class, a JSON schema dict), or ``None``.
        tools: The cell's tool specs (``toolloop``, ``plan``); ``None``: the agent's, else every
            ``@tool`` function.
        checks: More parameters to check (``max_rounds``, ``option``).

    Raises:
        ParameterError: an empty prompt or a value outside its range.
    """
    opt = _checked_options(kind, prompt, options, output, checks)
    store = saving_store(store_of(opt))  # a full disk: the run goes on unsaved, in one line
    if kind == "plan":
        _refuse_unfit_for_planning(profile_of(opt, store))
    setup: TurnSetup | None = None
    intent: IntentResult | None
    if kind == "chat":
        mode: Mode = "search" if opt.knowledge is not None else "ask"
        intent = recognize_intent(prompt)  # recorded always; in the prompt only in search mode
    else:
        mode = "agent"
        setup = setup_turn(kind, prompt, opt, tools, store=store, run_sub_agent=run_sub_agent)
        forced_choice((checks or {}).get("tool_choice"), setup.tools)  # a bad name: before saving
        if opt.output is not None and any(t.name == FINAL_ANSWER_TOOL for t in setup.tools):
            # Offered twice (a server refuses that), and its calls would be taken as the answer.
            raise ParameterError(f"tools: a tool named {FINAL_ANSWER_TOOL} cannot be used with "
                                 f"a typed answer (output=, --schema): the name is reserved for "
                                 "it; rename the tool.", parameters=("tools", "output"))
        intent = setup.intent
    # ``--with``: read now, so a missing or secret variable fails before anything is saved.
    agent = setup.agent if setup is not None else None
    variables = with_variables("", opt.context, opt.shell,
                               agent.notebook_variables if agent is not None else None)
    tc = client_of(opt, store)
    if store is not None and opt.session and opt.origin is not None:
        # Re-running a cell replaces the question its last run left waiting; questions of
        # other cells stay waiting while this turn runs around them.
        superseded = store.supersede_pending(opt.session, origin=opt.origin)
        if superseded and opt.on_superseded is not None:
            opt.on_superseded(superseded)
    ctx = open_turn(kind, prompt, opt, tc, store=store, mode=mode, intent=intent,
                    agent=setup.agent_name if setup is not None else None)
    if setup is not None:
        setup.bind(ctx)
    user_text, quote_part = apply_knowledge(prompt, opt.knowledge, mode=mode,
                                            role=opt.quote_role, quote_prompt=opt.quote_prompt,
                                            item_template=opt.quote_template,
                                            max_tokens=ctx.client.profile.quote_budget())
    user_text += variables
    default = ctx.client.profile.default_system_prompt
    if setup is None:
        extra = join_system([opt.system, intent_system_text(intent, mode)], "\n\n")
        system = join_system([default, extra, quote_part], CHAT_SEPARATOR)
    else:
        system = join_system([default, setup.system_text, opt.system, quote_part],
                             TOOL_SEPARATOR)
    return Turn(ctx, opt, setup, system, {"role": "user", "content": user_text})


def _approved_names(kind: str, value: object) -> frozenset[str]:
    """``approve``: the tool names the caller approved for this turn, checked."""
    try:
        names = parse_approve(value)
    except ValueError as exc:
        raise ParameterError(f"approve must be tool names: {exc}.",
                             parameters=("approve",)) from None
    if names and kind == "chat":
        raise ParameterError("approve: a chat calls no tools; use toolloop or plan.",
                             parameters=("approve",))
    return names


def typed_output(output: object) -> OutputSpec:
    """``output`` as an :class:`OutputSpec`, or a :class:`ParameterError` naming it."""
    try:
        return output_spec(output)
    except (TypeError, ValueError) as exc:
        raise ParameterError(f"output: {exc}.", parameters=("output",)) from None


def _refuse_unfit_for_planning(profile: ModelProfile) -> None:
    """One line, before any request, for a model whose profile declares it cannot plan
    (``capabilities.planning`` False: the embedded model ran minutes and ended ``done`` with
    garbage as its answer)."""
    if profile.capabilities.planning:
        return
    raise ConfigError(
        f"The model '{profile.name}' cannot run the planning agent: set OPENAI_API_KEY (or "
        "%config AgentMagics.api_key), choose another model (--model NAME, model=NAME in "
        "Python), or open notebooks/03-planning-with-ask.ipynb, which replays a recorded plan "
        "without a key.")


def restore_setup(state: TurnState, ctx: TurnContext, tools: list[AnyTool] | None
                  ) -> TurnSetup:
    """The runtime setup of a resumed run, rebuilt from ``state`` and bound to its new turn.

    ``tools``: the run's tool objects when this process kept them, else ``None``.
    """
    setup = restore_turn(state, tools=tools, run_sub_agent=run_sub_agent, run_id=ctx.run.run_id)
    setup.bind(ctx)
    return setup


def run_sub_agent(task: SubAgentTask) -> Run:
    """Run ``task`` as a nested tool loop and return its finished Run (``spawn_agent`` and
    agents used as tools both come here).

    At most :data:`~.constants.SUB_AGENT_MAX_ROUNDS` model requests, the final-answer request
    included; every ``ask`` of the permission policy is a denial (nobody can answer a card
    inside a tool call); nothing is persisted or shown; each priced call is reported to the
    calling run (``task.usage_module``), before any error. The caller's last run stays its last.
    Aborting the calling run aborts the sub-agent's loop too (before its next request).

    Raises:
        KeyboardInterrupt: the user interrupted the sub-agent (the calling run stops too).
        ToolError: the sub-agent failed (``"<label> failed: <error>"``).
    """
    parent_run = last_run()
    permissions = task.permissions
    permissions.no_prompts = True
    tools = [t for t in task.tools if t.name != SPAWN_TOOL_NAME]
    setup = TurnSetup(mode="agent", agent=None, agent_source=None, intent=None,
                      workspace=task.workspace, permissions=permissions, tools=tools)
    opt = TurnOptions(model=task.model, session=None, store=None, history=0, stream=False,
                      client=task.client)
    try:
        tc = client_of(opt, None)
        if task.client is not None:
            # The calling run's own client: its failover keeps reporting to that run (the one
            # the user sees), not to this sub-run.
            tc = dataclasses.replace(tc, failover=None)
        ctx = open_turn("toolloop", task.task, opt, tc, store=None, mode="agent",
                        agent=task.agent)
        setup.bind(ctx)
        system = join_system([ctx.client.profile.default_system_prompt, task.role],
                             TOOL_SEPARATOR)
        messages = Turn(ctx, opt, setup, system,
                        {"role": "user", "content": task.task}).messages()
        rounds = max(0, min(task.max_rounds, SUB_AGENT_MAX_ROUNDS - 1))
        cfg, hooks = loop_parts(ctx, tools, parallel=False, max_rounds=rounds, temperature=None,
                                max_tokens=None, stream=False, permissions=permissions)
        # Aborting the calling run (``Run.abort()``) stops this nested loop too (§2.11).
        hooks = dataclasses.replace(hooks, is_aborted=calling_abort_check())
        run = drive(ctx, messages, cfg, hooks, persist_from=len(messages) - 1)
    finally:
        set_last_run(parent_run)  # the sub-run is not the user's "last run"
    for event in run.events:  # its calls were made and paid, whatever happens next
        if isinstance(event, UsageRecorded):
            usage = Usage(input_tokens=event.input_tokens, output_tokens=event.output_tokens,
                          estimated=event.estimated)
            report_usage(task.usage_module(event.module), event.model, usage, event.cost)
    if run.status == "aborted":
        raise KeyboardInterrupt
    if run.status == "error":
        raise ToolError(f"{task.label} failed: {run.error}")
    return run
