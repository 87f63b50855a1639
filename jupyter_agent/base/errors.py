"""Error classes, split by whose fault the error is.

User mistakes (bad magic arguments, missing key, unknown tool name on the command line) are
raised; the magics turn them into one line without a traceback. Model mistakes are normally fed
back to the model as a tool result, so they rarely reach the user.

Every message is masked (:func:`jupyter_agent.base.secrets.mask`) when the error is made: a server
error that echoes the key never shows it, in a traceback, ``str(exc)`` or ``run.error``.
"""

from __future__ import annotations

from .secrets import mask

__all__ = [
    "tool_error_text",
    "JupyterAgentError",
    "ConfigError",
    "MissingKeyError",
    "ToolError",
    "ToolDefinitionWarning",
    "MagicUsageError",
    "ParameterError",
    "ModelRequestError",
    "ModelBehaviorError",
    "ResumeError",
]


class JupyterAgentError(Exception):
    """Base class of every error raised by jupyter_agent (its message never holds a secret)."""

    def __init__(self, *args: object) -> None:
        super().__init__(*(mask(a) if isinstance(a, str) else a for a in args))

    def __str__(self) -> str:
        # Also masks a secret registered after the error was made.
        return mask(super().__str__())


class ConfigError(JupyterAgentError):
    """The configuration is incomplete or contradictory (a user mistake)."""


class MissingKeyError(ConfigError):
    """No API key is configured for the chosen model profile."""

    def __init__(self, env_var: str = "OPENAI_API_KEY") -> None:
        super().__init__(
            f"No API key: set {env_var} or `%config AgentMagics.api_key = '...'`"
        )
        self.env_var = env_var


class ToolError(JupyterAgentError):
    """A tool is declared wrongly or asked for by a name that does not exist (a user mistake)."""


class ToolDefinitionWarning(UserWarning):
    """A ``@tool`` the model can use only poorly (no docstring, parameters without type hints);
    it is registered anyway."""


class MagicUsageError(JupyterAgentError):
    """A magic was called with bad arguments or an empty body."""


class ParameterError(JupyterAgentError, ValueError):
    """A Python caller passed a parameter outside its range (the message names the parameter).

    ``parameters`` are the names the message uses, so the magics can say ``--max-rounds``
    where a script caller reads ``max_rounds``.
    """

    def __init__(self, message: str, *, parameters: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.parameters = tuple(parameters)


class ModelRequestError(JupyterAgentError):
    """The model request failed after retries (HTTP error, connection lost, empty response)."""

    def __init__(self, message: str, *, status_code: int | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code


class ModelBehaviorError(JupyterAgentError):
    """The model produced something unusable (bad JSON, unknown tool). Usually fed back."""


class ResumeError(JupyterAgentError):
    """A suspended run cannot be resumed (already answered, superseded, or missing)."""


def tool_error_text(exc: BaseException) -> str:
    """What the model is told about a tool that raised ``exc``: ``Tool error: <Type>:
    <message>`` (docs/behaviour.md §5.3), the same whether the tool or a hook around it
    raised."""
    message = str(exc).strip()
    if not message:
        return f"Tool error: {type(exc).__name__}"
    return f"Tool error: {type(exc).__name__}: {message}"
