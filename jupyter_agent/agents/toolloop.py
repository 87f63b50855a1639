"""``%%toolloop``: the model calls notebook tools until it answers (spec section 2)."""

from __future__ import annotations

from typing import Any, Callable

from ..errors import MagicUsageError
from ..llm.profiles import map_temperature
from ..llm.types import ToolCall
from ..loop.hooks import LoopHooks, ToolOutcome
from ..loop.kernel import LoopConfig
from ..tools.registry import REGISTRY, Tool, invoke_with_usage
from ._base import (
    Prepared,
    TurnOptions,
    _store,
    drive,
    prepare,
    tool_output_processor,
    window_fitter,
)
from ._params import check_parameters
from .context import TOOL_SEPARATOR, apply_knowledge, join_system
from .run import Run

__all__ = ["toolloop", "tool_runner", "resolve_tools", "loop_parts", "MAX_ROUNDS",
           "PARALLEL_BATCH"]

MAX_ROUNDS = 50
PARALLEL_BATCH = 5


def resolve_tools(tools: list[str | Tool[Any] | Callable[..., Any]] | None) -> list[Tool[Any]]:
    """Tools by name or object; ``None`` means every registered tool."""
    if tools is None:
        return REGISTRY.all()
    out: list[Tool[Any]] = []
    for t in tools:
        if isinstance(t, Tool):
            out.append(t)
        elif isinstance(t, str):
            out.extend(REGISTRY.select([t]))
        elif callable(t):
            out.append(Tool(t))
        else:
            raise MagicUsageError(f"Not a tool: {t!r}")
    return out


def unknown_tool_message(name: str, available: list[str]) -> str:
    """What the model is told for a name it made up (spec README item 7)."""
    return f'Unknown tool "{name}". Available tools: {", ".join(available) or "none"}'


def tool_runner(tools: list[Tool[Any]], permissions: Any = None
                ) -> Callable[[ToolCall, list[dict[str, Any]]], ToolOutcome]:
    """A ``run_tool`` hook over ``tools``: unknown names and failures go back to the model.

    With ``permissions`` (a :class:`~jupyter_agent.runtime.policy.PermissionContext`) every
    call passes the permission check first: a denial or an approval card replaces the call.
    """
    from ..runtime.policy import check_permission

    by_name = {t.name: t for t in tools}
    names = list(by_name)

    def run(call: ToolCall, snapshot: list[dict[str, Any]]) -> ToolOutcome:
        t = by_name.get(call.name)
        if t is None:
            msg = unknown_tool_message(call.name, names)
            return ToolOutcome(output=msg, error=msg)
        blocked = check_permission(call, t, permissions)
        if blocked is not None:
            return blocked
        r, usages = invoke_with_usage(t, call.arguments)
        return ToolOutcome(output=r.output, value=r.value, error=r.error, stop=r.stop,
                           seconds=r.seconds, usages=usages)

    return run


def loop_parts(p: Prepared, tools: list[Tool[Any]], *, parallel: bool, max_rounds: int,
               temperature: float | None, max_tokens: int | None, stream: bool,
               permissions: Any = None, round_offset: int = 0) -> tuple[LoopConfig, LoopHooks]:
    """The loop configuration and hooks of a tool-loop run (a fresh one or a resumed one)."""
    from ..llm.tokens import count_tools_tokens

    prof = p.client.profile
    schemas = [t.schema() for t in tools]
    max_tokens = None if max_tokens is None else max(1, min(max_tokens, prof.max_output))
    cfg = LoopConfig(model=prof.model, tools=schemas or None, max_rounds=max_rounds,
                     batch_size=PARALLEL_BATCH if parallel else 1,
                     temperature=map_temperature(prof, temperature), max_tokens=max_tokens,
                     stream=stream, round_offset=round_offset)
    batchable = {t.name for t in tools if t.batchable}
    hooks = LoopHooks(
        run_tool=tool_runner(tools, permissions),
        can_batch=lambda c: c.name in batchable,
        fit_context=window_fitter(prof.max_context, max_tokens, count_tools_tokens(schemas)),
        process_tool_output=tool_output_processor(p.client),
    )
    return cfg, hooks


def forced_choice(tool_choice: str | None) -> str | dict[str, Any] | None:
    """``auto``/``none``/``required`` as given; any other value names the tool to call."""
    if tool_choice is None or tool_choice in ("auto", "none", "required"):
        return tool_choice
    return {"type": "function", "function": {"name": tool_choice}}


def toolloop(prompt: str, *, tools: list[Any] | None = None, parallel: bool = False,
             max_rounds: int = MAX_ROUNDS, tool_choice: str | None = None,
             **options: Any) -> Run:
    """Let the model call ``tools`` (all registered ones by default) until it answers.

    Args:
        prompt: The user's message.
        tools: Tool names (``@tool`` functions, built-ins like ``"bash"``, MCP tools,
            ``"spawn_agent"``), :class:`Tool` objects or plain functions; default: the agent's
            tools, else every ``@tool`` function.
        parallel: Run consecutive batchable calls of one response at once (up to 5).
        max_rounds: Model requests before the final-answer round (default 50).
        tool_choice: Forced on the first request only (a tool name, ``required``, ``none``);
            later rounds use ``auto`` with the consecutive-tool-turn guard.
        **options: :class:`~jupyter_agent.agents._base.TurnOptions` fields (``agent``,
            ``auto_approve``, ``session``, ``model``...).
    """
    if not prompt or not prompt.strip():
        raise MagicUsageError("The cell is empty: write the task below %%toolloop.")
    check_parameters(options, max_rounds=max_rounds)
    from .approvals import approval_suspender
    from .resume import settle
    from .turn import setup_turn

    opt = TurnOptions(**options)
    # Agent, intent, workspace and tools first: an unknown tool fails before anything is saved.
    setup = setup_turn("toolloop", prompt, opt, tools, store=_store(opt))
    p = prepare("toolloop", prompt, opt, mode="agent", intent=setup.intent,
                agent=setup.agent_name)
    setup.bind(p)
    prof = p.client.profile
    user_text, quote_part = apply_knowledge(prompt, opt.knowledge, mode="agent")
    sys_text = join_system([prof.default_system_prompt, setup.system_text, opt.system,
                            quote_part], TOOL_SEPARATOR)
    messages: list[dict[str, Any]] = [{"role": "system", "content": sys_text}] if sys_text else []
    messages.extend(m for m in p.history if m.get("role") != "system")
    messages.append({"role": "user", "content": user_text})
    cfg, hooks = loop_parts(p, setup.tools, parallel=parallel, max_rounds=max_rounds,
                            temperature=opt.temperature, max_tokens=opt.max_tokens,
                            stream=opt.stream, permissions=setup.permissions)
    options_saved = {"parallel": parallel, "max_rounds": max_rounds,
                     "temperature": opt.temperature, "max_tokens": opt.max_tokens,
                     "stream": opt.stream}
    run = drive(p, messages, cfg, hooks, persist_from=len(messages) - 1,
                on_result=approval_suspender(p, setup, messages[-1], options_saved))
    return settle(p, run)  # a replay answers the approvals that were clicked
