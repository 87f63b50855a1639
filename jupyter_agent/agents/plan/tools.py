"""Internal tool schemas and the tool catalog of ``%%plan`` (docs/behaviour.md §6.1, §6.5, §6.10).

The model sees the runtime tools first, then ``ask_agent``, then ``update_plan``. A runtime tool
that takes an internal tool's name is dropped with a warning, so the internal one always wins.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

from pydantic import BaseModel, Field

from ...base.jsontypes import JSONArray, JSONObject
from .constants import ASK_MAX_OPTIONS, ASK_MIN_OPTIONS, ASK_TOOL_NAME, UPDATE_PLAN_TOOL_NAME

__all__ = [
    "ASK_AGENT_DESCRIPTION",
    "UPDATE_PLAN_DESCRIPTION",
    "ToolCatalog",
    "ask_agent_tool_schema",
    "normalize_catalog",
    "runtime_tool_conflict_warning",
    "update_plan_tool_schema",
]

UPDATE_PLAN_DESCRIPTION = (
    "Create, update, or replace the active plan. Send one or more operations in updates; "
    "batch related step changes in a single call. set_plan and replace_plan require a "
    "complete plan object. update_step must only include "
    "stepId/status/evidence/outputSummary/blocker/needsReplan/reason; never include plan in "
    "update_step."
)
"""The ``update_plan`` tool description (docs/behaviour.md §6.5)."""

ASK_AGENT_DESCRIPTION = (
    "Ask the user only when required private input, unavailable required tools, or a "
    "completely ambiguous goal blocks planning."
)
"""The ``ask_agent`` tool description (docs/behaviour.md §6.10)."""

_STATUSES: JSONArray = ["pending", "in_progress", "done", "blocked", "skipped"]

_EVIDENCE_SCHEMA: JSONObject = {
    "type": "object",
    "properties": {
        "kind": {
            "type": "string",
            "enum": ["tool_result", "model_output", "user_input", "manual"],
            "description": "Where the evidence comes from.",
        },
        "ref": {"type": "string", "description": "Optional pointer: tool call id, file, URL."},
        "summary": {"type": "string", "description": "What the evidence shows."},
    },
    "required": ["kind", "summary"],
    "additionalProperties": False,
}

_STEP_SCHEMA: JSONObject = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "description": 'Short stable step id, e.g. "1".'},
        "title": {"type": "string"},
        "description": {"type": "string"},
        "acceptanceCriteria": {
            "type": "array",
            "items": {"type": "string"},
            "description": "How to tell the step is done.",
        },
        "status": {"type": "string", "enum": _STATUSES},
        "evidence": {"type": "array", "items": _EVIDENCE_SCHEMA},
        "outputSummary": {"type": "string"},
        "blocker": {"type": "string"},
        "needsReplan": {"type": "boolean"},
    },
    "required": ["id", "title", "description", "acceptanceCriteria", "status"],
    "additionalProperties": False,
}

_PLAN_SCHEMA: JSONObject = {
    "type": "object",
    "description": "A complete plan object.",
    "properties": {
        "task": {"type": "string", "description": "The goal, in one line."},
        "description": {"type": "string", "description": "How the plan reaches the goal."},
        "background": {"type": "string", "description": "Optional context worth keeping."},
        "steps": {"type": "array", "items": _STEP_SCHEMA, "minItems": 1},
    },
    "required": ["task", "description", "steps"],
    "additionalProperties": False,
}

_REASON_SCHEMA: JSONObject = {"type": "string", "description": "Why this change is made."}


def _plan_operation_schema(action: str, description: str) -> JSONObject:
    return {
        "type": "object",
        "description": description,
        "properties": {
            "action": {"type": "string", "enum": [action]},
            "plan": _PLAN_SCHEMA,
            "reason": _REASON_SCHEMA,
        },
        "required": ["action", "plan"],
        "additionalProperties": False,
    }


_UPDATE_STEP_SCHEMA: JSONObject = {
    "type": "object",
    "description": "Change one step of the active plan.",
    "properties": {
        "action": {"type": "string", "enum": ["update_step"]},
        "stepId": {
            "type": "string",
            "description": (
                "Required when action is update_step. update_step changes exactly one step; "
                "use multiple update_step operations for multiple steps."
            ),
        },
        "status": {"type": "string", "enum": _STATUSES},
        "evidence": {"type": "array", "items": _EVIDENCE_SCHEMA},
        "outputSummary": {"type": "string", "description": "What the step produced."},
        "blocker": {"type": "string", "description": "Required when status is blocked."},
        "needsReplan": {"type": "boolean", "description": "True when the plan no longer fits."},
        "reason": _REASON_SCHEMA,
    },
    "required": ["action", "stepId", "status"],
    "additionalProperties": False,
}


def update_plan_tool_schema(name: str = UPDATE_PLAN_TOOL_NAME) -> JSONObject:
    """The OpenAI function-tool dict advertised for ``update_plan`` (a fresh copy each call)."""
    schema: JSONObject = {
        "type": "function",
        "function": {
            "name": name,
            "description": UPDATE_PLAN_DESCRIPTION,
            "parameters": {
                "type": "object",
                "properties": {
                    "updates": {
                        "type": "array",
                        "description": (
                            "Ordered plan operations. Use multiple update_step operations in "
                            "one call when several steps changed together."
                        ),
                        "minItems": 1,
                        "items": {
                            "anyOf": [
                                _plan_operation_schema(
                                    "set_plan", "Create the plan, replacing any existing one."
                                ),
                                _UPDATE_STEP_SCHEMA,
                                _plan_operation_schema(
                                    "replace_plan",
                                    "Revise the plan; completed steps and the plan id are kept.",
                                ),
                            ]
                        },
                    },
                    "reason": {
                        "type": "string",
                        "description": "Overall reason for this batch update.",
                    },
                },
                "required": ["updates"],
                "additionalProperties": False,
            },
        },
    }
    # The module-level parts are shared; callers may edit their copy freely.
    return copy.deepcopy(schema)


def ask_agent_tool_schema(name: str = ASK_TOOL_NAME) -> JSONObject:
    """The OpenAI function-tool dict advertised for ``ask_agent``.

    ``descriptions`` (one line under each option) and ``allowOther`` (offer a free-text
    answer, default true) are our additions; the four other fields stay required.
    """
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": ASK_AGENT_DESCRIPTION,
            "parameters": {
                "type": "object",
                "properties": {
                    "reason": {
                        "type": "string",
                        "description": (
                            "Why this question is strictly required before planning can continue."
                        ),
                    },
                    "blockerType": {
                        "type": "string",
                        "enum": ["missing_required_input", "tool_unavailable", "ambiguous_goal"],
                    },
                    "question": {
                        "type": "string",
                        "description": "A short user-facing question, shown as the card title.",
                    },
                    "options": {
                        "type": "array",
                        "items": {"type": "string"},
                        "minItems": ASK_MIN_OPTIONS,
                        "maxItems": ASK_MAX_OPTIONS,
                        "description": (
                            "Three to five concise answer choices. Each item must be a "
                            "complete answer the user can pick as is."
                        ),
                    },
                    "descriptions": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "Optional: one short explanation per option, same order.",
                    },
                    "allowOther": {
                        "type": "boolean",
                        "description": (
                            "Optional: whether the user may type their own answer (default true)."
                        ),
                    },
                },
                "required": ["reason", "blockerType", "question", "options"],
                "additionalProperties": False,
            },
        },
    }


def runtime_tool_conflict_warning(name: str) -> str:
    """``Runtime tool "<name>" conflicts with internal agent tool.``"""
    return f'Runtime tool "{name}" conflicts with internal agent tool.'


def _tool_name(tool: object) -> str:
    if isinstance(tool, str):
        return tool
    if isinstance(tool, dict):
        function = tool.get("function")
        if isinstance(function, dict) and "name" in function:
            return str(function["name"])
        return str(tool.get("name", ""))
    return str(getattr(tool, "name", ""))


def _tool_schema(tool: object) -> JSONObject | None:
    if isinstance(tool, str):
        return None
    if isinstance(tool, dict):
        if "function" in tool:
            return tool
        return {"type": "function", "function": tool}
    schema = getattr(tool, "schema", None)
    return schema() if callable(schema) else None


class ToolCatalog(BaseModel):
    """The tools one ``%%plan`` run offers, in the order the model sees them."""

    runtime_tools: list[object] = Field(default_factory=list)
    """The kept runtime tools, as they were given (names, schema dicts or tool objects)."""
    runtime_names: list[str] = Field(default_factory=list)
    ask_name: str | None = ASK_TOOL_NAME
    update_plan_name: str | None = UPDATE_PLAN_TOOL_NAME
    warnings: list[str] = Field(default_factory=list)
    """One ``Runtime tool "<name>" conflicts with internal agent tool.`` per dropped tool."""

    @property
    def has_runtime_tools(self) -> bool:
        """True when at least one runtime tool is left after normalisation."""
        return bool(self.runtime_names)

    @property
    def internal_names(self) -> list[str]:
        """Names of the internal tools offered (ask first, then plan)."""
        return [n for n in (self.ask_name, self.update_plan_name) if n]

    @property
    def names(self) -> list[str]:
        """Every tool name, in the order shown: runtime, ``ask_agent``, ``update_plan``."""
        return [*self.runtime_names, *self.internal_names]

    def is_internal(self, name: str) -> bool:
        """True for the ask and plan tools (which never batch and skip compression)."""
        return name in self.internal_names

    def schemas(self) -> list[JSONObject]:
        """The ``tools`` list of a request, in the order shown.

        Runtime tools given only by name contribute no schema: the caller then builds those.
        """
        out: list[JSONObject] = []
        for tool in self.runtime_tools:
            schema = _tool_schema(tool)
            if schema is not None:
                out.append(schema)
        if self.ask_name:
            out.append(ask_agent_tool_schema(self.ask_name))
        if self.update_plan_name:
            out.append(update_plan_tool_schema(self.update_plan_name))
        return out


def normalize_catalog(
    runtime_tools: Sequence[object],
    *,
    ask_name: str | None = ASK_TOOL_NAME,
    update_plan_name: str | None = UPDATE_PLAN_TOOL_NAME,
) -> ToolCatalog:
    """Build the catalog: drop runtime tools named like an internal tool, keep the order.

    ``runtime_tools`` items may be names, OpenAI function-tool dicts (or their bare
    ``function`` part) or objects with ``name`` and ``schema()`` (registry tools). Pass
    ``ask_name=None`` or ``update_plan_name=None`` to leave that internal tool out.
    """
    reserved = {ask_name, update_plan_name} - {None}
    kept: list[object] = []
    names: list[str] = []
    warnings: list[str] = []
    for tool in runtime_tools:
        name = _tool_name(tool)
        if name in reserved:
            warnings.append(runtime_tool_conflict_warning(name))
            continue
        kept.append(tool)
        names.append(name)
    return ToolCatalog(
        runtime_tools=kept,
        runtime_names=names,
        ask_name=ask_name,
        update_plan_name=update_plan_name,
        warnings=warnings,
    )
