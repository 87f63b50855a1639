"""The view state of a run: what every renderer draws, reduced from the run's events.

The live widget syncs this state as traits, and the static MIME payload carries it next to the
events, so the widget and the JupyterLab renderer draw the same thing from the same data. It is
plain JSON (dicts and lists) on purpose: it crosses to JavaScript unchanged.

Shape::

    {
      "run_id", "agent", "model", "prompt", "session", "status",   # status: running/done/ask/...
      "started_at": float | None,  # epoch seconds the run last began running (run_started, or
                                   # ask_answered for a resume): with footer.seconds, the elapsed
                                   # time a running card shows
      "items": [                 # in display order
        {"kind": "reasoning", "round", "text"},
        {"kind": "text", "round", "text", "withdrawn": bool},
        {"kind": "tool", "round", "call_id", "name", "arguments", "output", "error",
         "seconds", "state": "queued"|"running"|"done"|"error", "internal": bool,
         "started_at": float | None,   # queued: announced, not started (tool_started
                                       # makes it running, from started_at, epoch seconds)
         "figures": [{"index", "png", "width", "height", "description"}],  # run_python drew
         "proposal": {"id", "source", "kind", "explanation", "status"},    # insert_cell
         "changes": {"record_id", "tool", "added", "changed", "removed", "names", "held",
                     "held_count", "undo_note",              # a sandboxed command changed
                     "decided": [{"action", "ok", "message"}]}},  # the workspace; clicks
        {"kind": "gate", "round", "reason", "feedback"},
        {"kind": "warning", "message"},
        {"kind": "compressed", "round", "method", "tokens_before", "tokens_after"},
        {"kind": "ask"|"approval", ...}   # an answered ask: a copy of "ask" below
      ],
      "tools": [str] | None,     # the tools offered (tools_offered); None: none were offered
      "role": {"name", "source"},  # only when a named agent ran (tools_offered): its name and
                                 # why (user: the cell named it; session: bound; intent)
                                 # (%%chat)
      "plan_status": "generating"|"updating"|None,  # an update_plan call is on its way
                                 # (plan_status); cleared when it returns or the run ends
      "plan": {...} | None,      # the active plan (agents.plan.state.Plan as JSON)
      "ask": {"call_id", "kind", "question", "options", "descriptions", "allow_other",
              "detail", "answered": None | {"how", "answer", "option_index"},
              "recorded_option": int,   # only in replay mode, while it waits: the option the
                                        # recording answered with (agents.resume.mark_recorded)
              "refused": {"message", "seq"}}  # a click the kernel refused while the question
                                        # still waits (magics._on_click); seq counts refusals
              | None,
      "answer": str,             # the final answer (withdrawn drafts excluded)
      "output": {"schema", "valid", "data", "errors", "attempts"},  # only for a typed run
                                 # (output_checked): the instance as JSON, or what failed
      "error": str | None,
      "hint": str,               # only while the run waits: how to answer it from a new cell
                                 # (set by the live display, not by an event)
      "footer": {"model", "rounds", "input_tokens", "output_tokens", "cost", "seconds",
                 "estimated": bool, "unpriced": bool},
                 # tokens and cost are None while unknown (no model call accounted); cost
                 # stays None once a call of a model without prices is ("unpriced")
                 # + "cached": int, "saved": float once a round came from the answer cache
    }
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from ..base.events import (
    AskAnswered,
    AskPending,
    BaseEvent,
    CellProposed,
    ContextCompressed,
    OutputChecked,
    PlanStatus,
    PlanUpdated,
    ReasoningDelta,
    RoundRetried,
    RoundStarted,
    RunFailed,
    RunFinished,
    RunStarted,
    StopGateFeedback,
    TextDelta,
    ToolArgsDelta,
    ToolCalled,
    ToolFigures,
    ToolReturned,
    ToolsOffered,
    ToolStarted,
    UsageRecorded,
    Warning_,
    WorkspaceChanged,
)
from ..base.jsontypes import (
    JSONArray,
    JSONObject,
    as_object,
    bool_field,
    float_field,
    int_field,
    str_field,
)

__all__ = ["new_view", "reduce_event", "reduce_events", "withdraw_ask"]


def new_view() -> JSONObject:
    """An empty view state."""
    return {
        "run_id": "",
        "agent": "",
        "model": "",
        "prompt": "",
        "session": None,
        "status": "running",
        "started_at": None,
        "items": [],
        "tools": None,
        "plan_status": None,
        "plan": None,
        "ask": None,
        "answer": "",
        "error": None,
        "footer": {
            "model": "",
            "rounds": 0,
            "input_tokens": None,
            "output_tokens": None,
            "cost": None,
            "seconds": 0.0,
            "parts": 0,
            "estimated": False,
            "unpriced": False,
        },
    }


def _items(view: JSONObject) -> JSONArray:
    """The view's item list, changed in place by the reducers (made when a view lacks it)."""
    items = view.get("items")
    if not isinstance(items, list):
        items = view["items"] = []
    return items


