"""Run by tests/acp/test_jupyter_ai.py with jupyter-ai's own Python (its venv): the persona
class as jupyter-ai loads it, and jupyter-ai's pinned SDK as the client of our agent."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any


async def drive(agent_python: str, cwd: str, env: dict[str, str]) -> dict[str, Any]:
    import acp
    from acp.schema import AllowedOutcome, RequestPermissionResponse

    seen: dict[str, Any] = {"updates": [], "permissions": 0}

    class Client:
        async def request_permission(self, options: Any, session_id: str, tool_call: Any,
                                     **kw: Any) -> Any:
            seen["permissions"] += 1
            seen["options"] = [o.option_id for o in options]
            return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected",
                                                                    option_id="allow_once"))

        async def session_update(self, session_id: str, update: Any, **kw: Any) -> None:
            seen["updates"].append(update.session_update)

    async with acp.spawn_agent_process(Client(), agent_python, "-m", "jupyter_agent.acp",
                                       env=env, cwd=cwd) as (conn, _proc):
        init = await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
        seen["agent"] = init.agent_info.name
        sid = (await conn.new_session(cwd=cwd, mcp_servers=[])).session_id
        res = await conn.prompt(session_id=sid, prompt=[acp.text_block("write it")])
        seen["stop"] = res.stop_reason
    return seen


def main() -> None:
    agent_python, cwd, env_json = sys.argv[1:4]
    from jupyter_ai_acp_client.base_acp_persona import BaseAcpPersona

    from jupyter_agent.acp.persona import JupyterAgentPersona

    out: dict[str, Any] = {"subclass": issubclass(JupyterAgentPersona, BaseAcpPersona),
                           "name": JupyterAgentPersona.defaults.fget(None).name}  # type: ignore[attr-defined]
    import importlib.metadata as md

    out["sdk"] = md.version("agent-client-protocol")
    out.update(asyncio.run(drive(agent_python, cwd, json.loads(env_json))))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
