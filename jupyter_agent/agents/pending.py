"""A suspended run's saved state (:data:`PendingRun`): typed, versioned, stored as JSON.

A run that waits for the user (a ``%%plan`` question, an approval card) ends with status
``ask`` and saves everything needed to continue it, in this kernel or another one. The store
keeps it as plain JSON (``session/`` knows nothing of agents); this module is its schema, and
:func:`load_pending` is the only way back from JSON, so every reader gets a validated object.

One union per kind (``kind``): :class:`ToolloopPending` (approval cards of ``%%toolloop``) and
:class:`PlanPending` (the plan's question or one of its approval cards). The card itself is a
union too (``card.kind``): :class:`QuestionCard` or :class:`ApprovalCard`.

Versions (``version``): 1 is this schema. A record without a version was written before
versions existed; it is migrated on load (:func:`_from_unversioned`). A version above
:data:`SCHEMA_VERSION` was written by a newer jupyter-agent and is refused with one line.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    TypeAdapter,
    ValidationError,
    model_validator,
)

from ..base.answers import WaitingAsk
from ..base.errors import ResumeError
from ..base.events import AskPending
from ..base.jsontypes import JSONObject, as_list
from ..llm.structured import SCHEMA_RETRIES
from ..runtime.intent import IntentResult
from ..session.permissions import Decision
from .limits import MAX_ROUNDS
from .plan.constants import MAX_ROUNDS as PLAN_MAX_ROUNDS
from .plan.run_state import PlanRunState

__all__ = ["SCHEMA_VERSION", "Message", "QuestionCard", "ApprovalCard", "Card", "WaitingCall",
           "TurnState", "ToolloopOptions", "PlanOptions", "ToolloopPending", "PlanPending",
           "PendingRun", "load_pending", "card_of", "parse_card"]

SCHEMA_VERSION = 1
"""The version this code writes, and the newest it reads."""

Message = dict[str, JsonValue]
"""A request message in the OpenAI wire format, kept verbatim (checked to be JSON)."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


# ----------------------------------------------------------------------------- cards
class _CardBase(_Model):
    """The ``ask_pending`` event's fields (without ``type`` and ``t``)."""

    call_id: str
    """The tool call the card stands for; the answer becomes that call's result."""
    question: str
    options: list[str]
    descriptions: list[str] = Field(default_factory=list)
    detail: dict[str, JsonValue] = Field(default_factory=dict)

    def event(self) -> AskPending:
        """The ``ask_pending`` event that shows this card."""
        return AskPending.model_validate(self.model_dump())


class QuestionCard(_CardBase):
    """A question the plan's ``ask_agent`` asked (``detail``: ``reason``, ``blockerType``)."""

    kind: Literal["ask"] = "ask"
    allow_other: bool = True


class ApprovalCard(_CardBase):
    """An approval card of a tool call (``detail``: ``tool``, ``arguments``, ``cwd``...)."""

    kind: Literal["approval"] = "approval"
    allow_other: bool = False

    @property
    def tool(self) -> str:
        """The name of the tool waiting to run."""
        return str(self.detail.get("tool", ""))

    @property
    def arguments(self) -> str:
        """The call's arguments as the raw JSON text the model sent."""
        args = self.detail.get("arguments", {})
        return args if isinstance(args, str) else json.dumps(args)


Card = Annotated[QuestionCard | ApprovalCard, Field(discriminator="kind")]
_CARD: TypeAdapter[QuestionCard | ApprovalCard] = TypeAdapter(Card)


class WaitingCall(_Model):
    """A tool call that waits on its approval card."""

    call_id: str
    name: str
    arguments: str
    """The arguments as raw JSON text."""
    card: ApprovalCard

    @classmethod
    def of(cls, card: ApprovalCard) -> WaitingCall:
        """The call an approval card stands for."""
        return cls(call_id=card.call_id, name=card.tool, arguments=card.arguments, card=card)


