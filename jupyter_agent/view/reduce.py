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
from typing import Any

from ..base.events import BaseEvent

__all__ = ["new_view", "reduce_event", "reduce_events", "withdraw_ask"]


def new_view() -> dict[str, Any]:
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


def _last_item(view: dict[str, Any], kind: str, round_: int) -> dict[str, Any] | None:
    items: list[dict[str, Any]] = view["items"]
    if items and items[-1]["kind"] == kind and items[-1].get("round") == round_:
        return items[-1]
    return None


def _find_tool(view: dict[str, Any], call_id: str) -> dict[str, Any] | None:
    items: list[dict[str, Any]] = view["items"]
    # Newest first, without copying the list: every streamed argument piece looks its call
    # up, and the call is almost always the last item of a view that grows every round.
    item: dict[str, Any]
    for item in reversed(items):
        if item["kind"] == "tool" and item["call_id"] == call_id:
            return item
    return None


# One reducer per event type: ``view`` (changed in place) and the event's fields.
Reducer = Callable[[dict[str, Any], dict[str, Any]], None]


def _delta(view: dict[str, Any], d: dict[str, Any]) -> None:
    """``text_delta``/``reasoning_delta``: appended to the round's text (or reasoning) item."""
    item_kind = "text" if d["type"] == "text_delta" else "reasoning"
    last = _last_item(view, item_kind, d["round"])
    if last is None:
        last = {"kind": item_kind, "round": d["round"], "text": ""}
        if item_kind == "text":
            last["withdrawn"] = False
        view["items"].append(last)
    last["text"] += d["text"]


def _tool_called(view: dict[str, Any], d: dict[str, Any]) -> None:
    view["items"].append({
        "kind": "tool", "round": d["round"], "call_id": d["call_id"], "name": d["name"],
        "arguments": d["arguments"], "output": "", "error": None, "seconds": 0.0,
        "state": "queued", "internal": d["name"] in ("update_plan", "ask_agent"),
        "started_at": None,
    })


def _tool_started(view: dict[str, Any], d: dict[str, Any]) -> None:
    card = _find_tool(view, d["call_id"])
    if card is not None:
        card.update(state="running", started_at=d["t"])


def _tool_args_delta(view: dict[str, Any], d: dict[str, Any]) -> None:
    card = _find_tool(view, d["call_id"])
    if card is not None:
        card["arguments"] += d["delta"]


def _tool_returned(view: dict[str, Any], d: dict[str, Any]) -> None:
    card = _find_tool(view, d["call_id"])
    if card is None:
        card = {"kind": "tool", "round": d["round"], "call_id": d["call_id"], "name": d["name"],
                "arguments": "", "internal": d["internal"]}
        view["items"].append(card)
    if d["name"] == "update_plan":
        view["plan_status"] = None  # the update ran (or failed): nothing is on its way
    card.update(
        output=d["output"],
        error=d["error"],
        seconds=d["seconds"],
        state="error" if d["error"] else "done",
        internal=d["internal"] or card.get("internal", False),
    )


def _workspace_changed(view: dict[str, Any], d: dict[str, Any]) -> None:
    card = _find_tool(view, d["call_id"])
    if card is not None:
        # ``decided``: what a person's click did (set by the kernel, docs/sandbox.md).
        card["changes"] = {k: d[k] for k in (
            "record_id", "tool", "added", "changed", "removed", "names", "held", "held_count",
            "undo_note")} | {"decided": []}


def _tool_figures(view: dict[str, Any], d: dict[str, Any]) -> None:
    card = _find_tool(view, d["call_id"])
    if card is not None:
        card["figures"] = [dict(f) for f in d["figures"]]


def _cell_proposed(view: dict[str, Any], d: dict[str, Any]) -> None:
    card = _find_tool(view, d["call_id"])
    if card is not None:
        card["proposal"] = dict(d["proposal"])
    else:  # proposed outside a tool card: still shown, as its own item
        view["items"].append({"kind": "proposal", "proposal": dict(d["proposal"])})


