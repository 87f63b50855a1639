"""``%%chat``: one streamed model call with history and knowledge (docs/behaviour.md §4)."""

from __future__ import annotations

from typing import Any

from ..llm.profiles import map_temperature
from ..loop.hooks import LoopHooks
from ..loop.kernel import LoopConfig
from .compression import window_fitter
from .run import Run
from .turn.drive import drive
from .turn.start import start_turn

__all__ = ["chat"]


def chat(prompt: str, **options: Any) -> Run:
    """Make one streamed model call and return the :class:`Run`.

    Keyword options are those of :class:`~jupyter_agent.agents.turn.options.TurnOptions` (``model``,
    ``system``, ``session``, ``history``, ``temperature``, ``max_tokens``, ``knowledge``…).

    Raises:
        ParameterError: an empty prompt or a value outside its range.
    """
    turn = start_turn("chat", prompt, options)
    p, opt = turn.ctx, turn.opt
    prof = p.client.profile
    messages = turn.messages()
    max_tokens = None if opt.max_tokens is None else max(1, min(opt.max_tokens, prof.max_output))
    cfg = LoopConfig(model=prof.model, tools=None, max_rounds=1, batch_size=1,
                     temperature=map_temperature(prof, opt.temperature), max_tokens=max_tokens,
                     stream=opt.stream, final_answer_round=False)
    hooks = LoopHooks(fit_context=window_fitter(prof.max_context, max_tokens, 0))
    return drive(p, messages, cfg, hooks, persist_from=len(messages) - 1)