# ----------------------------------------------------------------------------- the parts
class TurnState(_Model):
    """What the runtime decided for the turn (agent, workspace, permissions, tool names), so a
    resume in any kernel rebuilds the same setup."""

    agent: str | None = None
    agent_source: Literal["user", "session", "intent"] | None = None
    workspace: str | None = None
    read_only: bool = False
    allow_network: bool = False
    overrides: dict[str, Decision] = Field(default_factory=dict)
    """The agent's overrides; a resume takes only their denies (runtime/grants.py)."""
    auto_approve: bool = False
    """Written by earlier versions; never read: what a cell approved stays in the kernel's
    memory (a store row can be forged, docs/security.md)."""
    tools: list[str] = Field(default_factory=list)
    intent: IntentResult | None = None
    mode: str = "agent"
    skills: list[str] = Field(default_factory=list)
    """The skill folders of the turn (a resume offers ``read_skill`` over them again)."""


class ToolloopOptions(_Model):
    """The loop options of a ``%%toolloop`` run, used again by its resume."""

    parallel: bool = False
    max_rounds: int = MAX_ROUNDS
    temperature: float | None = None
    max_tokens: int | None = None
    stream: bool = True


class PlanOptions(_Model):
    """The loop options of a ``%%plan`` run, used again by its resume."""

    temperature: float | None = None
    max_tokens: int | None = None
    stream: bool = True
    max_rounds: int = PLAN_MAX_ROUNDS

    @model_validator(mode="before")
    @classmethod
    def _drop_system(cls, data: object) -> object:
        # Records saved before this field went carry ``system`` (never read on resume: the
        # system prompt is in the saved messages); they still load.
        if isinstance(data, dict) and "system" in data:
            return {k: v for k, v in data.items() if k != "system"}
        return data


class _PendingBase(_Model):
    version: Literal[1] = 1  # SCHEMA_VERSION
    call_id: str
    """The tool call the run waits on (the card's); a click must name it."""
    model: str
    """The profile the run continues on."""
    tools: list[str] = Field(default_factory=list)
    """The run's tool names (looked up again in another kernel)."""
    messages: list[Message]
    """The request messages to continue from."""
    turn_messages: list[Message]
    """The turn's messages so far, the user's first: what its session gets once it ends."""
    rounds: int = 0
    """Model requests made so far (a resume numbers on from here, within the same budget)."""
    persisted: int = 0
    """Leading ``turn_messages`` already written to the session."""
    output: dict[str, JsonValue] | None = None
    """A typed run's JSON schema: its resume checks the final answer again (in another
    kernel ``run.output`` is then a dict; in the same one, the model class kept aside)."""
    schema_retries: int = SCHEMA_RETRIES
    cache: bool | None = None
    """The first turn's ``cache`` option (``--cache``): the resumed part's client is behind the
    answer cache the same way."""
    card: QuestionCard | ApprovalCard = Field(discriminator="kind")
    """The card shown; its ``call_id`` is the run's."""

    def waiting_ask(self) -> WaitingAsk:
        """Which card the run waits on (for an answer source or log)."""
        return WaitingAsk(call_id=self.call_id, question=self.card.question, kind=self.card.kind)

    def to_json(self) -> JSONObject:
        """The JSON the store keeps."""
        return self.model_dump(mode="json")


class ToolloopPending(_PendingBase):
    """A ``%%toolloop`` run waiting on approval cards."""

    kind: Literal["toolloop"] = "toolloop"
    card: ApprovalCard
    """The card shown: the first of ``approvals`` (oldest call first)."""
    approvals: list[WaitingCall]
    """Every call of the round still waiting, in the order the model made them."""
    options: ToolloopOptions = Field(default_factory=ToolloopOptions)
    turn: TurnState = Field(default_factory=TurnState)
    stopped: bool = False
    """A call of the waiting round raised the stop signal: once every card is answered the
    run ends ``done`` without another request (docs/behaviour.md §2.7)."""


class PlanPending(_PendingBase):
    """A ``%%plan`` run waiting on its question or on an approval card."""

    kind: Literal["plan"] = "plan"
    options: PlanOptions = Field(default_factory=PlanOptions)
    plan_state: PlanRunState = Field(default_factory=PlanRunState)
    """The plan, the require-plan flag and the runtime-tool flag."""
    turn: TurnState | None = None
    """The runtime setup (``None``: a run saved without one)."""


