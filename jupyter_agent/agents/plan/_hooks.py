"""The kernel hooks of one ``%%plan`` loop run (docs/behaviour.md §6.3, §6.4, §6.14).

:class:`PlanHooks` gives the shared loop kernel the planning behaviour: ``tool_choice`` from the
plan state, internal tools run alone and uncompressed, ``update_plan`` and ``ask_agent`` routed
to the pure plan modules, the stop gate, and checkpoint compression above 80% of the window.
A fresh run and a resumed one build the same hooks; only the starting state differs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ...base.events import BaseEvent, PlanUpdated
from ...base.frozen_json import FrozenList, freeze
from ...base.jsontypes import JSONObject, JSONValue
from ...llm.protocol import ModelClient
from ...llm.types import Message, ToolCall
from ...loop.compress.checkpoint import below_checkpoint_threshold, compress_request_messages
from ...loop.compress.constants import MODULE_COMPRESS_MESSAGES
from ...loop.hooks import (
    ContextFit,
    LoopHooks,
    RequestControl,
    StopContext,
    StopDecision,
    ToolOutcome,
    UsageItem,
)
from ...tools.notebook.card_events import call_events, figure_images
from ...tools.registry import AnyTool, invoke_with_usage
from ..compression import compress_llm, tool_output_processor
from ..run import Run
from ..tooling import unknown_tool_message
from .approvals import plan_permission
from .ask import parse_ask_arguments
from .constants import INTERACTIVE_NOT_SUPPORTED, WAITING_FOR_USER_ANSWER
from .gate import StopGateCounter
from .run_state import PlanRunState
from .state import Plan, PlanStep
from .tools import ToolCatalog

if TYPE_CHECKING:
    from ...runtime.policy import PermissionContext

__all__ = ["PlanHooks", "GATE_FEEDBACK_PREFIX"]

GATE_FEEDBACK_PREFIX = "<stop_gate_feedback>"
"""How the kernel-injected stop-gate feedback messages start."""


def _hide_loop_messages(messages: list[Message]) -> list[Message]:
    """Mark the loop's own user messages (stop-gate feedback) hidden, so checkpoint compression
    does not take one of them for the user's newest message (§8.2)."""
    out: list[Message] = []
    for m in messages:
        content = m.get("content")
        if (m.get("role") == "user" and not m.get("hideInUI") and isinstance(content, str)
                and content.startswith(GATE_FEEDBACK_PREFIX)):
            m = dict(m, hideInUI=True)
        out.append(m)
    return out


