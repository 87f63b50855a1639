"""Records the session store returns.

Rows come back as pydantic models so callers get typed fields and JSON for free. Times are
seconds since the epoch (floats), like the ``t`` field of run events. Messages stay plain
OpenAI-format dicts (see ``jupyter_agent.llm.types``) and are not wrapped here.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, JsonValue, SkipValidation
from typing_extensions import TypedDict

from ..base.deferred import DeferredModel

__all__ = [
    "TERMINAL_RUN_STATUSES",
    "TranscriptCall",
    "TranscriptDict",
    "Mode",
    "PermissionDecision",
    "RunRecord",
    "SessionRecord",
    "StoredRunStatus",
    "TranscriptEntry",
    "TurnRecord",
    "UsageTotals",
]

Mode = Literal["ask", "search", "agent"]
"""The turn's mode (``%%chat`` runs in ``ask`` or ``search``; the loops in ``agent``)."""

PermissionDecision = Literal["allow", "ask", "deny"]
"""A remembered permission decision for one tool in one session."""

StoredRunStatus = Literal[
    "running", "ask", "done", "aborted", "error", "max_rounds", "incomplete", "superseded",
    "interrupted", "invalid",
]
"""Every status a stored run can have: the event ``RunStatus`` values plus two the store sets
by itself: ``superseded`` (an ask that a later run of the same session replaced; it can no
longer be answered) and ``interrupted`` (the process running it died, e.g. a killed kernel;
found and marked when a store is next opened, see ``Store.recover_interrupted_runs``)."""

TERMINAL_RUN_STATUSES: frozenset[str] = frozenset(
    {"done", "aborted", "error", "max_rounds", "incomplete", "superseded", "interrupted",
     "invalid"}
)
"""Statuses after which a run never changes again (its pending state is dropped)."""


class SessionRecord(DeferredModel):
    """One named conversation: its history lives in the messages table."""

    name: str
    """Unique session name (the ``--session`` value)."""
    group: str | None = None
    """Optional group, set when the session is created."""
    agent: str | None = None
    """Name of the agent bound to the session, or ``None`` (the default agent)."""
    workspace: str | None = None
    """Working directory that follows the bound agent, or ``None`` for the default."""
    model: str | None = None
    """Model (profile name) bound to the session; wins over every other model choice."""
    created: float
    updated: float
    """Last time the session or its history changed."""


class TurnRecord(BaseModel):
    """One turn: one magic cell, or one resume of a suspended run."""

    id: str
    session: str
    run_id: str | None = None
    mode: Mode = "ask"
    agent: str | None = None
    """The agent that ran the turn (bound, chosen by the user, or chosen by intent)."""
    intent: dict[str, JsonValue] | None = None
    """The intent result (category, confidence, keywords, source, needs_tools) as JSON."""
    model: str | None = None
    """The model that answered (the last one, after any failover)."""
    profile: str | None = None
    """The model profile that answered."""
    started: float
    duration: float | None = None
    """Seconds from start to finish; ``None`` while the turn runs."""
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    status: str = "running"
    """``running`` until finished, then the run status (``done``, ``ask``, ``error``, …)."""
    error: str | None = None
    """One-line error message for failed turns (never a key)."""
    tools: list[dict[str, JsonValue]] = []
    """The turn's tool calls (``call_id``, ``name``, ``error``, ``output``: the result's first
    and last 500 characters), masked."""
    history_preview: str | None = None
    """The turn's conversation (request and answer) as text, masked, at most 10000
    characters (its first and last 5000)."""


class RunRecord(BaseModel):
    """One run (a chat, tool loop or plan), possibly suspended on an ask."""

    run_id: str
    session: str | None = None
    kind: str
    """``chat``, ``toolloop`` or ``plan`` (free text, so new agents need no migration)."""
    status: StoredRunStatus
    created: float
    updated: float
    # Not validated again: the store decoded it from its own JSON (``loads_object``), and a
    # run's messages make it large (validating it tripled ``get_run``'s time at 100 KB).
    pending: Annotated[dict[str, JsonValue] | None, SkipValidation] = None
    """The suspended state while ``status == 'ask'``; opaque to the store."""
    pending_call_id: str | None = None
    """The tool-call id the pending ask waits on (checked by ``claim_pending``)."""
    pending_version: int = 0
    """Bumped on every suspend, claim, supersede and status change: a stale reader loses."""
    error: str | None = None
    """One-line reason for ``error`` and ``interrupted`` endings (never a key)."""
    owner_pid: int | None = None
    """Process id of the process running (or last running) the run; ``None`` for rows written
    by a release that did not record owners."""
    owner_host: str | None = None
    """Host name of that process."""
    origin: str | None = None
    """Where the run started (``cell:<id>`` for a notebook cell), ``None`` when unknown: a new
    run supersedes only the questions of runs with the same origin."""


class UsageTotals(DeferredModel):
    """Sums over a session's finished and running turns."""

    turns: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    seconds: float = 0.0
    """Sum of turn durations."""
    by_model: dict[str, dict[str, float]] = {}
    """Per answering model: ``{"turns", "input_tokens", "output_tokens", "cost"}``."""


class TranscriptCall(TypedDict):
    """One tool call of an assistant message in a transcript."""

    id: str
    name: str
    arguments: str
    """The call's arguments as the model wrote them (JSON text)."""


class TranscriptEntry(DeferredModel):
    """One line of a session transcript, ready for an exporter."""

    seq: int
    """Position in the session history (1-based, never reused)."""
    role: str
    """``user``, ``assistant``, ``tool`` or ``system``."""
    text: str = ""
    """The message text (text parts joined for multi-part content)."""
    tool_calls: list[TranscriptCall] = []
    """For assistant messages: their tool calls."""
    tool_call_id: str | None = None
    """For tool messages: the call this result answers."""
    tool_name: str | None = None
    """For tool messages: the tool's name, taken from the matching assistant call."""
    tool_error: str | None = None
    """For tool messages: the error recorded in the run's ``tool_returned`` event, if any."""
    turn_id: str | None = None
    run_id: str | None = None
    created: float


class TranscriptDict(TypedDict):
    """A :class:`TranscriptEntry` dumped (``model_dump()``): what ``session_transcript`` gives
    an exporter, field for field."""

    seq: int
    role: str
    text: str
    tool_calls: list[TranscriptCall]
    tool_call_id: str | None
    tool_name: str | None
    tool_error: str | None
    turn_id: str | None
    run_id: str | None
    created: float