PendingRun = Annotated[ToolloopPending | PlanPending, Field(discriminator="kind")]
"""A suspended run's saved state, by kind."""
_PENDING: TypeAdapter[ToolloopPending | PlanPending] = TypeAdapter(PendingRun)


# ----------------------------------------------------------------------------- loading
def load_pending(data: Mapping[str, object], run_id: str | None = None
                 ) -> ToolloopPending | PlanPending:
    """The :data:`PendingRun` saved as ``data`` (any version this code reads).

    Raises:
        ResumeError: one line, when ``data`` was saved by a newer jupyter-agent or is damaged.
    """
    where = f"Run {run_id}" if run_id else "This waiting run"
    version = data.get("version")
    if version is None:
        data = _from_unversioned(data)
    elif not isinstance(version, int) or isinstance(version, bool):
        raise ResumeError(f"{where} has a saved state of unknown version {version!r}; "
                          "it cannot be resumed.")
    elif version > SCHEMA_VERSION:
        raise ResumeError(f"{where} was saved by a newer jupyter-agent (saved state version "
                          f"{version}; this one reads up to {SCHEMA_VERSION}): update "
                          "jupyter-agent to resume it.")
    try:
        return _PENDING.validate_python(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        place = ".".join(str(p) for p in first["loc"]) or "(top)"
        raise ResumeError(f"{where} has a damaged saved state ({place}: {first['msg']}); "
                          "it cannot be resumed.") from None


def card_of(data: Mapping[str, object] | None) -> QuestionCard | ApprovalCard | None:
    """The card of a saved state, for listings (``None`` when it cannot be read)."""
    if not data:
        return None
    try:
        if data.get("kind") == "acp":  # an ACP agent's permission (acp/bridge.py)
            card = data.get("card")
            return parse_card(card if isinstance(card, Mapping) else {})
        return load_pending(data).card
    except (ResumeError, ValidationError):
        return None


def _from_unversioned(data: Mapping[str, object]) -> dict[str, object]:
    """A record written before versions existed, in the version-1 shape.

    Both kinds then held ``call_id``, ``ask`` (the card), ``messages``, ``model``, ``tools``,
    ``options``, ``state``, ``user_message``, ``rounds`` and ``persisted``; ``toolloop`` added
    ``approvals`` (items with ``ask``), ``persist`` and ``round``; ``plan`` added ``produced``
    and ``runtime``, and its ``state`` was the plan state (``toolloop``'s the turn state).
    """
    d = dict(data)
    kind = d.get("kind")
    user = d.get("user_message")
    out: dict[str, object] = {
        "version": SCHEMA_VERSION, "kind": kind, "call_id": d.get("call_id"),
        "card": d.get("ask"), "messages": d.get("messages"), "model": d.get("model", ""),
        "tools": d.get("tools") or [], "rounds": _count(d.get("rounds")),
        "persisted": _count(d.get("persisted")),
    }
    given = d.get("options")
    options = dict(given) if isinstance(given, Mapping) else {}
    if kind == "toolloop":
        out["approvals"] = [_waiting_call(w) for w in as_list(d.get("approvals"))]
        out["turn_messages"] = d.get("persist") or ([user] if user is not None else [])
        out["options"] = options
        out["turn"] = d.get("state") or {}
    elif kind == "plan":
        options.pop("rounds", None)  # a copy of ``rounds``
        out["turn_messages"] = [user, *as_list(d.get("produced"))] if user is not None else []
        out["options"] = options
        out["plan_state"] = d.get("state") or {}
        out["turn"] = d.get("runtime") or None
    return out


def _count(value: object) -> int:
    """A count as an old record wrote it (a number, maybe as text; absent: 0)."""
    return int(value) if isinstance(value, (int, float, str)) and value else 0


def _waiting_call(item: object) -> object:
    if not isinstance(item, Mapping):
        return item  # validation names it
    w = dict(item)
    if "ask" in w:
        w["card"] = w.pop("ask")
    return w


def parse_card(data: Mapping[str, object]) -> QuestionCard | ApprovalCard:
    """A card from the ``ask_pending`` fields (raises ``ValidationError`` when they do not fit)."""
    return _CARD.validate_python(dict(data))
