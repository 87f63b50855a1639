"""``%%toolloop``: the model calls notebook tools until it answers (spec section 2)."""

from __future__ import annotations

from typing import Any, Callable

from ..errors import MagicUsageError
from ..llm.profiles import map_temperature
from ..llm.types import ToolCall
from ..llm.usage_context import usage_sink
from ..loop.hooks import LoopHooks, ToolOutcome, UsageItem
from ..loop.kernel import LoopConfig
from ..tools.registry import REGISTRY, Tool
from ._base import TurnOptions, drive, prepare, tool_output_processor, window_fitter
from .context import TOOL_SEPARATOR, apply_knowledge, join_system
from .run import Run

__all__ = ["toolloop", "tool_runner", "resolve_tools", "MAX_ROUNDS", "PARALLEL_BATCH"]

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


def tool_runner(tools: list[Tool[Any]]) -> Callable[[ToolCall, list[dict[str, Any]]], ToolOutcome]:
    """A ``run_tool`` hook over ``tools``: unknown names and failures go back to the model."""
    by_name = {t.name: t for t in tools}
    names = list(by_name)

    def run(call: ToolCall, snapshot: list[dict[str, Any]]) -> ToolOutcome:
        t = by_name.get(call.name)
        if t is None:
            msg = unknown_tool_message(call.name, names)
            return ToolOutcome(output=msg, error=msg)
        usages: list[UsageItem] = []
        # Helpers called inside the tool (classify, extract, a sub-agent) report their usage
        # here, so the run's tokens and cost include them.
        with usage_sink(lambda module, model, usage, cost: usages.append(
                UsageItem(module, model, usage, cost))):
            r = t.invoke(call.arguments)
        return ToolOutcome(output=r.output, value=r.value, error=r.error, stop=r.stop,
                           seconds=r.seconds, usages=usages)

    return run


def toolloop(prompt: str, *, tools: list[Any] | None = None, parallel: bool = False,
             max_rounds: int = MAX_ROUNDS, **options: Any) -> Run:
    """Let the model call ``tools`` (all registered ones by default) until it answers.

    Args:
        prompt: The user's message.
        tools: Tool names, :class:`Tool` objects or plain functions.
        parallel: Run consecutive batchable calls of one response at once (up to 5).
        max_rounds: Model requests before the final-answer round (default 50).
        **options: :class:`~jupyter_agent.agents._base.TurnOptions` fields.
    """
    if not prompt or not prompt.strip():
        raise MagicUsageError("The cell is empty: write the task below %%toolloop.")
    if max_rounds < 1:
        raise MagicUsageError("--max-rounds must be at least 1.")
    selected = resolve_tools(tools)
    opt = TurnOptions(**options)
    p = prepare("toolloop", prompt, opt, mode="agent")
    prof = p.client.profile
    user_text, quote_part = apply_knowledge(prompt, opt.knowledge, mode="agent")
    sys_text = join_system([prof.default_system_prompt, opt.system, quote_part], TOOL_SEPARATOR)
    messages: list[dict[str, Any]] = [{"role": "system", "content": sys_text}] if sys_text else []
    messages.extend(m for m in p.history if m.get("role") != "system")
    messages.append({"role": "user", "content": user_text})
    schemas = [t.schema() for t in selected]
    max_tokens = None if opt.max_tokens is None else max(1, min(opt.max_tokens, prof.max_output))
    from ..llm.tokens import count_tools_tokens

    cfg = LoopConfig(model=prof.model, tools=schemas or None, max_rounds=max_rounds,
                     batch_size=PARALLEL_BATCH if parallel else 1,
                     temperature=map_temperature(prof, opt.temperature), max_tokens=max_tokens,
                     stream=opt.stream)
    batchable = {t.name for t in selected if t.batchable}
    hooks = LoopHooks(
        run_tool=tool_runner(selected),
        can_batch=lambda c: c.name in batchable,
        fit_context=window_fitter(prof.max_context, max_tokens, count_tools_tokens(schemas)),
        process_tool_output=tool_output_processor(p.client),
    )
    return drive(p, messages, cfg, hooks, persist_from=len(messages) - 1)
