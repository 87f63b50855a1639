"""The options of a turn, and what they resolve to before anything runs: the store, the
model's profile, the client.

:class:`TurnOptions` is what every entry point (``chat``, ``toolloop``, ``plan``, the magics,
a batch's items) hands the turn; :func:`store_of`, :func:`profile_of` and :func:`client_of`
read it. The client factory (:func:`jupyter_agent.clients.factory.turn_client`) is called once
per turn, here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Literal, TypedDict, Union

from ...base import config
from ...base.events import BaseEvent
from ...llm.protocol import ModelClient
from ...llm.structured import SCHEMA_RETRIES
from ..context import Knowledge, Shell

if TYPE_CHECKING:
    from pydantic import BaseModel

    from ...clients.turn_client import TurnClient
    from ...llm.profiles import ModelProfile
    from ...llm.structured import OutputSpec
    from ...runtime.agents import Agent
    from ...session.store import Store
    from ..run import Run

__all__ = ["OutputOption", "Shell", "TurnArgs", "TurnOptions", "store_of", "client_of",
           "profile_of", "with_cache"]

OutputOption = Union["type[BaseModel]", Mapping[str, object], "OutputSpec", None]
"""A typed answer as a caller gives it: a pydantic model class, a JSON schema dict, or the
spec a batch made once for all its items (``llm/structured.py``)."""


@dataclass
class TurnOptions:
    """Options shared by every agent entry point (the magics map their flags onto these)."""

    model: str | None = None
    system: str | None = None
    session: str | None = field(default_factory=lambda: _current_session())
    """The session (its history, its questions); by default the current one: the notebook's
    own in a notebook, ``default`` in a script (:func:`jupyter_agent.base.config.default_session`)."""
    history: int | None = 6
    """Rounds of session history sent along (``0``/``None``: none)."""
    temperature: float | None = None
    max_tokens: int | None = None
    stream: bool = True
    knowledge: Knowledge | None = None
    quote_role: Literal["system", "user"] = "system"
    """Where the knowledge goes: an extra system part, or the user message (docs/behaviour.md
    §3.2); a ``quote_prompt`` naming ``{{question}}`` always makes it ``user``."""
    quote_prompt: str | None = None
    """The knowledge prompt (``{{quote}}``, and ``{{question}}`` for the user role)."""
    quote_template: str | None = None
    """How one knowledge item is rendered (``{{q}}``, ``{{a}}``, ``{{source}}``...)."""
    listeners: list[Callable[[BaseEvent], None]] = field(default_factory=list)
    store: Store | Literal["default"] | None = "default"
    """A :class:`~jupyter_agent.session.Store`, ``None`` for no persistence, or ``"default"``."""
    client: ModelClient | None = None
    """Use this client instead of resolving one from the settings (tests, sub-agents)."""
    agent: Agent | str | None = None
    """A named agent (:class:`~jupyter_agent.runtime.agents.Agent` or its name); ``%%toolloop``
    and ``%%plan`` only."""
    agent_model: str | None = None
    """The named agent's model, set by the runtime when it picks the agent (it comes after
    ``model`` in the model order of :mod:`jupyter_agent.clients.factory`)."""
    auto_approve: bool = False
    """Scripts: tools that would ask for approval run without a card (denies still apply)."""
    approve: str | Iterable[str] | None = None
    """Tools the person approved in the cell or the call (``--approve bash,run_python``,
    ``approve=["bash"]``): their calls run without a card, shown on the run's card; denies
    still apply. A checked ``frozenset`` once the turn started (``agents/turn/start.py``)."""
    is_aborted: Callable[[], bool] | None = None
    """Polled before each round and between streamed chunks: ``True`` ends the run with
    status ``aborted`` (a batch's stop button aborts its items in flight this way)."""
    on_end: Callable[[Run], None] | None = None
    """Told the run each time a part of it ends, the first or a resumed one (a click,
    ``%agent resume``, an answer given up front): the cell's ``--out`` is filled this way."""
    origin: str | None = None
    """Where the turn starts (``cell:<id>``: a notebook cell the front end named). A new turn
    supersedes only the questions waiting from the same origin (the cell re-run); ``None`` (a
    script, a console) supersedes nothing."""
    on_superseded: Callable[[list[str]], None] | None = None
    """Told the ids of the runs whose questions this turn superseded, at once (the notebook
    closes their cards)."""
    notebook: bool = False
    """Offer the notebook tools (``--notebook``; docs/notebook-tools.md)."""
    context: str | Iterable[str] | None = None
    """Notebook variables whose summaries are added to the user's message (``--with``)."""
    shell: Shell = None
    """The IPython shell (or a namespace dict) the notebook tools and ``context`` read; the
    edge passes it. ``None``: the running shell, else the script's ``__main__``."""
    skills: str | list[str] | None = None
    """Skill folders (``--skills DIR``; a comma-separated string or a list), added to the
    agent's own: their names and descriptions go into the system prompt, the ``read_skill``
    tool reads them (docs/behaviour.md §5.5). ``%%toolloop`` and ``%%plan`` only."""
    output: OutputOption = None
    """A typed answer: a pydantic model class or a JSON schema dict (``--schema``). The run's
    ``output`` is then the validated instance (docs/behaviour.md §10.14)."""
    schema_retries: int = SCHEMA_RETRIES
    """Times an answer that does not validate is sent back with its errors; then the run ends
    ``invalid``."""
    cache: bool | None = None
    """Answer a request identical to an earlier one from the on-disk cache (``--cache``);
    ``None``: the ``cache`` setting."""


class TurnArgs(TypedDict, total=False):
    """The keyword options of ``chat()``, ``toolloop()`` and ``plan()`` (``**options``): the
    fields of :class:`TurnOptions` but ``output``, which each entry point takes by name (its
    overloads give the run's output type). ``tests/agents/test_options_types.py`` keeps the
    two in step."""

    model: str | None
    system: str | None
    session: str | None
    history: int | None
    temperature: float | None
    max_tokens: int | None
    stream: bool
    knowledge: Knowledge | None
    quote_role: Literal["system", "user"]
    quote_prompt: str | None
    quote_template: str | None
    listeners: list[Callable[[BaseEvent], None]]
    store: Store | Literal["default"] | None
    client: ModelClient | None
    agent: Agent | str | None
    agent_model: str | None
    auto_approve: bool
    approve: str | Iterable[str] | None
    is_aborted: Callable[[], bool] | None
    on_end: Callable[[Run], None] | None
    origin: str | None
    on_superseded: Callable[[list[str]], None] | None
    notebook: bool
    context: str | Iterable[str] | None
    shell: Shell
    skills: str | list[str] | None
    schema_retries: int
    cache: bool | None


def _current_session() -> str:
    from ...base.config import settings

    return settings.session


def store_of(opt: TurnOptions) -> Store | None:
    """The session store of ``opt`` (``"default"``: the process-wide one; ``None``: none)."""
    if opt.store == "default":
        from ...session import default_store

        return default_store()
    return opt.store


def client_of(opt: TurnOptions, store: Store | None) -> TurnClient:
    """The model and client of a turn: ``opt.client`` when given, else the factory's choice
    (cell, agent, session model...; with a failover when fallback profiles are configured).

    Raises a clear error (a missing key, an unknown profile) before anything is recorded.
    """
    from ...clients.factory import turn_client
    from ...clients.turn_client import bind_client

    if opt.client is not None:
        tc = bind_client(opt.client, opt.model or opt.agent_model)
    else:
        tc = turn_client(opt.model, agent=opt.agent_model, session=_session_model(opt, store))
    return with_cache(tc, opt.cache)


def with_cache(tc: TurnClient, cache: bool | None) -> TurnClient:
    """``tc`` behind the answer cache when ``cache`` (``None``: the ``cache`` setting) turns it
    on: a new turn's client, and a resumed run's (the first turn's ``--cache`` holds after an
    answer)."""
    if cache is False or (cache is None and not config.settings.cache):
        return tc  # the answer cache is off (the default): its module is not even loaded
    from ...clients.cache import cached_turn_client

    return cached_turn_client(tc, cache)


def profile_of(opt: TurnOptions, store: Store | None) -> ModelProfile:
    """The profile :func:`client_of` would give the turn, without building its client
    (no server started, no key needed): for checks before anything runs."""
    from ...clients.factory import turn_profile

    if opt.client is not None:
        return opt.client.profile
    return turn_profile(opt.model, agent=opt.agent_model, session=_session_model(opt, store))


def _session_model(opt: TurnOptions, store: Store | None) -> str | None:
    """The model bound to the turn's session, if any."""
    if store is None or not opt.session:
        return None
    rec = store.get_session(opt.session)
    return rec.model if rec is not None else None


