"""Every run event, as one discriminated union.

A run is a stream of these events. The live widget renders them, the store persists them and
the static MIME bundle (``application/vnd.jupyter-agent.run+json``) holds the view reduced from
them: one stream, three consumers (four when runs are exported as traces: docs/tracing.md). Names and fields are a public format: add fields with defaults, never
rename. ``RUN_FORMAT_VERSION`` is written into the MIME payload so old notebooks stay readable.
"""

# No ``from __future__ import annotations`` here: pydantic would then evaluate every field's
# annotation string when the class is made, and every first run imports these two dozen
# classes. Each class also builds its validator at its first use (``defer_build``): a run
# uses a few of them (docs/architecture.md, "The first run").
import time
from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from .jsontypes import JSONObject, Shallow

# A JSON field of an event, checked one level deep (``Shallow``): a plan of a thousand steps
# is sent whole on every update, and its values are JSON already (``event_to_json``).
_Object = Annotated[JSONObject, Shallow(dict[str, object])]

__all__ = [
    "RUN_MIME_TYPE",
    "RUN_FORMAT_VERSION",
    "RunStatus",
    "BaseEvent",
    "RunStarted",
    "OutputChecked",
    "ToolsOffered",
    "RoundStarted",
    "ReasoningDelta",
    "TextDelta",
    "ToolCalled",
    "ToolArgsDelta",
    "ToolStarted",
    "ToolReturned",
    "UsageRecorded",
    "PlanUpdated",
    "PlanStatus",
    "AskPending",
    "AskAnswered",
    "RoundRetried",
    "StopGateFeedback",
    "ContextCompressed",
    "Warning_",
    "CellProposed",
    "ToolFigures",
    "WorkspaceChanged",
    "RunFinished",
    "RunFailed",
    "RunEvent",
    "EVENT_ADAPTER",
    "event_to_json",
    "merge_deltas",
]

RUN_MIME_TYPE = "application/vnd.jupyter-agent.run+json"
"""The MIME type of a run's saved output in a notebook (its view state; see ``view/bundle.py``)."""

RUN_FORMAT_VERSION = 2
"""Version of the run JSON payload; bumped only on incompatible changes.

1 held the view and the event log; 2 holds the view only (``view/bundle.py``). Readers take
both: the view is where it was."""

RunStatus = Literal["done", "ask", "aborted", "error", "max_rounds", "incomplete", "running",
                    "invalid"]
"""How a run ended. ``ask`` means suspended: waiting for an answer or an approval."""


class BaseEvent(BaseModel):
    """Fields every event carries."""

    model_config = ConfigDict(extra="forbid", defer_build=True)  # built at first use

    t: float = Field(default_factory=time.time)
    """Wall-clock time the event was created (seconds since the epoch)."""


class RunStarted(BaseEvent):
    type: Literal["run_started"] = "run_started"
    run_id: str
    """Stable id of the run; resume commands name it."""
    agent: str
    """Which agent runs: ``chat``, ``toolloop``, ``plan`` or a named agent."""
    model: str
    """Model name as configured (never the key)."""
    prompt: str = ""
    """The user's text for this turn, after interpolation."""
    session: str | None = None
    """Session name, when the run belongs to one."""
    trace: str = ""
    """The W3C ``traceparent`` of the run's span when runs are exported as traces
    (docs/tracing.md), else empty; a resumed run continues that trace."""


class ToolsOffered(BaseEvent):
    type: Literal["tools_offered"] = "tools_offered"
    tools: list[str] = []
    """The names of the tools the turn offers the model (``%%toolloop``, ``%%plan``: the
    runtime's set, without the plan's own ``update_plan``/``ask_agent``); sent as a turn
    starts or resumes."""
    agent: str | None = None
    """The named agent whose role the turn plays (``None``: the default role)."""
    agent_source: Literal["user", "session", "intent"] | None = None
    """Why that agent: the cell named it, the session is bound to it, or the intent chose it."""


class RoundStarted(BaseEvent):
    type: Literal["round_started"] = "round_started"
    round: int
    """1-based index of the model request in this run."""
    model: str = ""
    tool_choice: str | None = None
    """``auto``, ``none``, ``required`` or a tool name; ``None`` when no tools are offered."""


class ReasoningDelta(BaseEvent):
    type: Literal["reasoning_delta"] = "reasoning_delta"
    round: int
    text: str


class TextDelta(BaseEvent):
    type: Literal["text_delta"] = "text_delta"
    round: int
    text: str


class ToolCalled(BaseEvent):
    type: Literal["tool_called"] = "tool_called"
    round: int
    call_id: str
    """The run's tool-call id: the provider's, unless empty or already used by another call of
    the run (then a fresh one; ``loop/call_ids.py``)."""
    name: str
    arguments: str = ""
    """The raw JSON arguments text as the model sent it."""


