"""``%%toolloop``: the model calls notebook tools until it answers (docs/behaviour.md §5)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import overload

from typing_extensions import Unpack

from ..base.jsontypes import JSONObject
from .limits import MAX_ROUNDS, PARALLEL_BATCH
from .run import Model, Run
from .tooling import ToolSpec, forced_choice, loop_parts
from .toolloop_suspend import approval_suspender
from .turn.drive import drive
from .turn.options import OutputOption, TurnArgs
from .turn.start import start_turn

__all__ = ["toolloop", "MAX_ROUNDS", "PARALLEL_BATCH"]


@overload
def toolloop(prompt: str, *, tools: Sequence[ToolSpec] | None = None, parallel: bool = False,
             max_rounds: int = MAX_ROUNDS, tool_choice: str | None = None,
             output: type[Model], **options: Unpack[TurnArgs]) -> Run[Model]: ...
@overload
def toolloop(prompt: str, *, tools: Sequence[ToolSpec] | None = None, parallel: bool = False,
             max_rounds: int = MAX_ROUNDS, tool_choice: str | None = None,
             output: Mapping[str, object], **options: Unpack[TurnArgs]) -> Run[JSONObject]: ...
@overload
def toolloop(prompt: str, *, tools: Sequence[ToolSpec] | None = None, parallel: bool = False,
             max_rounds: int = MAX_ROUNDS, tool_choice: str | None = None,
             output: None = None, **options: Unpack[TurnArgs]) -> Run[None]: ...
def toolloop(prompt: str, *, tools: Sequence[ToolSpec] | None = None, parallel: bool = False,
             max_rounds: int = MAX_ROUNDS, tool_choice: str | None = None,
             output: OutputOption = None, **options: Unpack[TurnArgs]) -> Run:
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
        output: A typed answer: a pydantic model class (``run.output`` its instance: a
            ``Run[Model]``) or a JSON schema dict (a ``Run[JSONObject]``); none: ``Run[None]``.
        **options: :class:`~jupyter_agent.agents.turn.options.TurnOptions` fields (``agent``,
            ``auto_approve``, ``session``, ``model``...).

    Raises:
        ParameterError: an empty prompt or a value outside its range.
    """
    turn = start_turn("toolloop", prompt, options, output=output, tools=tools,
                      checks={"max_rounds": max_rounds, "tool_choice": tool_choice})
    p, setup, opt = turn.ctx, turn.setup, turn.opt
    assert setup is not None  # a tool-loop turn always has its runtime setup
    forced = forced_choice(tool_choice, setup.tools)  # checked by start_turn already
    messages = turn.messages()
    cfg, hooks = loop_parts(p, setup.tools, parallel=parallel, max_rounds=max_rounds,
                            temperature=opt.temperature, max_tokens=opt.max_tokens,
                            stream=opt.stream, permissions=setup.permissions,
                            tool_choice=forced)
    # The options a resume needs: validated as ToolloopOptions only if the run suspends.
    saved = {"parallel": parallel, "max_rounds": max_rounds, "temperature": opt.temperature,
             "max_tokens": opt.max_tokens, "stream": opt.stream}
    run = drive(p, messages, cfg, hooks, persist_from=len(messages) - 1,
                on_result=approval_suspender(p, setup, saved, [turn.user_message]))
    if run.status != "ask":
        return run
    from .resume import settle  # only a waiting run: answering one loads the resume side

    return settle(p, run)  # a replay answers the approvals that were clicked
