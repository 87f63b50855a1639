"""What exporting runs as OpenTelemetry spans costs the agent loop, per round.

The loop of ``bench_loop.py`` (``run_loop`` with ``%%toolloop``'s hooks and a run recorder,
started and finished like a real run) against a canned model client, so the network to the
model is out and only our own CPU is left, for 50 tool rounds, in three settings measured in
the same run:

* off: no endpoint (the baseline);
* receiver: ``OTEL_EXPORTER_OTLP_ENDPOINT`` pointing at a tiny local OTLP/HTTP sink in a child
  process (it answers 200 to every POST), so the spans are made, encoded and sent;
* down: the endpoint is a closed port, after the first failed export (the steady state of a
  receiver that is down: runs are not traced until the retry time).

CPU time is the process's (the exporter's thread included). Reported: CPU ms per round, best
of the repeats, and the difference to ``off``; targets: receiver <= 0.2 ms, down <= 0.05 ms.
Run: ``python bench/bench_trace.py [--quick]``.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

ROUNDS = 50

_SINK = r"""
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *a):
        pass
srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print(srv.server_address[1], flush=True)
srv.serve_forever()
"""


def start_sink() -> tuple[subprocess.Popen[str], str]:
    """A local OTLP/HTTP sink in a child process; returns ``(process, base_url)``."""
    proc = subprocess.Popen([sys.executable, "-c", _SINK], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    port = int(proc.stdout.readline())
    return proc, f"http://127.0.0.1:{port}"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _canned_client() -> Any:
    from bench.bench_loop import canned_client

    return canned_client()


def one_run(client: Any, rounds: int = ROUNDS) -> Any:
    """One toolloop-like run of ``rounds`` tool rounds: started, looped, finished."""
    from bench.bench_loop import PROMPT, add
    from jupyter_agent.agents.compression import tool_output_processor, window_fitter
    from jupyter_agent.agents.run import Run, RunRecorder
    from jupyter_agent.agents.tooling import tool_runner
    from jupyter_agent.llm.tokens import count_tools_tokens
    from jupyter_agent.loop.hooks import LoopHooks
    from jupyter_agent.loop.kernel import LoopConfig, run_loop
    from jupyter_agent.tools.registry import Tool

    tools = [Tool(add)]
    schemas = [t.schema() for t in tools]
    prof = client.profile
    hooks = LoopHooks(run_tool=tool_runner(tools), can_batch=lambda c: True,
                      fit_context=window_fitter(prof.max_context, None, count_tools_tokens(schemas)),
                      process_tool_output=tool_output_processor(client))
    cfg = LoopConfig(model="gpt-4.1-mini", tools=schemas, max_rounds=rounds, stream=False,
                     final_answer_round=False)
    run = Run(agent="toolloop", model="gpt-4.1-mini", prompt="bench")
    recorder = RunRecorder(run)
    recorder.start()
    result = run_loop(client, list(PROMPT), cfg, hooks, recorder.emit)
    recorder.finish("done", answer="ok")
    assert result.rounds == rounds, result
    return run


def _switch(url: str | None) -> None:
    """Point tracing at ``url`` (``None``: off), as the environment variable does."""
    from jupyter_agent.tracing.export import _EXPORTS

    _EXPORTS.clear()  # the previous setting's provider: flushed and stopped
    if url is None:
        os.environ.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)
    else:
        os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = url


def cpu_per_round(client: Any, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        c0 = time.process_time()
        one_run(client)
        _flush()  # the exporter's work for this run is counted in this run
        best = min(best, time.process_time() - c0)
    return best * 1000 / ROUNDS


def _flush() -> None:
    from jupyter_agent.tracing.export import current

    ex = current()
    if ex is not None:
        ex.flush()


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Run the benchmark and print the table; returns the numbers."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="Fewer repeats.")
    args = parser.parse_args(argv)
    repeats = 5 if args.quick else 20
    try:
        import opentelemetry.sdk  # noqa: F401
    except ImportError:
        print("Traces: skipped (pip install 'jupyter-agent[otel]').")
        return {}
    for name in list(os.environ):
        if name.startswith("OTEL_"):
            os.environ.pop(name)
    client = _canned_client()
    sink, sink_url = start_sink()
    down_url = f"http://127.0.0.1:{_closed_port()}"
    out: dict[str, float] = {}
    saved_err = sys.stderr
    try:
        one_run(client)  # warm-up: imports, pools
        # Settings take turns, so a busy machine slows them alike.
        cpu: dict[str, list[float]] = {"off": [], "receiver": [], "down": []}
        for _ in range(max(1, repeats // 5)):
            _switch(None)
            cpu["off"].append(cpu_per_round(client, 5))
            _switch(sink_url)
            one_run(client)
            _flush()
            cpu["receiver"].append(cpu_per_round(client, 5))
            _switch(down_url)
            sys.stderr = open(os.devnull, "w")  # the one warning line, once per setting
            one_run(client)
            _flush()  # the failed export: from here the receiver is known to be down
            cpu["down"].append(cpu_per_round(client, 5))
            sys.stderr.close()
            sys.stderr = saved_err
        from jupyter_agent.tracing.export import current

        ex = current()
        sent_down = ex.health.failures if ex is not None else 0
        out = {k: min(v) for k, v in cpu.items()}
    finally:
        sys.stderr = saved_err
        _switch(None)
        sink.terminate()
        sink.wait(5)
    print(f"Traces: CPU ms per loop round ({ROUNDS} tool rounds, canned model, best of "
          f"{repeats}), exporter thread included.")
    print(f"  off {out['off']:.3f}   to a local receiver {out['receiver']:.3f} "
          f"({out['receiver'] - out['off']:+.3f})   receiver down {out['down']:.3f} "
          f"({out['down'] - out['off']:+.3f}; {sent_down} export attempt(s) while down)")
    on, down = out["receiver"] - out["off"], out["down"] - out["off"]
    print(f"  targets: receiver <= 0.2 ms -> {'OK' if on <= 0.2 else 'MISSED'}; "
          f"down <= 0.05 ms -> {'OK' if down <= 0.05 else 'MISSED'}")
    out["receiver_delta"], out["down_delta"] = on, down
    return out


if __name__ == "__main__":
    main()
