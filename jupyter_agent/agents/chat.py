"""``%%chat``: one streamed model call with history and knowledge (docs/behaviour.md §4)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import overload

from typing_extensions import Unpack

from ..base.jsontypes import JSONObject
from ..llm.profiles import map_temperature
from ..loop.hooks import LoopHooks
from ..loop.kernel import LoopConfig
from .compression import window_fitter
from .run import Model, Run
from .turn.drive import drive
from .turn.options import OutputOption, TurnArgs
from .turn.start import start_turn

__all__ = ["chat"]


@overload
def chat(prompt: str, *, output: type[Model], **options: Unpack[TurnArgs]) -> Run[Model]: ...
@overload
def chat(prompt: str, *, output: Mapping[str, object],
         **options: Unpack[TurnArgs]) -> Run[JSONObject]: ...
@overload
def chat(prompt: str, *, output: None = None, **options: Unpack[TurnArgs]) -> Run[None]: ...
def chat(prompt: str, *, output: OutputOption = None, **options: Unpack[TurnArgs]) -> Run:
    """Make one streamed model call and return the :class:`Run`.

    ``output``: a pydantic model class (``run.output`` is then its instance, and the run a
    ``Run[Model]`` for mypy) or a JSON schema dict (``run.output`` is a dict: a
    ``Run[JSONObject]``). Without it the run is a ``Run[None]``: its answer is ``run.answer``.

    Keyword options are those of :class:`~jupyter_agent.agents.turn.options.TurnOptions` (``model``,
    ``system``, ``session``, ``history``, ``temperature``, ``max_tokens``, ``knowledge``…).

    Raises:
        ParameterError: an empty prompt or a value outside its range.
    """
    turn = start_turn("chat", prompt, options, output=output)
    p, opt = turn.ctx, turn.opt
    prof = p.client.profile
    messages = turn.messages()
    max_tokens = None if opt.max_tokens is None else max(1, min(opt.max_tokens, prof.max_output))
    cfg = LoopConfig(model=prof.model, tools=None, max_rounds=1, batch_size=1,
                     temperature=map_temperature(prof, opt.temperature), max_tokens=max_tokens,
                     stream=opt.stream, final_answer_round=False)
    hooks = LoopHooks(fit_context=window_fitter(prof.max_context, max_tokens, 0))
    return drive(p, messages, cfg, hooks, persist_from=len(messages) - 1)
