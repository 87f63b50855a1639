"""What the ACP agent (``python -m jupyter_agent.acp``, docs/acp.md) adds per streamed event.

Two measures, each with its baseline taken in the same run:

* mapping (in process): CPU per event of turning a run event into its session update
  (:class:`jupyter_agent.acp.updates.UpdateMapper`: masking, the SDK's pydantic models),
  against the SDK's own cost of writing that same update as JSON (``model_dump_json``), which
  any ACP agent pays. Reported as µs per event and the ratio.
* end to end (two processes): the SDK's own client (``acp.spawn_agent_process``) receiving N
  ``agent_message_chunk`` updates from our agent, the scripted model streaming N chunks over
  real HTTP, against the same client receiving N identical updates from a bare SDK agent that
  only sends them (no model, no run). Reported as µs per update (wall, after the first one
  arrives) and the ratio.

Run: ``python bench/bench_acp.py [--quick]``. Part (B) of the ACP work (``%%toolloop --acp``)
has its own bench for the client side; this one is the agent side only.
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

_BARE_AGENT = r"""
import asyncio, sys
import acp
from acp.schema import (AgentCapabilities, Implementation, InitializeResponse,
                        NewSessionResponse, PromptResponse)
N = int(sys.argv[1])
class Bare:
    def on_connect(self, conn): self.conn = conn
    async def initialize(self, protocol_version, **kw):
        return InitializeResponse(protocol_version=protocol_version,
                                  agent_capabilities=AgentCapabilities(),
                                  agent_info=Implementation(name="bare", version="0"))
    async def new_session(self, cwd, **kw): return NewSessionResponse(session_id="s")
    async def prompt(self, session_id, prompt, **kw):
        for i in range(N):
            await self.conn.session_update(session_id,
                                           acp.update_agent_message_text("chunk%03d" % (i % 1000)))
        return PromptResponse(stop_reason="end_turn")
    async def cancel(self, session_id, **kw): pass
asyncio.run(acp.run_agent(Bare()))
"""


def bench_mapping(n: int) -> tuple[float, float]:
    """µs per event: our mapping, and the SDK's JSON of the same update."""
    from jupyter_agent.acp.updates import UpdateMapper
    from jupyter_agent.base.events import TextDelta

    events = [TextDelta(round=1, text=f"chunk{i % 1000:03d}") for i in range(n)]
    mapper = UpdateMapper()
    t0 = time.process_time()
    updates = [u for e in events for u in mapper.updates(e)]
    ours = (time.process_time() - t0) / n * 1e6
    t0 = time.process_time()
    for u in updates:
        u.model_dump_json(by_alias=True, exclude_none=True)
    sdk = (time.process_time() - t0) / n * 1e6
    return ours, sdk


class _Counter:
    def __init__(self) -> None:
        self.n = 0
        self.first = 0.0

    async def session_update(self, session_id: str, update: Any, **kw: Any) -> None:
        if self.n == 0:
            self.first = time.perf_counter()
        self.n += 1

    async def request_permission(self, *a: Any, **kw: Any) -> Any:
        raise RuntimeError("no permission expected")


async def _drive(cmd: list[str], env: dict[str, str], cwd: str) -> tuple[int, float]:
    import acp

    client = _Counter()
    async with acp.spawn_agent_process(client, cmd[0], *cmd[1:], env=env, cwd=cwd) as (conn, _):
        await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
        sid = (await conn.new_session(cwd=cwd, mcp_servers=[])).session_id
        await conn.prompt(session_id=sid, prompt=[acp.text_block("go")])
        end = time.perf_counter()
    return client.n, (end - client.first)


def bench_end_to_end(n: int) -> tuple[float, float, int]:
    """µs per update (wall): our agent against the scripted model, and a bare SDK agent."""
    from tests.fakes.openai_server import ScriptedOpenAI, text

    with tempfile.TemporaryDirectory() as tmp, ScriptedOpenAI() as srv:
        content = "".join(f"chunk{i % 1000:03d}" for i in range(n))
        srv.enqueue(text(content, chunk_size=8))
        env = dict(os.environ, OPENAI_API_KEY="sk-bench-0123456789", OPENAI_BASE_URL=srv.base_url,
                   JUPYTER_AGENT_HOME=tmp, PYTHONPATH=os.pathsep.join(
                       p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
        got, ours = asyncio.run(_drive([sys.executable, "-m", "jupyter_agent.acp"], env, tmp))
        bare_n, bare = asyncio.run(_drive([sys.executable, "-c", _BARE_AGENT, str(n)], env, tmp))
    return ours / max(got, 1) * 1e6, bare / max(bare_n, 1) * 1e6, got


def main(argv: list[str] | None = None) -> None:
    """Print the two measures and their ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer events")
    args = parser.parse_args(argv)
    n_map, n_e2e = (2000, 300) if args.quick else (20000, 2000)
    ours, sdk = min(bench_mapping(n_map) for _ in range(3))
    print(f"ACP mapping: {ours:.1f} µs/event (UpdateMapper) vs {sdk:.1f} µs/event "
          f"(SDK JSON of the same update): ratio {ours / sdk:.2f}")
    per, bare, got = bench_end_to_end(n_e2e)
    print(f"ACP end to end: {per:.1f} µs/update ({got} updates from the agent, model streamed "
          f"over HTTP) vs {bare:.1f} µs/update (bare SDK agent): ratio {per / bare:.2f}")


if __name__ == "__main__":
    main()