def _footer(view: JSONObject) -> JSONObject:
    """The view's footer, changed in place by the reducers (made when a view lacks it)."""
    footer = view.get("footer")
    if not isinstance(footer, dict):
        footer = view["footer"] = new_view()["footer"]
        assert isinstance(footer, dict)
    return footer


def _last_item(view: JSONObject, kind: str, round_: int) -> JSONObject | None:
    items = view.get("items")  # not _items(): once per streamed piece, the call shows
    last = items[-1] if isinstance(items, list) and items else None
    if isinstance(last, dict) and last.get("kind") == kind and last.get("round") == round_:
        return last
    return None


def _find_tool(view: JSONObject, call_id: str) -> JSONObject | None:
    # Newest first, without copying the list: every streamed argument piece looks its call
    # up, and the call is almost always the last item of a view that grows every round.
    for item in reversed(_items(view)):
        if isinstance(item, dict) and item.get("kind") == "tool" and item.get("call_id") == call_id:
            return item
    return None


E = TypeVar("E", bound=BaseEvent)

Reducer = Callable[[JSONObject, BaseEvent], None]
"""What one event type does to ``view`` (changed in place)."""


def _on(cls: type[E], fn: Callable[[JSONObject, E], None]) -> tuple[str, Reducer]:
    """``fn`` as the reducer of ``cls``'s type name, keyed by that name (so a name is never
    paired with another class): ``fn`` sees the event with its real type, and an event of
    another class under that name (a newer version's) changes nothing."""

    def reduce(view: JSONObject, event: BaseEvent) -> None:
        if isinstance(event, cls):
            fn(view, event)

    return str(cls.model_fields["type"].default), reduce


def _delta(view: JSONObject, e: TextDelta | ReasoningDelta) -> None:
    """``text_delta``/``reasoning_delta``: appended to the round's text (or reasoning) item."""
    item_kind = "text" if e.type == "text_delta" else "reasoning"
    last = _last_item(view, item_kind, e.round)
    if last is None:
        last = {"kind": item_kind, "round": e.round, "text": ""}
        if item_kind == "text":
            last["withdrawn"] = False
        _items(view).append(last)
    text = last.get("text")  # not str_field: once per streamed piece, the call shows
    last["text"] = (text if isinstance(text, str) else "") + e.text


def _tool_called(view: JSONObject, e: ToolCalled) -> None:
    _items(view).append({
        "kind": "tool", "round": e.round, "call_id": e.call_id, "name": e.name,
        "arguments": e.arguments, "output": "", "error": None, "seconds": 0.0,
        "state": "queued", "internal": e.name in ("update_plan", "ask_agent"),
        "started_at": None,
    })


def _tool_started(view: JSONObject, e: ToolStarted) -> None:
    card = _find_tool(view, e.call_id)
    if card is not None:
        card.update(state="running", started_at=e.t)


def _tool_args_delta(view: JSONObject, e: ToolArgsDelta) -> None:
    card = _find_tool(view, e.call_id)
    if card is not None:
        arguments = card.get("arguments")
        card["arguments"] = (arguments if isinstance(arguments, str) else "") + e.delta


def _tool_returned(view: JSONObject, e: ToolReturned) -> None:
    card = _find_tool(view, e.call_id)
    if card is None:
        card = {"kind": "tool", "round": e.round, "call_id": e.call_id, "name": e.name,
                "arguments": "", "internal": e.internal}
        _items(view).append(card)
    if e.name == "update_plan":
        view["plan_status"] = None  # the update ran (or failed): nothing is on its way
    card.update(
        output=e.output,
        error=e.error,
        seconds=e.seconds,
        state="error" if e.error else "done",
        internal=e.internal or bool_field(card, "internal"),
    )


