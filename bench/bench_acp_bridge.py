"""``%%toolloop --acp``: what the bridge costs per agent update.

The shipped scripted ACP agent (``jupyter_agent/acp/demo_agent.py``, prompt ``flood N``)
sends N message chunks and N/10 tool calls (start + completed) as fast as it can. The same
prompt is sent, alternating, by

* the SDK's own client (``acp.spawn_agent_process``) whose ``session_update`` prints each
  update (``model_dump_json``) to a null file: the floor any client pays;
* our bridge (``jupyter_agent.acp.bridge.run_prompt``): the updates become our events, go
  through the recorder (secrets masked, the view reduced) and into a temporary store.

Reported: seconds per prompt (best of ``--repeat``), microseconds per update, the ratio
bridge / SDK of the wall time (the agent, a process of its own, sets the pace) and of this
process's CPU time per update (the client's own cost). Run: ``python bench/bench_acp_bridge.py [--updates 5000] [--repeat 5]``.
Nothing asserts a time.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

AGENT = [sys.executable, "-m", "jupyter_agent.acp.demo_agent"]


class _Printer:
    """The SDK client that prints every update (to a null file)."""

    def __init__(self) -> None:
        self.out = open(os.devnull, "w")  # noqa: SIM115  (closed by the process)
        self.updates = 0

    def on_connect(self, conn: Any) -> None:
        pass

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates += 1
        print(update.model_dump_json(), file=self.out)

    async def request_permission(self, *a: Any, **k: Any) -> Any:
        raise RuntimeError("the flood asks nothing")


async def _sdk_runs(n: int, repeat: int) -> tuple[list[float], list[float], int]:
    from acp import PROTOCOL_VERSION, spawn_agent_process, text_block

    client = _Printer()
    times, cpu = [], []
    async with spawn_agent_process(client, AGENT[0], *AGENT[1:], env=dict(os.environ),
                                   cwd=os.getcwd()) as (conn, _proc):
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        sid = (await conn.new_session(cwd=os.getcwd(), mcp_servers=[])).session_id
        for _ in range(repeat):
            client.updates = 0
            t, c = time.perf_counter(), time.process_time()
            await conn.prompt(session_id=sid, prompt=[text_block(f"flood {n}")])
            times.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
    return times, cpu, client.updates


def _bridge_runs(n: int, repeat: int) -> tuple[list[float], list[float], int]:
    from jupyter_agent.acp.bridge import run_prompt
    from jupyter_agent.session.store import Store

    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "bench.sqlite")
        times, cpu, events = [], [], 0
        run_prompt(AGENT, "hello", session="bench", store=store, listeners=[])  # warm: start
        for _ in range(repeat):
            t, c = time.perf_counter(), time.process_time()
            run = run_prompt(AGENT, f"flood {n}", session="bench", store=store, listeners=[])
            times.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
            events = len(run.events)
        store.close()
    return times, cpu, events


def main(argv: list[str] | None = None) -> int:
    """Run the bench and print its table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--updates", type=int, default=5000, help="message chunks per prompt")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    sdk, bridge, sdk_cpu, bridge_cpu = [], [], [], []
    updates = events = 0
    for _ in range(args.repeat):  # alternate, so a busy neighbour hurts both alike
        t, c, updates = asyncio.run(_sdk_runs(args.updates, 1))
        sdk += t
        sdk_cpu += c
        t, c, events = _bridge_runs(args.updates, 1)
        bridge += t
        bridge_cpu += c
    from jupyter_agent.acp.client import shutdown_all

    shutdown_all()
    best_sdk, best_bridge = min(sdk), min(bridge)
    print(f"updates per prompt: {updates} (our events: {events})")
    print(f"SDK client, printing:  {best_sdk:.3f} s  {best_sdk / updates * 1e6:7.1f} us/update")
    print(f"bridge, events+store:  {best_bridge:.3f} s  "
          f"{best_bridge / updates * 1e6:7.1f} us/update")
    print(f"ratio bridge / SDK:    {best_bridge / best_sdk:.2f}x wall "
          f"(extra {(best_bridge - best_sdk) / updates * 1e6:.1f} us/update)")
    # The agent is another process: this process's CPU is the client's own cost.
    cs, cb = min(sdk_cpu), min(bridge_cpu)
    print(f"client CPU per update: SDK {cs / updates * 1e6:.1f} us, bridge "
          f"{cb / updates * 1e6:.1f} us: {cb / cs:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
