"""The pure parts of the ``%%plan`` planning agent.

Plan state machine (``state``), internal tool schemas and catalog (``tools``), stop gate
(``gate``), require-plan detection (``require_plan``), ask validation and answers (``ask``),
the system prompt (``prompts``), the per-run planning state (``run_state``) and the display
records (``records``). Nothing here does I/O or calls a model; the loop calls these.

The agent itself (``plan``, ``resume_plan``, ``resume_hint`` in ``agent``) is exported lazily:
it imports the loop, the client and the store, which the pure modules must not pull in.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .ask import (
    ASK_INVALID_JSON,
    AskAnswer,
    AskParseResult,
    AskRequest,
    BlockerType,
    format_answer_for_model,
    parse_ask_arguments,
)
from .constants import (
    ASK_MAX_OPTIONS,
    ASK_MIN_OPTIONS,
    ASK_TOOL_NAME,
    BATCH_TOOL_SIZE,
    INTERACTIVE_NOT_SUPPORTED,
    INTERNAL_TOOL_NAMES,
    MAX_ROUNDS,
    MAX_STOP_GATE_REJECTIONS,
    RANDOM_ID_LENGTH,
    RESOLVED_STATUSES,
    UPDATE_PLAN_TOOL_NAME,
    WAITING_FOR_USER_ANSWER,
)
from .gate import (
    GateDecision,
    StopGateCounter,
    StopVerdict,
    evaluate_stop_gate,
    request_tool_choice,
    would_allow_stop,
)
from .prompts import MAIN_AGENT_MARKER, build_main_system_prompt
from .require_plan import last_user_text, should_require_plan, text_requires_plan
from .run_state import PlanRunState, build_initial_messages, final_answer_text
from .state import (
    Evidence,
    EvidenceKind,
    Plan,
    PlanOperation,
    PlanStep,
    PlanUpdateResult,
    ReplacePlanOperation,
    SetPlanOperation,
    StepStatus,
    UpdatePlanArgs,
    UpdateStepOperation,
    apply_plan_update,
    fallback_plan,
    merge_stable_completed_steps,
    parse_update_plan_args,
    progress_line,
    random_id,
)
from .tools import (
    ASK_AGENT_DESCRIPTION,
    UPDATE_PLAN_DESCRIPTION,
    ToolCatalog,
    ask_agent_tool_schema,
    normalize_catalog,
    runtime_tool_conflict_warning,
    update_plan_tool_schema,
)

if TYPE_CHECKING:  # what __getattr__ gives, as mypy should see it
    from .agent import plan, resume_hint, resume_plan

_LAZY = frozenset({"plan", "resume_plan", "resume_hint"})


def __getattr__(name: str) -> object:
    """``plan``, ``resume_plan`` and ``resume_hint`` from ``agent`` (which imports the loop,
    the client and the store), imported on first use."""
    if name in _LAZY:
        from . import agent

        return getattr(agent, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ASK_AGENT_DESCRIPTION",
    "ASK_INVALID_JSON",
    "ASK_MAX_OPTIONS",
    "ASK_MIN_OPTIONS",
    "ASK_TOOL_NAME",
    "BATCH_TOOL_SIZE",
    "INTERACTIVE_NOT_SUPPORTED",
    "INTERNAL_TOOL_NAMES",
    "MAIN_AGENT_MARKER",
    "MAX_ROUNDS",
    "MAX_STOP_GATE_REJECTIONS",
    "RANDOM_ID_LENGTH",
    "RESOLVED_STATUSES",
    "UPDATE_PLAN_DESCRIPTION",
    "UPDATE_PLAN_TOOL_NAME",
    "WAITING_FOR_USER_ANSWER",
    "AskAnswer",
    "AskParseResult",
    "AskRequest",
    "BlockerType",
    "Evidence",
    "EvidenceKind",
    "GateDecision",
    "Plan",
    "PlanOperation",
    "PlanRunState",
    "PlanStep",
    "PlanUpdateResult",
    "ReplacePlanOperation",
    "SetPlanOperation",
    "StepStatus",
    "StopGateCounter",
    "StopVerdict",
    "ToolCatalog",
    "UpdatePlanArgs",
    "UpdateStepOperation",
    "apply_plan_update",
    "ask_agent_tool_schema",
    "build_initial_messages",
    "build_main_system_prompt",
    "evaluate_stop_gate",
    "fallback_plan",
    "final_answer_text",
    "format_answer_for_model",
    "last_user_text",
    "merge_stable_completed_steps",
    "normalize_catalog",
    "parse_ask_arguments",
    "parse_update_plan_args",
    "plan",
    "progress_line",
    "random_id",
    "request_tool_choice",
    "resume_hint",
    "resume_plan",
    "runtime_tool_conflict_warning",
    "should_require_plan",
    "text_requires_plan",
    "update_plan_tool_schema",
    "would_allow_stop",
]