def _workspace_changed(view: JSONObject, e: WorkspaceChanged) -> None:
    card = _find_tool(view, e.call_id)
    if card is not None:
        # ``decided``: what a person's click did (set by the kernel, docs/sandbox.md).
        held: JSONArray = [dict(h) for h in e.held]
        card["changes"] = {
            "record_id": e.record_id, "tool": e.tool, "added": e.added, "changed": e.changed,
            "removed": e.removed, "names": list(e.names), "held": held,
            "held_count": e.held_count, "undo_note": e.undo_note, "decided": [],
        }


def _tool_figures(view: JSONObject, e: ToolFigures) -> None:
    card = _find_tool(view, e.call_id)
    if card is not None:
        figures: JSONArray = [dict(f) for f in e.figures]
        card["figures"] = figures


def _cell_proposed(view: JSONObject, e: CellProposed) -> None:
    card = _find_tool(view, e.call_id)
    proposal: JSONObject = dict(e.proposal)
    if card is not None:
        card["proposal"] = proposal
    else:  # proposed outside a tool card: still shown, as its own item
        _items(view).append({"kind": "proposal", "proposal": proposal})


def _usage(view: JSONObject, e: UsageRecorded) -> None:
    f = _footer(view)
    f["input_tokens"] = int_field(f, "input_tokens") + e.input_tokens
    f["output_tokens"] = int_field(f, "output_tokens") + e.output_tokens
    # One call of a model without prices makes the total unknown (events saved before
    # `priced` existed were priced: the field's default).
    unpriced = bool_field(f, "unpriced") or not e.priced
    f["unpriced"] = unpriced
    f["cost"] = None if unpriced else float_field(f, "cost") + e.cost
    f["estimated"] = bool_field(f, "estimated") or e.estimated
    if e.cached:  # answered from the cache (events saved before caching lack it: False)
        f["cached"] = int_field(f, "cached") + 1
        f["saved"] = float_field(f, "saved") + e.saved
    if e.model:
        f["model"] = e.model


def _round_started(view: JSONObject, e: RoundStarted) -> None:
    f = _footer(view)
    f["rounds"] = max(int_field(f, "rounds"), e.round)


def _plan_updated(view: JSONObject, e: PlanUpdated) -> None:
    view["plan"] = e.plan


def _tools_offered(view: JSONObject, e: ToolsOffered) -> None:
    tools: JSONArray = list(e.tools)
    view["tools"] = tools
    if e.agent:  # the card names the agent that ran (events saved before lack it)
        view["role"] = {"name": e.agent, "source": e.agent_source}


def _plan_status(view: JSONObject, e: PlanStatus) -> None:
    view["plan_status"] = e.status


def _ask_pending(view: JSONObject, e: AskPending) -> None:
    options: JSONArray = list(e.options)
    descriptions: JSONArray = list(e.descriptions)
    view["ask"] = {
        "call_id": e.call_id,
        "kind": e.kind,
        "question": e.question,
        "options": options,
        "descriptions": descriptions,
        "allow_other": e.allow_other,
        "detail": dict(e.detail),
        "answered": None,
    }
    view["status"] = "ask"


def _ask_answered(view: JSONObject, e: AskAnswered) -> None:
    ask = as_object(view.get("ask"))
    if ask is not None and ask.get("call_id") == e.call_id:
        ask["answered"] = {"how": e.how, "answer": e.answer, "option_index": e.option_index}
        # Keep a record of the answered ask in the item flow, so a run with several asks
        # shows each one where it happened.
        # (What only a waiting card shows, the recorded option and a refusal, is not kept.)
        _items(view).append({"kind": "ask", **{k: v for k, v in ask.items()
                                               if k not in ("recorded_option", "refused")}})
        view["ask"] = None
    view["started_at"] = e.t  # the run goes on from here (its earlier time is in the footer)
    card = _find_tool(view, e.call_id)
    if card is not None:
        # The call's card said "Waiting for user answer."; it now shows what happened.
        said = "Dismissed." if e.how == "dismissed" else f"Answered: {e.answer}"
        card.update(output=said, state="done", error=None)
    view["status"] = "running"


def _round_retried(view: JSONObject, e: RoundRetried) -> None:
    # The partial output of a dropped stream is replaced by the retry's output.
    def dropped(it: JSONObject) -> bool:
        if it.get("round") != e.round:
            return False
        kind = it.get("kind")
        return kind in ("text", "reasoning") or (
            kind == "tool" and it.get("state") in ("queued", "running"))

    kept: JSONArray = [it for it in _items(view) if not (isinstance(it, dict) and dropped(it))]
    kept.append({"kind": "warning", "message": f"Round {e.round} retried: {e.reason}"})
    view["items"] = kept


