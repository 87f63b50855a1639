"""The tool side of a tool-calling run: running calls, and the loop settings around them.

Shared by ``%%toolloop`` (fresh and resumed), the plan's runtime tools and sub-agents:
:func:`tool_runner` is the ``run_tool`` hook (unknown names and failures go back to the model,
every call passes the permission check first), :func:`loop_parts` the configuration and hooks
of a tool-loop run.
"""

from __future__ import annotations

from typing import Any, Callable

from ..llm.profiles import map_temperature
from ..llm.types import ToolCall
from ..loop.hooks import LoopHooks, ToolOutcome
from ..loop.kernel import LoopConfig
from ..runtime.policy import PermissionContext, check_permission
from ..tools.notebook.cards import call_events, figure_images
from ..tools.registry import Tool, invoke_with_usage
from .compression import tool_output_processor, window_fitter
from .constants import PARALLEL_BATCH
from .drive import TurnContext

__all__ = ["tool_runner", "unknown_tool_message", "loop_parts"]


def unknown_tool_message(name: str, available: list[str]) -> str:
    """What the model is told for a name it made up (``docs/behaviour.md`` §2)."""
    return f'Unknown tool "{name}". Available tools: {", ".join(available) or "none"}'


def tool_runner(tools: list[Tool[Any]], permissions: PermissionContext | None = None
                ) -> Callable[[ToolCall, list[dict[str, Any]]], ToolOutcome]:
    """A ``run_tool`` hook over ``tools``: unknown names and failures go back to the model.

    With ``permissions`` every call passes the permission check first: a denial or an
    approval card replaces the call.
    """
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
                           seconds=r.seconds, usages=usages, events=call_events(call.id, r.value),
                           images=figure_images(r.value))

    return run


def loop_parts(p: TurnContext, tools: list[Tool[Any]], *, parallel: bool, max_rounds: int,
               temperature: float | None, max_tokens: int | None, stream: bool,
               permissions: PermissionContext | None = None, round_offset: int = 0
               ) -> tuple[LoopConfig, LoopHooks]:
    """The loop configuration and hooks of a tool-loop run (fresh, resumed, or a sub-agent)."""
    from ..llm.tokens import count_tools_tokens

    prof = p.client.profile
    schemas = [t.schema() for t in tools]
    max_tokens = None if max_tokens is None else max(1, min(max_tokens, prof.max_output))
    cfg = LoopConfig(model=prof.model, tools=schemas or None, max_rounds=max_rounds,
                     batch_size=PARALLEL_BATCH if parallel else 1,
                     temperature=map_temperature(prof, temperature), max_tokens=max_tokens,
                     stream=stream, round_offset=round_offset,
                     vision=prof.capabilities.vision)
    batchable = {t.name for t in tools if t.batchable}
    hooks = LoopHooks(
        run_tool=tool_runner(tools, permissions),
        can_batch=lambda c: c.name in batchable,
        fit_context=window_fitter(prof.max_context, max_tokens, count_tools_tokens(schemas)),
        process_tool_output=tool_output_processor(p.client),
    )
    return cfg, hooks
