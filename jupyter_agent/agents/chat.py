"""``%%chat``: one streamed model call with history and knowledge (spec section 4)."""

from __future__ import annotations

from typing import Any

from ..errors import MagicUsageError
from ..llm.profiles import map_temperature
from ..loop.hooks import LoopHooks
from ..loop.kernel import LoopConfig
from ._base import TurnOptions, drive, prepare, window_fitter
from ._params import check_parameters
from .context import CHAT_SEPARATOR, apply_knowledge, join_system
from .run import Run

__all__ = ["chat", "build_chat_messages"]


def build_chat_messages(prompt: str, *, default_system: str = "", system: str | None = None,
                        history: list[dict[str, Any]] | None = None, knowledge: Any = None,
                        mode: str = "ask") -> list[dict[str, Any]]:
    """System message (default prompt, ``system``, knowledge part), history, then the user."""
    user_text, quote_part = apply_knowledge(prompt, knowledge, mode=mode)
    sys_text = join_system([default_system, system, quote_part], CHAT_SEPARATOR)
    messages: list[dict[str, Any]] = []
    if sys_text:
        messages.append({"role": "system", "content": sys_text})
    # Old system messages in the history are not re-sent: this turn's system prompt replaces them.
    messages.extend(m for m in (history or []) if m.get("role") != "system")
    messages.append({"role": "user", "content": user_text})
    return messages


def chat(prompt: str, **options: Any) -> Run:
    """Make one streamed model call and return the :class:`Run`.

    Keyword options are those of :class:`~jupyter_agent.agents._base.TurnOptions` (``model``,
    ``system``, ``session``, ``history``, ``temperature``, ``max_tokens``, ``knowledge``…).
    """
    if not prompt or not prompt.strip():
        raise MagicUsageError("The cell is empty: write the message to send below %%chat.")
    check_parameters(options)
    opt = TurnOptions(**options)
    mode = "search" if opt.knowledge is not None else "ask"
    from ..runtime.intent import intent_system_text
    from .intent import recognize_intent

    intent = recognize_intent(prompt)  # recorded always; in the prompt only in search mode
    p = prepare("chat", prompt, opt, mode=mode, intent=intent)
    prof = p.client.profile
    system = join_system([opt.system, intent_system_text(intent, mode)], "\n\n") or None
    messages = build_chat_messages(prompt, default_system=prof.default_system_prompt,
                                   system=system, history=p.history, knowledge=opt.knowledge,
                                   mode=mode)
    max_tokens = None if opt.max_tokens is None else max(1, min(opt.max_tokens, prof.max_output))
    cfg = LoopConfig(model=prof.model, tools=None, max_rounds=1, batch_size=1,
                     temperature=map_temperature(prof, opt.temperature), max_tokens=max_tokens,
                     stream=opt.stream, final_answer_round=False)
    hooks = LoopHooks(fit_context=window_fitter(prof.max_context, max_tokens, 0))
    return drive(p, messages, cfg, hooks, persist_from=len(messages) - 1)