def _stop_gate_feedback(view: JSONObject, e: StopGateFeedback) -> None:
    items = _items(view)
    for item in items:
        if isinstance(item, dict) and item.get("kind") == "text" and item.get("round") == e.round:
            item["withdrawn"] = True
    items.append({"kind": "gate", "round": e.round, "reason": e.reason, "feedback": e.feedback})


def _context_compressed(view: JSONObject, e: ContextCompressed) -> None:
    _items(view).append({"kind": "compressed", "round": e.round, "method": e.method,
                         "tokens_before": e.tokens_before, "tokens_after": e.tokens_after})


def _warning(view: JSONObject, e: Warning_) -> None:
    item: JSONObject = {"kind": "warning", "message": e.message}
    if e.level == "note":  # a calm line (events.Warning_); absent means a warning
        item["level"] = "note"
    _items(view).append(item)


def _output_checked(view: JSONObject, e: OutputChecked) -> None:
    errors: JSONArray = list(e.errors)
    view["output"] = {"schema": e.schema_name, "valid": e.valid, "data": e.data,
                      "errors": errors, "attempts": e.attempts}


def _run_started(view: JSONObject, e: RunStarted) -> None:
    view.update(run_id=e.run_id, agent=e.agent, model=e.model, prompt=e.prompt,
                session=e.session, status="running", started_at=e.t)
    _footer(view)["model"] = e.model


def _run_finished(view: JSONObject, e: RunFinished) -> None:
    view["plan_status"] = None
    view["status"] = e.status
    view["answer"] = e.answer
    view["error"] = e.error
    f = _footer(view)
    f["seconds"] = float_field(f, "seconds") + e.seconds
    # A run resumed after its question ran in parts: the footer shows the sum and the count.
    f["parts"] = int_field(f, "parts") + 1
    f["rounds"] = max(int_field(f, "rounds"), e.rounds)


def _run_failed(view: JSONObject, e: RunFailed) -> None:
    view["status"] = "error"
    view["error"] = e.error


REDUCERS: dict[str, Reducer] = dict([
    _on(TextDelta, _delta),
    _on(ReasoningDelta, _delta),
    _on(ToolCalled, _tool_called),
    _on(ToolStarted, _tool_started),
    _on(ToolArgsDelta, _tool_args_delta),
    _on(ToolReturned, _tool_returned),
    _on(ToolFigures, _tool_figures),
    _on(WorkspaceChanged, _workspace_changed),
    _on(CellProposed, _cell_proposed),
    _on(UsageRecorded, _usage),
    _on(RoundStarted, _round_started),
    _on(PlanUpdated, _plan_updated),
    _on(ToolsOffered, _tools_offered),
    _on(PlanStatus, _plan_status),
    _on(AskPending, _ask_pending),
    _on(AskAnswered, _ask_answered),
    _on(RoundRetried, _round_retried),
    _on(StopGateFeedback, _stop_gate_feedback),
    _on(ContextCompressed, _context_compressed),
    _on(Warning_, _warning),
    _on(OutputChecked, _output_checked),
    _on(RunStarted, _run_started),
    _on(RunFinished, _run_finished),
    _on(RunFailed, _run_failed),
])
"""What each event type does to the view (an event type not listed changes nothing)."""


def reduce_event(view: JSONObject, event: BaseEvent) -> JSONObject:
    """Apply one event to ``view`` in place and return it."""
    reducer = REDUCERS.get(getattr(event, "type", ""))
    if reducer is not None:
        reducer(view, event)
    return view


def withdraw_ask(view: JSONObject, reason: str) -> JSONObject:
    """The run's waiting question was withdrawn without an answer (superseded): the card
    keeps the question, closed (no buttons), and says why; the run ends ``superseded``."""
    ask = as_object(view.get("ask"))
    if ask is not None and not ask.get("answered"):
        ask["answered"] = {"how": "dismissed", "answer": "", "option_index": None}
        _items(view).append({"kind": "ask", **ask})
        view["ask"] = None
        card = _find_tool(view, str_field(ask, "call_id"))
        if card is not None:
            card.update(output="Withdrawn: no answer will be taken.", state="done", error=None)
    view["status"] = "superseded"
    view["error"] = reason
    return view


def reduce_events(events: Sequence[BaseEvent], view: JSONObject | None = None) -> JSONObject:
    """Reduce a list of events into a (new or given) view state."""
    view = view if view is not None else new_view()
    for e in events:
        reduce_event(view, e)
    return view
