"""A run's events in the order a live run emits them, touching every way the view changes.

Used to check the live widget's patches (``view/diff.py``, ``ui/static/patch.js``): streamed
text and tool arguments (appends), tool cards that start running and end (field changes), a
retried round (items dropped), a stop-gate withdrawal (an earlier item changed), a plan
replaced, an ask answered (an earlier card changed, the ask moved into the items), footer
updates, and the end of the run.
"""

from __future__ import annotations

import json

from jupyter_agent.base import events as ev


def run_stream(rounds: int = 12, output_chars: int = 2048) -> list[ev.BaseEvent]:
    """The events of a ``rounds``-round tool run with ``output_chars``-long tool outputs."""
    out: list[ev.BaseEvent] = [ev.RunStarted(run_id="run-p", agent="toolloop", model="m",
                                             prompt="Read every part.")]
    body = ("line of output <b>&amp;</b> \"quoted\" ünïcödé\n" * (output_chars // 40 + 1))
    for r in range(1, rounds + 1):
        out.append(ev.RoundStarted(round=r, model="m", tool_choice="auto"))
        out += [ev.ReasoningDelta(round=r, text=w) for w in ("Think ", "about ", f"part {r}. ")]
        out += [ev.TextDelta(round=r, text=w) for w in ("Reading ", "part ", f"{r}.")]
        cid = f"call_{r}"
        out.append(ev.ToolCalled(round=r, call_id=cid, name="read_part", arguments=""))
        out += [ev.ToolArgsDelta(round=r, call_id=cid, delta=d)
                for d in ('{"part"', ": ", f"{r}}}")]
        out.append(ev.UsageRecorded(round=r, model="m", input_tokens=100 * r, output_tokens=12,
                                    cost=0.0001 * r))
        if r == 3:  # the stream dropped: the round's partial output goes, a warning comes
            out.append(ev.RoundRetried(round=r, reason="connection reset"))
            out += [ev.TextDelta(round=r, text="Retried: reading part 3.")]
            out.append(ev.ToolCalled(round=r, call_id=cid, name="read_part",
                                     arguments=json.dumps({"part": r})))
        error = "Tool error: timeout" if r == 5 else None
        out.append(ev.ToolReturned(round=r, call_id=cid, name="read_part", error=error,
                                   output=body[:output_chars] if not error else "", seconds=0.01))
        if r == 4:
            out.append(ev.PlanUpdated(plan={"planId": "p1", "task": "Read", "steps": [
                {"id": "1", "title": "Read parts", "status": "in_progress"}]}))
        if r == 6:
            out.append(ev.StopGateFeedback(round=r, reason="open steps", feedback="Go on."))
            out.append(ev.PlanUpdated(plan={"planId": "p1", "task": "Read", "steps": [
                {"id": "1", "title": "Read parts", "status": "done"}]}))
        if r == 8:
            out.append(ev.ToolCalled(round=r, call_id="ask_1", name="ask_agent", arguments="{}"))
            out.append(ev.ToolReturned(round=r, call_id="ask_1", name="ask_agent", internal=True,
                                       output="Waiting for user answer."))
            out.append(ev.AskPending(call_id="ask_1", question="Go on?", options=["Yes", "No"]))
            out.append(ev.AskAnswered(call_id="ask_1", how="option", answer="Yes",
                                      option_index=1))
        if r == 9:
            out.append(ev.ContextCompressed(round=r, method="checkpoint", tokens_before=9000,
                                            tokens_after=2000))
            out.append(ev.Warning_(message="Context was compressed."))
    final = rounds + 1
    out.append(ev.RoundStarted(round=final, model="m", tool_choice="none"))
    out += [ev.TextDelta(round=final, text=w) for w in ("All ", "parts ", "read.")]
    out.append(ev.RunFinished(status="done", answer="All parts read.", rounds=final,
                              seconds=4.2))
    return out