class PlanHooks:
    """Planning behaviour for one kernel run; ``state`` is read and changed in place.

    Args:
        client: The model client (its profile gives the window; it makes compression calls).
        catalog: The normalised tool catalog (runtime tools, then ``ask_agent``, ``update_plan``).
        tools: The runtime :class:`Tool` objects by name.
        state: The plan state (fresh, or restored from a suspended run).
        emit: The run recorder's ``emit``.
        tools_tokens: Token count of the request's tool schemas (counted in every check).
    """

    def __init__(self, client: ModelClient, catalog: ToolCatalog, tools: dict[str, AnyTool],
                 state: PlanRunState, emit: Callable[[BaseEvent], None], tools_tokens: int,
                 permissions: PermissionContext | None = None) -> None:
        self.client = client
        self.catalog = catalog
        self.tools = tools
        self.state = state
        self.emit = emit
        self.tools_tokens = tools_tokens
        self.permissions = permissions  # None: no checks
        self.gate = StopGateCounter()  # refusals are counted per run part: a resume starts at 0
        self._process_output = tool_output_processor(client)
        self._compress = compress_llm(client, MODULE_COMPRESS_MESSAGES)
        # The steps the last plan_updated carried and their frozen JSON, place by place: an
        # update changes one step and keeps the others' objects, so only that step is dumped
        # again and the run's events share the rest (a 100-step plan is not 100 new dicts per
        # round, which the garbage collector would rescan with the whole kernel's heap).
        self._steps: list[PlanStep] = []
        self._step_json: list[JSONValue] = []

    def hooks(self) -> LoopHooks:
        """The :class:`LoopHooks` to hand to ``run_loop``."""
        return LoopHooks(
            run_tool=self.run_tool,
            can_batch=self.can_batch,
            on_stop_candidate=self.on_stop_candidate,
            request_control=self.request_control,
            fit_context=self.fit_context,
            process_tool_output=self._process_output,
        )

    # ------------------------------------------------------------------ per request
    def request_control(self, round_: int, snapshot: list[Message]) -> RequestControl:
        """``none`` when a plan exists and the gate would let the run stop (forced answer)."""
        return RequestControl(tool_choice=self.state.tool_choice())

    def can_batch(self, call: ToolCall) -> bool:
        """Internal tools run alone and in order; runtime tools batch unless they opt out."""
        if self.catalog.is_internal(call.name):
            return False
        t = self.tools.get(call.name)
        return t is None or t.batchable

    def fit_context(self, round_: int, messages: list[Message], tokens: int) -> ContextFit | None:
        """§6.14: above 80% of the window, replace the history by a model-written checkpoint
        (active plan in front, newest user message kept); truncate old rounds if that fails."""
        prof = self.client.profile
        if below_checkpoint_threshold(tokens, prof.max_context):
            return None  # before marking the loop's messages: that copies the whole history
        result = compress_request_messages(
            _hide_loop_messages(messages), prof.max_context, self.tools_tokens, self._compress,
            active_plan=self.state.active_plan, known_tokens=tokens)
        if result is None:
            return None
        usages = [UsageItem(u.module, prof.name, u.usage, self.client.cost(u.usage))
                  for u in result.usage]
        # Even a failed checkpoint call is billed and reported (§8.2).
        return ContextFit(messages=result.messages, tokens=result.tokens_after,
                          method=result.method, usages=usages)

    # ------------------------------------------------------------------ tools
    def run_tool(self, call: ToolCall, snapshot: list[Message]) -> ToolOutcome:
        """Route one call (§6.4): ``ask_agent``, ``update_plan`` or a runtime tool."""
        if call.name == self.catalog.ask_name:
            return self._ask(call, snapshot)
        if call.name == self.catalog.update_plan_name:
            return self._update_plan(call)
        return self._runtime(call, snapshot)

    def _update_plan(self, call: ToolCall) -> ToolOutcome:
        r = self.state.on_update_plan(call.arguments)
        if r.ok and r.plan is not None:
            self.emit(PlanUpdated(plan=self._plan_json(r.plan)))
        return ToolOutcome(output=r.message, error=None if r.ok else r.message,
                           skip_compress=True, internal=True)

    def _plan_json(self, plan: Plan) -> JSONObject:
        """``plan.to_json()``, reusing the JSON of steps unchanged since the last update
        (shared, never mutated: events are read-only). Steps and the list of them are frozen
        (``_frozen_json``): the recorder's secret scan and the store encode only the changed
        step's text, so a round's cost does not grow with the plan."""
        now, before, texts = list(plan.steps), self._steps, self._step_json
        if len(now) == len(before):  # update_step: one place changed (one comprehension)
            steps = [d if s is b else None for s, b, d in zip(now, before, texts, strict=True)]
        else:  # steps added, dropped or moved: find each by identity
            kept = {id(b): d for b, d in zip(before, texts, strict=True)}  # alive: ids unique
            steps = [kept.get(id(s)) for s in now]
        i = -1
        for _ in range(steps.count(None)):  # the changed steps (usually one): C-level scans
            i = steps.index(None, i + 1)
            steps[i] = freeze(now[i].to_json())
        self._steps, self._step_json = now, steps
        head = plan.model_dump(mode="json", by_alias=True, exclude_none=True, exclude={"steps"})
        out: JSONObject = {}
        for name, info in type(plan).model_fields.items():  # the field order of to_json()
            key = info.alias or name
            if name == "steps":
                out[key] = FrozenList(steps)
            elif key in head:
                out[key] = head[key]
        return out  # PlanUpdated copies this dict; its frozen steps are kept as they are

    def _ask(self, call: ToolCall, snapshot: list[Message]) -> ToolOutcome:
        parsed = parse_ask_arguments(call.arguments, tool_name=call.name)
        if parsed.ask is None:  # not a pause: the model reads the error and goes on (§6.10)
            return ToolOutcome(output=parsed.error or "", error=parsed.error, skip_compress=True,
                               internal=True)
        event = parsed.ask.pending_event(call.id)
        self.emit(event)
        # The saved context: the round's snapshot and an assistant message carrying only this
        # call. A later ask of the same round replaces it (the kernel keeps the last one).
        synthetic: Message = {"role": "assistant", "content": "",
                              "tool_calls": [call.to_message_part()]}
        interactive: JSONObject = {
            "ask": event.model_dump(mode="json", exclude={"type", "t"}),
            "messages": [*snapshot, synthetic],
            "state": self.state.to_json(),
        }
        return ToolOutcome(output=WAITING_FOR_USER_ANSWER, stop=True, skip_compress=True,
                           internal=True, interactive=interactive)

    def _runtime(self, call: ToolCall, snapshot: list[Message]) -> ToolOutcome:
        self.state.on_runtime_tool()  # set before running: a failing tool still counts
        t = self.tools.get(call.name)
        if t is None:
            msg = unknown_tool_message(call.name, self.catalog.names)
            return ToolOutcome(output=msg, error=msg)
        # Permission first: a denial is the result; an approval card suspends like an ask.
        blocked = plan_permission(call, t, self.permissions, snapshot, self.state.to_json(),
                                  self.emit)
        if blocked is not None:
            return blocked
        r, usages = invoke_with_usage(t, call.arguments)
        if isinstance(r.value, Run) and r.value.status == "ask":
            # An agent used as a tool that suspended on its own question: not supported inside
            # the planning loop (§6.4). Its Run is still kept as the value.
            return ToolOutcome(output=INTERACTIVE_NOT_SUPPORTED, value=r.value,
                               error=INTERACTIVE_NOT_SUPPORTED, seconds=r.seconds,
                               usages=usages)
        return ToolOutcome(output=r.output, value=r.value, error=r.error, stop=r.stop,
                           seconds=r.seconds, usages=usages, events=call_events(call.id, r.value),
                           images=figure_images(r.value))

    # ------------------------------------------------------------------ stopping
    def on_stop_candidate(self, ctx: StopContext) -> StopDecision:
        """The stop gate (§6.8): allow, refuse with feedback, or end ``incomplete``."""
        s = self.state
        verdict = self.gate.check(
            s.active_plan, require_plan=s.require_plan,
            runtime_tool_called_since_last_plan_update=s.runtime_tool_called_since_last_plan_update)
        if verdict.action == "stop":
            return StopDecision(allow=True, reason=verdict.decision.reason)
        if verdict.action == "retry":
            return StopDecision(allow=False, feedback=verdict.decision.feedback,
                                reason=verdict.decision.reason)
        return StopDecision(allow=False, status="incomplete", reason=verdict.incomplete_summary())
