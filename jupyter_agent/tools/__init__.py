"""Tools: ``@tool``, the registry, schemas from signatures, results as text."""

from .registry import REGISTRY, StopRun, Tool, ToolRegistry, ToolResult, tool

__all__ = ["tool", "Tool", "ToolResult", "StopRun", "REGISTRY", "ToolRegistry"]