class ToolArgsDelta(BaseEvent):
    type: Literal["tool_args_delta"] = "tool_args_delta"
    round: int
    call_id: str
    delta: str


class ToolStarted(BaseEvent):
    """A call began to run (its ``tool_called`` may come much earlier: announced while the
    model streams, or queued behind an earlier call of its round). ``t`` is when it began."""

    type: Literal["tool_started"] = "tool_started"
    round: int
    call_id: str
    name: str


class ToolReturned(BaseEvent):
    type: Literal["tool_returned"] = "tool_returned"
    round: int
    call_id: str
    name: str
    output: str
    """The text the model receives (after truncation/compression)."""
    error: str | None = None
    """Set when the tool failed (raised, timed out, bad arguments, unknown, denied)."""
    seconds: float = 0.0
    internal: bool = False
    """True for internal tools (``update_plan``, ``ask_agent``), which UIs may render apart."""


class UsageRecorded(BaseEvent):
    type: Literal["usage"] = "usage"
    round: int = 0
    module: str = "agent_call"
    """What the call was for: ``agent_call``, ``compress_llm_messages``, ``tool_response_compress``, …"""
    model: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    """Cost of this call alone, in the profile's currency (calls are priced one by one)."""
    estimated: bool = False
    """True when the provider sent no usage and tokens were counted locally."""
    priced: bool = True
    """False when the model's profile has no prices: the cost is unknown, not 0."""
    cached: bool = False
    """Answered from the answer cache: no call was made (``cost`` is 0)."""
    saved: float = 0.0
    """What a cached answer would have cost."""
    response_model: str = ""
    """The model the provider says answered (``agent_call`` usage; empty when unknown)."""
    finish_reason: str | None = None
    """Why the model stopped (``stop``, ``tool_calls``, ``length``...; ``agent_call`` usage)."""
    response_id: str | None = None
    """The provider's id of the response (``agent_call`` usage)."""


class PlanUpdated(BaseEvent):
    type: Literal["plan_updated"] = "plan_updated"
    plan: _Object
    """The whole active plan after the update (see ``agents.plan.state.Plan``)."""


class PlanStatus(BaseEvent):
    type: Literal["plan_status"] = "plan_status"
    status: Literal["generating", "updating"]
    """``generating`` when no plan exists yet, ``updating`` when one does."""
    round: int = 0
    call_id: str = ""
    """The ``update_plan`` call that appeared in the stream (it has not run yet)."""


class AskPending(BaseEvent):
    type: Literal["ask_pending"] = "ask_pending"
    call_id: str
    """The ask tool call's id; the answer becomes that call's result."""
    kind: Literal["ask", "approval"] = "ask"
    question: str
    options: list[str]
    descriptions: list[str] = []
    allow_other: bool = True
    """Whether a free-text answer ("Other") is offered."""
    detail: _Object = {}
    """For approvals: the tool name, its arguments, the working directory."""


class AskAnswered(BaseEvent):
    type: Literal["ask_answered"] = "ask_answered"
    call_id: str
    how: Literal["option", "other", "dismissed"]
    answer: str = ""
    option_index: int | None = None
    """1-based index of the chosen option, when ``how == 'option'``."""


class RoundRetried(BaseEvent):
    type: Literal["round_retried"] = "round_retried"
    round: int
    reason: str
    """Why the request was sent again; the round's partial output is withdrawn."""


class StopGateFeedback(BaseEvent):
    type: Literal["stop_gate_feedback"] = "stop_gate_feedback"
    round: int
    reason: str
    feedback: str
    """The message added for the model; the draft of ``round`` is withdrawn."""
    id: str = ""
    """``stop_gate_<round>_<request id>``: the record id of this refusal."""
    assistant_text: str = ""
    """The withdrawn draft (masked like every text shown)."""


class ContextCompressed(BaseEvent):
    type: Literal["context_compressed"] = "context_compressed"
    round: int
    method: Literal["checkpoint", "truncate"]
    tokens_before: int = 0
    tokens_after: int = 0
    seconds: float = 0.0


class Warning_(BaseEvent):
    type: Literal["warning"] = "warning"
    message: str
    level: Literal["warning", "note"] = "warning"
    """``note``: a calm line that explains a choice the package made (nothing went wrong);
    ``warning``: something the user should look at."""


class CellProposed(BaseEvent):
    type: Literal["cell_proposed"] = "cell_proposed"
    round: int = 0
    call_id: str = ""
    """The ``insert_cell`` call that proposed the cell."""
    proposal: _Object
    """The proposal as JSON: ``id``, ``source``, ``kind``, ``explanation``, ``status``."""