def _usage(view: dict[str, Any], d: dict[str, Any]) -> None:
    f = view["footer"]
    f["input_tokens"] = (f["input_tokens"] or 0) + d["input_tokens"]
    f["output_tokens"] = (f["output_tokens"] or 0) + d["output_tokens"]
    # One call of a model without prices makes the total unknown (events saved before
    # `priced` existed were priced).
    f["unpriced"] = f.get("unpriced", False) or not d.get("priced", True)
    f["cost"] = None if f["unpriced"] else (f["cost"] or 0.0) + d["cost"]
    f["estimated"] = f["estimated"] or d["estimated"]
    if d.get("cached"):  # answered from the cache (events saved before caching lack it)
        f["cached"] = f.get("cached", 0) + 1
        f["saved"] = f.get("saved", 0.0) + d.get("saved", 0.0)
    if d["model"]:
        f["model"] = d["model"]


def _round_started(view: dict[str, Any], d: dict[str, Any]) -> None:
    view["footer"]["rounds"] = max(view["footer"]["rounds"], d["round"])


def _plan_updated(view: dict[str, Any], d: dict[str, Any]) -> None:
    view["plan"] = d["plan"]


def _tools_offered(view: dict[str, Any], d: dict[str, Any]) -> None:
    view["tools"] = list(d["tools"])
    if d.get("agent"):  # the card names the agent that ran (events saved before lack it)
        view["role"] = {"name": str(d["agent"]), "source": d.get("agent_source")}


def _plan_status(view: dict[str, Any], d: dict[str, Any]) -> None:
    view["plan_status"] = d["status"]


def _ask_pending(view: dict[str, Any], d: dict[str, Any]) -> None:
    view["ask"] = {
        "call_id": d["call_id"],
        "kind": d["kind"],
        "question": d["question"],
        "options": list(d["options"]),
        "descriptions": list(d["descriptions"]),
        "allow_other": d["allow_other"],
        "detail": dict(d["detail"]),
        "answered": None,
    }
    view["status"] = "ask"


def _ask_answered(view: dict[str, Any], d: dict[str, Any]) -> None:
    ask = view.get("ask")
    if ask is not None and ask["call_id"] == d["call_id"]:
        ask["answered"] = {"how": d["how"], "answer": d["answer"], "option_index": d["option_index"]}
        # Keep a record of the answered ask in the item flow, so a run with several asks
        # shows each one where it happened.
        # (What only a waiting card shows, the recorded option and a refusal, is not kept.)
        view["items"].append({"kind": "ask", **{k: v for k, v in ask.items()
                                                if k not in ("recorded_option", "refused")}})
        view["ask"] = None
    view["started_at"] = d["t"]  # the run goes on from here (its earlier time is in the footer)
    card = _find_tool(view, d["call_id"])
    if card is not None:
        # The call's card said "Waiting for user answer."; it now shows what happened.
        said = {"option": f"Answered: {d['answer']}", "other": f"Answered: {d['answer']}",
                "dismissed": "Dismissed."}[d["how"]]
        card.update(output=said, state="done", error=None)
    view["status"] = "running"


def _round_retried(view: dict[str, Any], d: dict[str, Any]) -> None:
    # The partial output of a dropped stream is replaced by the retry's output.
    view["items"] = [
        it for it in view["items"]
        if not (it.get("round") == d["round"] and it["kind"] in ("text", "reasoning")
                or it["kind"] == "tool" and it.get("round") == d["round"]
                and it.get("state") in ("queued", "running"))
    ]
    view["items"].append({"kind": "warning", "message": f"Round {d['round']} retried: {d['reason']}"})


def _stop_gate_feedback(view: dict[str, Any], d: dict[str, Any]) -> None:
    for item in view["items"]:
        if item["kind"] == "text" and item["round"] == d["round"]:
            item["withdrawn"] = True
    view["items"].append({"kind": "gate", "round": d["round"], "reason": d["reason"],
                          "feedback": d["feedback"]})


