"""jupyter-ai 3 persona "Jupyter Agent": runs ``python -m jupyter_agent.acp`` (docs/acp.md).

jupyter-ai loads personas from the ``jupyter_ai.personas`` entry point group; a module that
raises ``PersonaRequirementsUnmet`` at import is skipped quietly. Without jupyter-ai this module
raises ``ImportError`` when imported on its own, and nothing else in the package imports it.
"""

from __future__ import annotations

import sys
from pathlib import Path

try:
    from jupyter_ai_persona_manager import PersonaDefaults, PersonaRequirementsUnmet
except ImportError as exc:  # jupyter-ai is absent: only its loader imports this module
    raise ImportError('The "Jupyter Agent" persona needs jupyter-ai: '
                      'pip install "jupyter-agent[acp]" jupyter-ai') from exc

try:
    from jupyter_ai_acp_client.base_acp_persona import BaseAcpPersona
except ImportError as exc:
    raise PersonaRequirementsUnmet(
        'The "Jupyter Agent" persona needs jupyter-ai-acp-client: '
        'pip install "jupyter-agent[acp]" jupyter-ai') from exc

__all__ = ["JupyterAgentPersona"]


# jupyter-ai ships no type hints: mypy knows nothing of its base class (subclassing is allowed).
class JupyterAgentPersona(BaseAcpPersona):  # type: ignore[misc]
    """jupyter-agent in jupyter-ai's chat: our tools, sandbox and session store, over ACP."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, executable=[sys.executable, "-m", "jupyter_agent.acp"], **kwargs)

    @property
    def defaults(self) -> PersonaDefaults:
        """How jupyter-ai lists the persona."""
        return PersonaDefaults(
            name="Jupyter Agent",
            description="jupyter-agent: tools in a bubblewrap sandbox, plans, a session store.",
            avatar_path=str(Path(__file__).with_name("avatar.svg")),
            system_prompt="unused",  # our own prompts are used, in the agent process
        )
