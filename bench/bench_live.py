"""Live view traffic and saved output size of a long ``%%toolloop`` run.

A 300-round tool loop against the scripted server (child process): each round streams a short
thought and calls a tool that returns 2 KB; then the answer. A real ``LiveDisplay`` with a real
``RunWidget`` shows it; the widget's comm is a recording stub (``tests/fakes/comms.py``) that
counts the JSON bytes the kernel would send to the front end. No front end, no kernel: what is
measured is our own serialisation, i.e. the comm data on the wire.

Reported, against the final view's size (its JSON):
- live traffic: bytes sent to the front end over the run. "Before" is the whole-view sync this
  widget used to do (``send_state("view")`` of the whole view on every update): it is the same
  run's update count times the view's size at each update, measured at each push. "After" is
  what the comm actually carried (snapshots + patches). Target: under 3x.
- saved output: the final MIME bundle (what a saved notebook keeps). "Before" is format 1
  (view + every event, deltas merged); "after" is the current format (the view). Target:
  under 1.5x.

Run: ``python bench/bench_live.py [--rounds 300] [--tool-bytes 2048] [--json]``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench._server import serve, stop  # noqa: E402
from tests.fakes.comms import recording_comms  # noqa: E402
from tests.fakes.openai_server import call, text, tool_calls  # noqa: E402

KEY = "sk-bench-not-a-secret"
TARGET_LIVE = 3.0
TARGET_SAVED = 1.5


def _size(obj: Any) -> int:
    return len(json.dumps(obj, ensure_ascii=False).encode("utf-8"))


def _turns(rounds: int) -> list[Any]:
    return [tool_calls([call("read_part", {"part": i}, id=f"call_{i}")],
                       text=f"Reading part {i} of the archive next.")
            for i in range(1, rounds + 1)]


def run_once(base_url: str, rounds: int, tool_bytes: int) -> dict[str, Any]:
    """One run with a live widget; returns the byte counts."""
    from jupyter_agent.agents.run import last_run
    from jupyter_agent.agents.toolloop import toolloop
    from jupyter_agent.base.events import RUN_FORMAT_VERSION, event_to_json, merge_deltas
    from jupyter_agent.ui.live import LiveDisplay
    from jupyter_agent.view.bundle import build_bundle

    line = "x" * 63 + "\n"

    def read_part(part: int) -> str:
        """Read one part of the archive."""
        return (f"part {part}\n" + line * (tool_bytes // len(line) + 1))[:tool_bytes]

    shown: dict[str, Any] = {"display": None, "whole_view": 0}

    def listener(event: Any) -> None:
        with contextlib.redirect_stdout(io.StringIO()):  # no notebook: display() prints
            if shown["display"] is None:
                display = LiveDisplay(last_run())
                widget = display.widget
                push = widget.push

                def measured_push() -> None:
                    # What the whole-view sync sent for this update: the view as a state update.
                    shown["whole_view"] += _size({"method": "update",
                                                  "state": {"view": widget._source},
                                                  "buffer_paths": []})
                    push()

                widget.push = measured_push
                shown["display"] = display
            shown["display"].on_event(event)

    with recording_comms() as comms:
        run = toolloop("Read every part of the archive.", tools=[read_part],
                       max_rounds=rounds + 1, model="gpt-4.1-mini", listeners=[listener])
    assert run.status == "done", (run.status, run.error)
    view = run.view
    display = shown["display"]
    sent = sum(c.bytes for c in comms)
    opened = sum(_size(data) for c in comms for kind, data in c.messages if kind == "comm_open")
    bundle = build_bundle(view)
    saved = _size(bundle)
    old_payload = {"version": 1, "run_id": view["run_id"], "view": view,
                   "events": merge_deltas([event_to_json(e) for e in run.events])}
    saved_before = saved - _size(bundle["application/vnd.jupyter-agent.run+json"]) + _size(old_payload)
    view_size = _size(view)
    return {
        "rounds": run.rounds,
        "tool_calls": sum(1 for i in view["items"] if i["kind"] == "tool"),
        "updates": display.updates,
        "view_bytes": view_size,
        "live_bytes_before": shown["whole_view"] + opened,
        "live_bytes_after": sent,
        "live_ratio_before": round((shown["whole_view"] + opened) / view_size, 2),
        "live_ratio_after": round(sent / view_size, 2),
        "saved_bytes_before": saved_before,
        "saved_bytes_after": saved,
        "saved_ratio_before": round(saved_before / view_size, 2),
        "saved_ratio_after": round(saved / view_size, 2),
        "format_version": RUN_FORMAT_VERSION,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=300)
    ap.add_argument("--tool-bytes", type=int, default=2048)
    ap.add_argument("--json", action="store_true", help="print the numbers as JSON")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as home:
        os.environ["JUPYTER_AGENT_HOME"] = home
        os.environ["OPENAI_API_KEY"] = KEY
        proc, base_url = serve(text("All parts are read."), _turns(args.rounds))
        os.environ["OPENAI_BASE_URL"] = base_url
        try:
            r = run_once(base_url, args.rounds, args.tool_bytes)
        finally:
            stop(proc)
    if args.json:
        print(json.dumps(r, indent=2))
    else:
        kb = 1024
        print(f"live view: {r['rounds']} rounds, {r['tool_calls']} tool calls of "
              f"{args.tool_bytes} B, {r['updates']} updates; final view {r['view_bytes'] / kb:.0f} KB")
        print(f"  sent to the front end: before (whole view per update) "
              f"{r['live_bytes_before'] / kb:.0f} KB = {r['live_ratio_before']}x the view; "
              f"after (patches) {r['live_bytes_after'] / kb:.0f} KB = {r['live_ratio_after']}x "
              f"(target < {TARGET_LIVE}x)")
        print(f"  saved output: before (format 1: view + events) "
              f"{r['saved_bytes_before'] / kb:.0f} KB = {r['saved_ratio_before']}x the view; "
              f"after (format {r['format_version']}) {r['saved_bytes_after'] / kb:.0f} KB = "
              f"{r['saved_ratio_after']}x (target < {TARGET_SAVED}x)")
    ok = r["live_ratio_after"] < TARGET_LIVE and r["saved_ratio_after"] < TARGET_SAVED
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