class ToolFigures(BaseEvent):
    type: Literal["tool_figures"] = "tool_figures"
    round: int = 0
    call_id: str
    """The call (``run_python``) that drew them; emitted right after its ``tool_returned``."""
    figures: Annotated[list[JSONObject], Shallow(list[dict[str, object]])]
    """Each ``{"index", "png", "width", "height", "description"}``; ``png`` is base64 PNG
    data, empty when the image was too large to keep (the description stays)."""


class WorkspaceChanged(BaseEvent):
    """What a sandboxed command (``bash``, ``sandbox_python``) changed in the workspace and
    what it held for a person (docs/sandbox.md); emitted right after its ``tool_returned``.

    Data from the command's record, never parsed from the tool's text: a model that prints a
    line looking like a held change gets no row and no buttons. The model never sees it."""

    type: Literal["workspace_changed"] = "workspace_changed"
    round: int = 0
    call_id: str
    record_id: str
    """The command's id for ``%agent keep|discard|undo ID`` (what the card's buttons call)."""
    tool: str
    added: int = 0
    changed: int = 0
    removed: int = 0
    """Files applied to the workspace, by kind (a new folder counts everything in it)."""
    names: list[str] = []
    """The first few applied paths."""
    held: list[dict[str, str]] = []
    """The first few held changes, each ``{"path", "kind", "reason"}``."""
    held_count: int = 0
    undo_note: str = ""
    """Why Undo cannot restore everything (a change too large to keep), or empty."""


class OutputChecked(BaseEvent):
    """A typed run's answer checked against its schema (docs/behaviour.md §10.14)."""

    type: Literal["output_checked"] = "output_checked"
    schema_name: str
    valid: bool
    data: _Object = {}
    """The instance as JSON (what the model produced, when invalid)."""
    errors: list[str] = []
    """One line per problem of the last attempt; empty when valid."""
    attempts: int = 1
    """Answers checked: 1, plus one per retry."""


class RunFinished(BaseEvent):
    type: Literal["run_finished"] = "run_finished"
    status: RunStatus
    answer: str = ""
    rounds: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    seconds: float = 0.0
    finish_reason: str | None = None
    error: str | None = None
    """A short message for ``error``/``incomplete``/``aborted`` endings."""


class RunFailed(BaseEvent):
    type: Literal["run_failed"] = "run_failed"
    error: str
    """One-line message, never containing a key."""


RunEvent = Annotated[
    Union[
        RunStarted,
        ToolsOffered,
        RoundStarted,
        ReasoningDelta,
        TextDelta,
        ToolCalled,
        ToolArgsDelta,
        ToolStarted,
        ToolReturned,
        UsageRecorded,
        PlanUpdated,
        PlanStatus,
        AskPending,
        AskAnswered,
        RoundRetried,
        StopGateFeedback,
        ContextCompressed,
        Warning_,
        CellProposed,
        ToolFigures,
        WorkspaceChanged,
        OutputChecked,
        RunFinished,
        RunFailed,
    ],
    Field(discriminator="type"),
]
"""One run event, of whichever type; ``EVENT_ADAPTER.validate_python`` parses one from its JSON form."""

EVENT_ADAPTER: TypeAdapter[RunEvent] = TypeAdapter(RunEvent, config=ConfigDict(defer_build=True))


_DELTA_KEYS = {"text_delta": "text", "reasoning_delta": "text", "tool_args_delta": "delta"}


def merge_deltas(events: list[JSONObject]) -> list[JSONObject]:
    """Event JSON with consecutive deltas of the same part merged into one event.

    A 20,000-token answer is stored and saved as one ``text_delta``, not 20,000. Inputs are
    not modified.
    """
    out: list[JSONObject] = []
    for d in events:
        kind = d["type"]
        key = _DELTA_KEYS.get(kind) if isinstance(kind, str) else None
        if key and out:
            last = out[-1]
            if (last["type"] == kind and last.get("round") == d.get("round")
                    and last.get("call_id") == d.get("call_id")):
                text, more = last[key], d[key]
                if isinstance(text, str) and isinstance(more, str):  # a delta's text always is
                    last[key] = text + more
                    continue
        out.append(dict(d) if key else d)
    return out


def event_to_json(event: BaseEvent) -> JSONObject:
    """The JSON-ready dict of ``event`` (what the store and the MIME payload hold).

    Every event field is a JSON type already (str, numbers, bool, None, lists and dicts of
    them), so a shallow copy of the fields is the JSON form; ``model_dump`` would walk a whole
    100-step plan on every update. The round-trip test in tests/ui keeps this honest.
    """
    return dict(event.__dict__)
