"""Plan-related display records (spec: reference 3.9).

These are what the store keeps so a saved run can redraw its plan updates, asks and gate
refusals, and so a resume knows which call it answers. Field names follow the spec's JSON.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .constants import ASK_TOOL_NAME, UPDATE_PLAN_TOOL_NAME

__all__ = ["AgentLoopAsk", "AgentLoopPlanUpdate", "AgentLoopStopGate", "AgentPlanStatus"]


class _Record(BaseModel):
    model_config = ConfigDict(
        extra="ignore", validate_by_name=True, validate_by_alias=True, serialize_by_alias=True
    )


class AgentLoopPlanUpdate(_Record):
    """One ``update_plan`` call and its response."""

    id: str
    """The tool-call id."""
    function_name: str = Field(default=UPDATE_PLAN_TOOL_NAME, alias="functionName")
    params: str = ""
    """The raw arguments text."""
    response: str | None = None
    assistant_text: str | None = Field(default=None, alias="assistantText")
    reasoning_text: str | None = Field(default=None, alias="reasoningText")


class AgentLoopAsk(_Record):
    """One ``ask_agent`` call that suspended the run."""

    id: str
    function_name: str = Field(default=ASK_TOOL_NAME, alias="functionName")
    params: str
    plan_id: str | None = Field(default=None, alias="planId")
    assistant_text: str | None = Field(default=None, alias="assistantText")
    reasoning_text: str | None = Field(default=None, alias="reasoningText")


class AgentLoopStopGate(_Record):
    """One refusal of the stop gate, with the withdrawn draft."""

    id: str
    """``stop_gate_<requestIndex>_<requestId>``."""
    reason: str
    feedback: str
    assistant_text: str | None = Field(default=None, alias="assistantText")
    reasoning_text: str | None = Field(default=None, alias="reasoningText")


class AgentPlanStatus(_Record):
    """Shown while an ``update_plan`` call streams in: creating or updating the plan."""

    status: Literal["generating", "updating"]
