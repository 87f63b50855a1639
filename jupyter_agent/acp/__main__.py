"""``python -m jupyter_agent.acp``: serve ACP over stdio (docs/acp.md).

stdout carries only the protocol: the real stdout is kept for it and file descriptor 1 is
pointed at stderr before anything else runs, so a stray ``print`` (ours, a tool's, a child
process's) lands in the log instead of corrupting the JSON-RPC stream.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

from . import INSTALL_HINT

if TYPE_CHECKING:
    from acp import Agent

    from .agent import JupyterAcpAgent

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="jupyter-agent-acp",
                                description="jupyter-agent as an ACP agent over stdio.")
    p.add_argument("--model", default=None,
                   help="model or profile (default: JUPYTER_AGENT_MODEL; 'local': offline)")
    p.add_argument("--tools", default=None,
                   help="comma-separated tools (default: bash,read_file,write_file)")
    p.add_argument("--mode", default="toolloop", choices=("toolloop", "plan", "chat"),
                   help="the sessions' starting mode")
    p.add_argument("--log-level", default="WARNING", help="stderr log level")
    return p


async def _serve(agent: JupyterAcpAgent, proto_fd: int) -> None:
    from acp import run_agent

    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=50 * 1024 * 1024)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    out = os.fdopen(proto_fd, "wb", buffering=0)
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, out)
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    try:
        # Not every method of the SDK's Agent (no list, fork, config options, auth): the SDK
        # answers "method not found" for what an agent leaves out (it casts the same way).
        await run_agent(cast("Agent", agent), writer, reader)
    finally:
        agent.abort_all()  # client EOF: runs end aborted; open approvals were never allowed


def main(argv: Sequence[str] | None = None) -> int:
    """Run the agent until the client closes stdin; 2 when the SDK or an argument is missing."""
    args = _parser().parse_args(argv)
    # First, before the imports that take time: everything but the protocol goes to stderr.
    sys.stdout.flush()
    proto_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        import acp  # noqa: F401
    except ImportError:
        print(INSTALL_HINT, file=sys.stderr)
        return 2
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="jupyter-agent-acp: %(levelname)s %(message)s")
    from .agent import DEFAULT_TOOLS, AgentConfig, JupyterAcpAgent, MainThreadRunner

    tools = tuple(t.strip() for t in args.tools.split(",") if t.strip()) if args.tools \
        else DEFAULT_TOOLS
    runner = MainThreadRunner()
    agent = JupyterAcpAgent(AgentConfig(model=args.model, tools=tools, mode=args.mode), runner)

    def protocol() -> None:
        try:
            asyncio.run(_serve(agent, proto_fd))
        except Exception as exc:  # logged: stdout must stay protocol-only
            logging.getLogger("jupyter_agent.acp").error("protocol loop ended: %s", exc)
        finally:
            runner.stop()

    # The protocol loop in a thread, the turns on the main thread (see MainThreadRunner).
    thread = threading.Thread(target=protocol, name="acp-protocol", daemon=True)
    thread.start()
    runner.serve()
    thread.join(5)
    return 0


if __name__ == "__main__":
    # os._exit: a worker thread still finishing an aborted run must not keep the process alive.
    code = main()
    sys.stderr.flush()
    os._exit(code)
