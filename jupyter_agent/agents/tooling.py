"""The tool side of a tool-calling run: running calls, and the loop settings around them.

Shared by ``%%toolloop`` (fresh and resumed), the plan's runtime tools and sub-agents:
:func:`tool_runner` is the ``run_tool`` hook (unknown names and failures go back to the model,
every call passes the permission check first), :func:`loop_parts` the configuration and hooks
of a tool-loop run.
"""

from __future__ import annotations

from typing import Callable, TypeAlias

from ..base.errors import ParameterError
from ..base.jsontypes import JSONObject
from ..llm.profiles import map_temperature
from ..llm.types import Message, ToolCall
from ..loop.hooks import LoopHooks, RequestControl, ToolOutcome
from ..loop.kernel import LoopConfig
from ..runtime.policy import PermissionContext, check_permission
from ..tools.notebook.card_events import call_events, figure_images
from ..tools.registry import AnyTool, invoke_with_usage
from .compression import tool_output_processor, window_fitter
from .limits import PARALLEL_BATCH
from .turn.open import TurnContext

__all__ = ["ToolSpec", "tool_runner", "unknown_tool_message", "loop_parts", "answer_after_tools",
           "forced_choice"]


ToolSpec: TypeAlias = "str | AnyTool | Callable[..., object]"
"""How a caller names a tool of a run (``tools=``, ``--tools``, an agent's ``tools``): a
registered name (a ``@tool`` function, a built-in such as ``"bash"``, an MCP tool,
``"spawn_agent"``), a :class:`~jupyter_agent.tools.registry.Tool` or a plain function."""


def unknown_tool_message(name: str, available: list[str]) -> str:
    """What the model is told for a name it made up (``docs/behaviour.md`` §2)."""
    return f'Unknown tool "{name}". Available tools: {", ".join(available) or "none"}'


def tool_runner(tools: list[AnyTool], permissions: PermissionContext | None = None
                ) -> Callable[[ToolCall, list[Message]], ToolOutcome]:
    """A ``run_tool`` hook over ``tools``: unknown names and failures go back to the model.

    With ``permissions`` every call passes the permission check first: a denial or an
    approval card replaces the call.
    """
    by_name = {t.name: t for t in tools}
    names = list(by_name)

    def run(call: ToolCall, snapshot: list[Message]) -> ToolOutcome:
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


def answer_after_tools(failed: set[str]) -> Callable[[int, list[Message]], RequestControl | None]:
    """A ``request_control`` hook for a model that cannot judge when to stop calling tools
    (``capabilities.stops_after_tool_result`` False): after a round whose calls all succeeded
    the next request forbids tools, so the model answers from the results. After a failed call
    (its id in ``failed``) tools stay allowed: the model may correct the call.
    """
    def control(round_: int, messages: list[Message]) -> RequestControl | None:
        results = _last_round_results(messages)
        if results and not any(m.get("tool_call_id") in failed for m in results):
            return RequestControl(tool_choice="none")
        return None

    return control


def _last_round_results(messages: list[Message]) -> list[Message]:
    """The tool results the request ends with, when they answer the last assistant's calls."""
    i = len(messages)
    while i > 0 and messages[i - 1].get("role") == "tool":
        i -= 1
    if i == len(messages) or i == 0:
        return []
    before = messages[i - 1]
    return messages[i:] if before.get("role") == "assistant" and before.get("tool_calls") else []


def _noting_failures(run: Callable[[ToolCall, list[Message]], ToolOutcome], failed: set[str]
                     ) -> Callable[[ToolCall, list[Message]], ToolOutcome]:
    """``run`` that adds the id of every call that failed (or was refused) to ``failed``."""
    def run_noted(call: ToolCall, snapshot: list[Message]) -> ToolOutcome:
        out = run(call, snapshot)
        if out.error:
            failed.add(call.id)
        return out

    return run_noted


def forced_choice(tool_choice: str | None, tools: list[AnyTool]
                  ) -> str | JSONObject | None:
    """The wire ``tool_choice`` of a run's first request (``docs/behaviour.md`` §2).

    ``None``/``auto``: nothing forced; ``required``/``none`` as they are; any other value must
    name one of ``tools`` and forces that tool.

    Raises:
        ParameterError: a name that is not among ``tools``.
    """
    if tool_choice is None or tool_choice == "auto":
        return None
    if tool_choice in ("required", "none"):
        return tool_choice
    names = [t.name for t in tools]
    if tool_choice not in names:
        raise ParameterError(
            f"tool_choice {tool_choice!r} is neither auto, required, none nor one of the "
            f"run's tools ({', '.join(names) or 'none'}).", parameters=("tool_choice",))
    return {"type": "function", "function": {"name": tool_choice}}


def loop_parts(p: TurnContext, tools: list[AnyTool], *, parallel: bool, max_rounds: int,
               temperature: float | None, max_tokens: int | None, stream: bool,
               permissions: PermissionContext | None = None, round_offset: int = 0,
               tool_choice: str | JSONObject | None = None
               ) -> tuple[LoopConfig, LoopHooks]:
    """The loop configuration and hooks of a tool-loop run (fresh, resumed, or a sub-agent).

    ``tool_choice`` (:func:`forced_choice`'s) is sent on the first request only; later
    requests use ``auto`` with the consecutive-tool-turn guard.
    """
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
    run_tool = tool_runner(tools, permissions)
    control = None
    if not prof.capabilities.stops_after_tool_result:
        failed: set[str] = set()
        run_tool, control = _noting_failures(run_tool, failed), answer_after_tools(failed)
    hooks = LoopHooks(
        run_tool=run_tool,
        request_control=control,
        can_batch=lambda c: c.name in batchable,
        fit_context=window_fitter(prof.max_context, max_tokens, count_tools_tokens(schemas)),
        process_tool_output=tool_output_processor(p.client),
    )
    if tool_choice is not None:
        # The forced choice holds for the first request; after it, the small-model rule (if any).
        first = round_offset + 1
        after = control

        def forced_then(rnd: int, msgs: list[Message]) -> RequestControl | None:
            if rnd == first:
                return RequestControl(tool_choice=tool_choice)
            return after(rnd, msgs) if after is not None else None

        hooks.request_control = forced_then
    return cfg, hooks
