"""The client of one turn, and what a turn handles explicitly besides calling it.

An agent calls its client only through the :class:`~jupyter_agent.llm.protocol.ModelClient`
protocol. What else a turn must know comes with the :class:`TurnClient`, as plain fields, not
as optional methods to probe for: the failover (its warnings go to the run, the profile that
answered goes into the turn record) and, in record or replay mode, the cassette's answers (an
:class:`~jupyter_agent.base.answers.AnswerSource` that answers clicked asks again, an
:class:`~jupyter_agent.base.answers.AnswerLog` that keeps the answers given).

The factory remembers which clients it made for a cassette (:func:`remember`), so a client
handed back to a later turn (a cell's ``--record``/``--replay`` client, the client a resumed
run continues with) brings its cassette along (:func:`bind_client`).
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypeVar

from ..base.answers import AnswerLog, AnswerSource
from ..base.events import BaseEvent
from ..base.state import STATE
from ..llm.protocol import ModelClient
from .failover import FailoverClient

if TYPE_CHECKING:  # a cassette's parts load only when a recording or a replay is on
    from .cassette import Cassette

__all__ = ["TurnClient", "ModelSource", "bind_client", "remember"]

ModelSource = Literal["cell", "agent", "session", "active", "env", "settings", "embedded",
                      "default", "given"]
"""Which rule chose the model (see :mod:`.factory`); ``given``: the caller passed a client."""

_roles: weakref.WeakKeyDictionary[ModelClient, tuple[Literal["record", "replay"], Cassette]] = (
    STATE.slot("clients.roles", weakref.WeakKeyDictionary))
_roles_lock = threading.Lock()


_Client = TypeVar("_Client", bound=ModelClient)


def remember(client: _Client, mode: Literal["record", "replay"], cassette: Cassette) -> _Client:
    """Note that ``client`` records into (or replays) ``cassette``; returns ``client``."""
    with _roles_lock:
        _roles[client] = (mode, cassette)
    return client


@dataclass(frozen=True)
class TurnClient:
    """The client a turn runs on, the model's name, and the parts the turn handles itself."""

    client: ModelClient
    model: str
    source: ModelSource
    failover: FailoverClient | None = None
    """The failover over the configured fallback profiles, when there is one (it is
    ``client``)."""
    answers: AnswerSource | None = None
    """Answers a waiting run without the user (a replay)."""
    answer_log: AnswerLog | None = None
    """Keeps the answers given to the run (a recording)."""

    @property
    def keeps_client(self) -> bool:
        """Whether a resume of this turn's run must continue on this very client (it records
        into, or replays, a cassette)."""
        return self.answers is not None or self.answer_log is not None

    def answered_profile(self) -> str | None:
        """The profile that answered the last request after a failover (``None`` without
        failover, or before any request succeeded)."""
        return self.failover.answered_profile if self.failover is not None else None

    def reporting_to(self, emit: Callable[[BaseEvent], None]
                     ) -> contextlib.AbstractContextManager[None]:
        """A block in which the failover's warnings go to ``emit`` (the run being driven)."""
        if self.failover is None:
            return contextlib.nullcontext()
        return self.failover.reporting_to(emit)


def bind_client(client: ModelClient, model: str | None = None,
                source: ModelSource = "given") -> TurnClient:
    """The :class:`TurnClient` of ``client`` (``model`` defaults to its profile's name): with
    the cassette's answers when the factory made it for a recording or a replay."""
    with _roles_lock:
        role = _roles.get(client)
    failover = client if isinstance(client, FailoverClient) else None
    answers: AnswerSource | None = None
    log: AnswerLog | None = None
    if role is not None:
        mode, cassette = role
        if mode == "replay":
            from .replay import CassetteAnswers

            answers = CassetteAnswers(cassette)
        else:
            from .record import CassetteAnswerLog

            log = CassetteAnswerLog(cassette)
    return TurnClient(client, model or client.profile.name, source, failover=failover,
                      answers=answers, answer_log=log)