def _context_compressed(view: dict[str, Any], d: dict[str, Any]) -> None:
    view["items"].append({"kind": "compressed", "round": d["round"], "method": d["method"],
                          "tokens_before": d["tokens_before"], "tokens_after": d["tokens_after"]})


def _warning(view: dict[str, Any], d: dict[str, Any]) -> None:
    item = {"kind": "warning", "message": d["message"]}
    if d.get("level") == "note":  # a calm line (events.Warning_); absent means a warning
        item["level"] = "note"
    view["items"].append(item)


def _output_checked(view: dict[str, Any], d: dict[str, Any]) -> None:
    view["output"] = {"schema": d["schema_name"], "valid": d["valid"], "data": d["data"],
                      "errors": list(d["errors"]), "attempts": d["attempts"]}


def _run_started(view: dict[str, Any], d: dict[str, Any]) -> None:
    view.update(run_id=d["run_id"], agent=d["agent"], model=d["model"], prompt=d["prompt"],
                session=d["session"], status="running", started_at=d["t"])
    view["footer"]["model"] = d["model"]


def _run_finished(view: dict[str, Any], d: dict[str, Any]) -> None:
    view["plan_status"] = None
    view["status"] = d["status"]
    view["answer"] = d["answer"]
    view["error"] = d["error"]
    f = view["footer"]
    f["seconds"] = f["seconds"] + d["seconds"]
    # A run resumed after its question ran in parts: the footer shows the sum and the count.
    f["parts"] = f.get("parts", 0) + 1
    f["rounds"] = max(f["rounds"], d["rounds"])


def _run_failed(view: dict[str, Any], d: dict[str, Any]) -> None:
    view["status"] = "error"
    view["error"] = d["error"]


REDUCERS: dict[str, Reducer] = {
    "text_delta": _delta,
    "reasoning_delta": _delta,
    "tool_called": _tool_called,
    "tool_started": _tool_started,
    "tool_args_delta": _tool_args_delta,
    "tool_returned": _tool_returned,
    "tool_figures": _tool_figures,
    "workspace_changed": _workspace_changed,
    "cell_proposed": _cell_proposed,
    "usage": _usage,
    "round_started": _round_started,
    "plan_updated": _plan_updated,
    "tools_offered": _tools_offered,
    "plan_status": _plan_status,
    "ask_pending": _ask_pending,
    "ask_answered": _ask_answered,
    "round_retried": _round_retried,
    "stop_gate_feedback": _stop_gate_feedback,
    "context_compressed": _context_compressed,
    "warning": _warning,
    "output_checked": _output_checked,
    "run_started": _run_started,
    "run_finished": _run_finished,
    "run_failed": _run_failed,
}
"""What each event type does to the view (an event type not listed changes nothing)."""


def reduce_event(view: dict[str, Any], event: BaseEvent) -> dict[str, Any]:
    """Apply one event to ``view`` in place and return it."""
    d = event.__dict__
    reducer = REDUCERS.get(d.get("type", ""))
    if reducer is not None:
        reducer(view, d)
    return view


def withdraw_ask(view: dict[str, Any], reason: str) -> dict[str, Any]:
    """The run's waiting question was withdrawn without an answer (superseded): the card
    keeps the question, closed (no buttons), and says why; the run ends ``superseded``."""
    ask = view.get("ask")
    if ask is not None and not ask.get("answered"):
        ask["answered"] = {"how": "dismissed", "answer": "", "option_index": None}
        view["items"].append({"kind": "ask", **ask})
        view["ask"] = None
        card = _find_tool(view, ask["call_id"])
        if card is not None:
            card.update(output="Withdrawn: no answer will be taken.", state="done", error=None)
    view["status"] = "superseded"
    view["error"] = reason
    return view


def reduce_events(events: Sequence[BaseEvent], view: dict[str, Any] | None = None) -> dict[str, Any]:
    """Reduce a list of events into a (new or given) view state."""
    view = view if view is not None else new_view()
    for e in events:
        reduce_event(view, e)
    return view
