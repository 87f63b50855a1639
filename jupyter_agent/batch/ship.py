"""Notebook tools on Dask workers: shipped as functions (cloudpickle), rebuilt there.

A worker process has none of the notebook's ``@tool`` registrations. The kernel resolves the
tools an item may use and sends each user tool as its function plus its options; Dask pickles
the function with cloudpickle, by value when it was defined in the notebook, globals it reads
included. Built-in tools travel by name and are built on the worker (bound to its working
directory). A ``Tool`` object itself is not sent: its argument model is a class made at run
time, which is rebuilt from the function on the other side instead.

The kernel packs the tools once per batch and the cluster holds them once (scattered to every
worker); each worker builds them once (argument models and schemas: about 3 ms a tool) and
keeps them for every item of the batch (:func:`built_tools`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ..tools.registry import AnyTool
    from .item import ClientSettings

__all__ = ["Pickler", "ShippedTool", "ToolPack", "pack_tools", "unpack_tools", "built_tools",
           "client_settings", "check_shippable", "pickler"]

_BUILT: dict[str, list[object] | None] = {}
"""On a worker: the tools of the last few batches, built (token -> tools)."""
_BUILT_LOCK = threading.Lock()
_KEEP = 8


@dataclass
class ShippedTool:
    """A user tool as data: the function and the options of its ``@tool``."""

    fn: Callable[..., object]
    name: str
    description: str
    batchable: bool = True
    timeout: float | None = None
    requires_approval: bool = False
    origin: str | None = None
    side_effects: bool = False


@dataclass
class ToolPack:
    """A batch's tools as sent once to the cluster; ``token`` names them on the workers."""

    token: str
    tools: list[object] | None
    """What :func:`pack_tools` made: :class:`ShippedTool` s and built-in tools' names."""
    side_effects: list[str] = field(default_factory=list)
    """Names of the tools marked ``side_effects``: an item offered one is not run twice."""


def _ship(t: AnyTool) -> ShippedTool:
    return ShippedTool(fn=t.fn, name=t.name, description=t.description, batchable=t.batchable,
                       timeout=t.timeout, requires_approval=t.requires_approval,
                       origin=getattr(t, "origin", None),
                       side_effects=bool(getattr(t, "side_effects", False)))


def pack_tools(specs: object, agent: object = None) -> list[object]:
    """The tools an item may use, ready to send: :class:`ShippedTool` for user tools, names
    for built-ins. ``None`` means the agent's tools, else every ``@tool`` of the notebook
    (``specs`` is the batch's ``tools`` option, as the entry point takes it)."""
    from ..tools.registry import REGISTRY, Tool

    if specs is None:
        specs = list(getattr(agent, "tools", None) or []) or REGISTRY.all()
    out: list[object] = []
    for spec in specs if isinstance(specs, Iterable) else [specs]:
        if isinstance(spec, Tool):
            out.append(spec.name if getattr(spec, "origin", "user") == "builtin" else _ship(spec))
        elif isinstance(spec, str):
            found = REGISTRY.get(spec.strip())
            out.append(_ship(found) if found is not None else spec.strip())
        elif callable(spec):
            out.append(_ship(Tool(spec)))
        else:
            out.append(spec)  # refused by the entry point with its own message
    return out


def unpack_tools(packed: list[object] | None) -> list[object] | None:
    """Tools back from :func:`pack_tools` (on the worker)."""
    if packed is None:
        return None
    from ..runtime.catalog import tag
    from ..tools.registry import Tool

    out: list[object] = []
    for p in packed:
        if isinstance(p, ShippedTool):
            t = Tool(p.fn, name=p.name, description=p.description, batchable=p.batchable,
                     timeout=p.timeout, requires_approval=p.requires_approval,
                     side_effects=p.side_effects)
            out.append(tag(t, p.origin) if p.origin else t)
        else:
            out.append(p)
    return out


def built_tools(pack: ToolPack) -> list[object] | None:
    """The pack's tools built on this worker: once per batch, then shared by its items (a
    built ``Tool`` is used by many threads at once in the thread engine too)."""
    with _BUILT_LOCK:
        if pack.token in _BUILT:
            return _BUILT[pack.token]
    tools = unpack_tools(pack.tools)
    with _BUILT_LOCK:
        _BUILT[pack.token] = tools
        while len(_BUILT) > _KEEP:
            del _BUILT[next(iter(_BUILT))]
    return tools


def client_settings() -> ClientSettings:
    """The kernel's client settings a worker needs (never the key: a worker reads its own
    environment, which a cluster started here inherits)."""
    import os

    from ..base import config

    s = config.settings
    return {"base_url": s.base_url or os.environ.get("OPENAI_BASE_URL") or None,
            "max_retries": s.max_retries, "retry_base_delay": s.retry_base_delay,
            "retry_max_delay": s.retry_max_delay, "timeout": s.timeout}


def check_shippable(pack: ToolPack | None, options: Mapping[str, object]) -> None:
    """Refuse, in one line and before a cluster starts, what cannot travel to a worker.

    A tool (or an output class) that holds a lock, an open connection or a file, or a class
    defined inside a function whose locals hold one, cannot be pickled; Dask would otherwise
    fail deep in its serializer with a traceback of its own.
    """
    from ..base.errors import ConfigError

    cloudpickle = pickler()

    def why(exc: Exception) -> str:
        return (str(exc).splitlines() or [type(exc).__name__])[0][:200]

    for t in (pack.tools or []) if pack is not None else []:
        try:
            cloudpickle.dumps(t)
        except Exception as exc:  # noqa: BLE001  # whatever pickling raises
            name = getattr(t, "name", None) or str(t)
            raise ConfigError(
                f"engine='dask' cannot send the tool {name!r} to the workers ({why(exc)}): "
                "let the tool open its own connections, locks or files, or use "
                "engine='thread'.") from None
    for key, value in options.items():
        try:
            cloudpickle.dumps(value)
        except Exception as exc:  # noqa: BLE001
            raise ConfigError(
                f"engine='dask' cannot send the batch's {key} to the workers ({why(exc)}): "
                "define it at the top level of a cell, or use engine='thread'.") from None


class Pickler(Protocol):
    """What is used of ``cloudpickle`` (which ships no type hints)."""

    def dumps(self, obj: object) -> bytes:
        """``obj`` pickled, a function or class of the notebook by value."""
        ...


def pickler() -> Pickler:
    """The ``cloudpickle`` module (the ``dask`` extra brings it), as Dask pickles a task's
    arguments: a function or a class defined in the notebook travels by value."""
    try:
        import cloudpickle  # type: ignore[import-untyped]  # cloudpickle ships no type hints
    except ImportError:
        from ..base.errors import ConfigError

        raise ConfigError("engine 'dask' needs dask.distributed: "
                          "pip install 'jupyter-agent[dask]'") from None
    module: Pickler = cloudpickle
    return module
