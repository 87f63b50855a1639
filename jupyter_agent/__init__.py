"""jupyter-agent: build, run and teach LLM agents in Jupyter.

``%load_ext jupyter_agent`` adds ``%%chat``, ``%%toolloop``, ``%%plan`` and ``%agent``; mark
notebook functions with ``@tool`` to offer them to the model. Importing this package is cheap:
``openai``, ``ipywidgets`` and ``anywidget`` load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base.lazy import lazy_exports

__version__ = "0.1.0"

__all__ = [
    "__version__",
    "tool",
    "Tool",
    "StopRun",
    "chat",
    "toolloop",
    "plan",
    "resume",
    "batch",
    "Run",
    "last_run",
    "classify",
    "extract",
    "expand_query",
    "Agent",
    "agent_tool",
    "model_tool",
    "attach_files",
    "python_sandbox",
    "RunEvent",
    "JupyterAgentError",
    "ConfigError",
    "MissingKeyError",
    "ToolError",
    "ModelBehaviorError",
    "ResumeError",
    "register_secret",
    "load_ipython_extension",
    "unload_ipython_extension",
]

# name -> (module, attribute); resolved on first access (PEP 562) to keep the import cheap.
_LAZY = {
    "tool": ("jupyter_agent.tools.registry", "tool"),
    "Tool": ("jupyter_agent.tools.registry", "Tool"),
    "StopRun": ("jupyter_agent.tools.registry", "StopRun"),
    "chat": ("jupyter_agent.agents.chat", "chat"),
    "toolloop": ("jupyter_agent.agents.toolloop", "toolloop"),
    "plan": ("jupyter_agent.agents.plan.agent", "plan"),
    "resume": ("jupyter_agent.agents.resume", "resume"),
    # The batch package is itself callable: ``jupyter_agent.batch(template, over, ...)``.
    "batch": ("jupyter_agent.batch", ""),
    "Run": ("jupyter_agent.agents.run", "Run"),
    "last_run": ("jupyter_agent.agents.run", "last_run"),
    "classify": ("jupyter_agent.agents.helpers", "classify"),
    "extract": ("jupyter_agent.agents.helpers", "extract"),
    "expand_query": ("jupyter_agent.agents.helpers", "expand_query"),
    "Agent": ("jupyter_agent.agents.subagents", "Agent"),
    "agent_tool": ("jupyter_agent.agents.subagents", "agent_tool"),
    "model_tool": ("jupyter_agent.agents.subagents", "model_tool"),
    "attach_files": ("jupyter_agent.agents.attachments", "attach_files"),
    "python_sandbox": ("jupyter_agent.agents.sandbox", "python_sandbox"),
    "RunEvent": ("jupyter_agent.base.events", "RunEvent"),
    "JupyterAgentError": ("jupyter_agent.base.errors", "JupyterAgentError"),
    "ConfigError": ("jupyter_agent.base.errors", "ConfigError"),
    "MissingKeyError": ("jupyter_agent.base.errors", "MissingKeyError"),
    "ToolError": ("jupyter_agent.base.errors", "ToolError"),
    "ModelBehaviorError": ("jupyter_agent.base.errors", "ModelBehaviorError"),
    "ResumeError": ("jupyter_agent.base.errors", "ResumeError"),
    "register_secret": ("jupyter_agent.base.secrets", "register_secret"),
}

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

    from . import batch
    from .agents.attachments import attach_files
    from .agents.chat import chat
    from .agents.plan.agent import plan
    from .agents.resume import resume
    from .agents.run import Run, last_run
    from .agents.sandbox import python_sandbox
    from .agents.subagents import Agent, agent_tool, model_tool
    from .agents.toolloop import toolloop
    from .base.errors import (
        ConfigError,
        JupyterAgentError,
        MissingKeyError,
        ModelBehaviorError,
        ResumeError,
        ToolError,
    )
    from .base.events import RunEvent
    from .base.secrets import register_secret
    from .tools.registry import StopRun, Tool, tool


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__, entry=True)


def load_ipython_extension(ipython: InteractiveShell) -> None:
    """``%load_ext jupyter_agent``: register the magics (imported only now) and, in a Jupyter
    kernel, the comm the JupyterLab extension pushes the live notebook on (docs/notebook-tools.md)."""
    from .edge.live_comm import attach
    from .edge.magics import AgentMagics

    ipython.register_magics(AgentMagics)
    attach(ipython)


def unload_ipython_extension(ipython: InteractiveShell) -> None:
    """Nothing to undo beyond what IPython does itself."""


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    """Where JupyterLab finds the prebuilt extension (development installs)."""
    return [{"src": "labextension", "dest": "jupyter-agent"}]
