"""The planning state one ``%%plan`` run carries from round to round (pure; no I/O).

``PlanRunState`` holds what the loop keeps and a suspended run saves (docs/behaviour.md
§6.2): the active plan, whether the user asked for a plan, and whether a runtime tool ran
since the last successful plan update. It is plain data, so a suspended run saves it as JSON
and a resume restores it unchanged. The stop-gate refusal count is not part of it: it starts
again at 0 on every resume (``gate.StopGateCounter``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ...base.jsontypes import JSONObject
from ...llm.types import Message
from .gate import GateDecision, evaluate_stop_gate, request_tool_choice
from .prompts import build_main_system_prompt
from .require_plan import should_require_plan
from .state import Plan, PlanUpdateResult, UpdatePlanArgs, apply_plan_update

__all__ = ["PlanRunState", "build_initial_messages", "final_answer_text"]


class PlanRunState(BaseModel):
    """Active plan, require-plan flag and the runtime-tool flag of one run."""

    model_config = ConfigDict(
        validate_by_name=True, validate_by_alias=True, serialize_by_alias=True
    )

    active_plan: Plan | None = Field(default=None, alias="activePlan")
    require_plan: bool = Field(default=False, alias="requirePlan")
    runtime_tool_called_since_last_plan_update: bool = Field(
        default=False, alias="runtimeToolCalledSinceLastPlanUpdate"
    )

    @classmethod
    def start(
        cls, messages: Iterable[Mapping[str, object]], active_plan: Plan | None = None
    ) -> PlanRunState:
        """The state of a fresh run: ``require_plan`` is worked out once, from ``messages``."""
        return cls(active_plan=active_plan, require_plan=should_require_plan(messages))

    def _runtime_flag(self) -> bool:
        return self.runtime_tool_called_since_last_plan_update

    def tool_choice(self) -> Literal["auto", "none"]:
        """``tool_choice`` for the next request (``none`` when the gate would allow a stop)."""
        return request_tool_choice(
            self.active_plan,
            require_plan=self.require_plan,
            runtime_tool_called_since_last_plan_update=self._runtime_flag(),
        )

    def on_update_plan(
        self, arguments: str | Mapping[str, object] | UpdatePlanArgs | None
    ) -> PlanUpdateResult:
        """Apply an ``update_plan`` call; on success adopt the plan and clear the runtime flag.

        ``result.message`` is the tool response either way; emit ``plan_updated`` when
        ``result.ok``. A failed update leaves the plan and the flag as they were.
        """
        # The old plan is dropped here, so the new one may share its unchanged steps.
        result = apply_plan_update(self.active_plan, arguments, isolate=False)
        if result.ok:
            self.active_plan = result.plan
            self.runtime_tool_called_since_last_plan_update = False
        return result

    def on_runtime_tool(self) -> None:
        """Call before running any runtime tool (the flag is set even if the tool fails)."""
        self.runtime_tool_called_since_last_plan_update = True

    def gate(self) -> GateDecision:
        """The stop gate's decision for the current state (no counting)."""
        return evaluate_stop_gate(
            self.active_plan,
            require_plan=self.require_plan,
            runtime_tool_called_since_last_plan_update=self._runtime_flag(),
        )

    def to_json(self) -> JSONObject:
        """The JSON form saved with a suspended run (``activePlan``, ``requirePlan``, ...)."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


def build_initial_messages(
    messages: Iterable[Message],
    *,
    system_prompt: str | None = None,
    has_runtime_tools: bool,
) -> list[Message]:
    """A fresh run's messages: the planning prompt, then ``messages`` minus every system one.

    The caller's own system text belongs in ``system_prompt`` (it lands in
    ``<user_background>``). On a resume the saved messages are used instead (no new prompt).
    """
    system = build_main_system_prompt(system_prompt, has_runtime_tools=has_runtime_tools)
    rest = [dict(m) for m in messages if m.get("role") != "system"]
    return [{"role": "system", "content": system}, *rest]


def final_answer_text(assistant_messages: Iterable[Mapping[str, object]]) -> str:
    """The answer of a finished run: text of assistant messages without tool calls, joined.

    Text that came with tool calls is left out; withdrawn drafts must not be passed in.
    """
    parts: list[str] = []
    for message in assistant_messages:
        if message.get("role", "assistant") != "assistant" or message.get("tool_calls"):
            continue
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
    return "".join(parts)
