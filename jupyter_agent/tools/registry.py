"""``@tool``: notebook functions as tools, and the registry that offers them to runs."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import inspect
import json
import threading
import time
from typing import Any, Callable, Generic, TypeVar, overload

import json5
from pydantic import BaseModel, ConfigDict, ValidationError

from .._state import STATE
from ..errors import ToolError
from ._format import result_to_text
from ._schema import build_args_model, parse_docstring, strict_schema

__all__ = ["Tool", "ToolResult", "StopRun", "tool", "REGISTRY", "ToolRegistry", "format_validation_error"]

F = TypeVar("F", bound=Callable[..., Any])


class StopRun(Exception):
    """Raise (or return) from a tool to end the run after this round (the stop signal).

    The message, if any, becomes the tool's result text.
    """


class ToolResult(BaseModel):
    """What one tool call produced."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    output: str
    """Text for the model."""
    value: Any = None
    """The raw Python return value (kept on the run object, never sent)."""
    error: str | None = None
    """Short error text when the call failed; ``output`` then tells the model the same."""
    exception: BaseException | None = None
    stop: bool = False
    seconds: float = 0.0


def format_validation_error(exc: ValidationError) -> str:
    """Field-by-field validation errors, as the model is told (spec README item 7)."""
    lines = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err.get("loc", ())) or "(arguments)"
        lines.append(f"- {loc}: {err.get('msg')}")
    return "Invalid arguments:\n" + "\n".join(lines)


def decode_json_object(arguments: str) -> dict[str, Any]:
    """The model's arguments as a dict: JSON, else JSON5 (lenient); raises ToolError."""
    text = (arguments or "").strip() or "{}"
    try:
        raw = json.loads(text)
    except ValueError:
        try:
            raw = json5.loads(text)
        except ValueError as exc:
            raise ToolError(f"Arguments are not valid JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise ToolError("Arguments must be a JSON object.")
    return raw


def invoke_with_usage(t: Tool[Any], arguments: str) -> tuple[ToolResult, list[Any]]:
    """Invoke ``t`` and collect the usage that helpers inside it report (classify, a
    sub-agent, …) as loop ``UsageItem``s, so the run's tokens and cost include them."""
    from ..llm.usage_context import UsageItem, usage_sink

    usages: list[UsageItem] = []
    with usage_sink(lambda module, model, usage, cost: usages.append(
            UsageItem(module, model, usage, cost))):
        result = t.invoke(arguments)
    return result, usages


class Tool(Generic[F]):
    """A function the model may call. Build with :func:`tool`; call it like the function."""

    def __init__(
        self,
        fn: F,
        *,
        name: str | None = None,
        description: str | None = None,
        batchable: bool = True,
        timeout: float | None = None,
        requires_approval: bool = False,
    ) -> None:
        tool_name = name or getattr(fn, "__name__", None)
        if not tool_name or tool_name == "<lambda>":
            raise ToolError("A lambda needs a name: use tool(fn, name='...').")
        doc_desc, param_docs = parse_docstring(fn.__doc__)
        self.fn = fn
        self.name: str = tool_name
        self.description: str = description or doc_desc or tool_name.replace("_", " ")
        self.batchable = batchable
        self.timeout = timeout
        self.requires_approval = requires_approval
        self.is_async = inspect.iscoroutinefunction(fn)
        self.args_model = build_args_model(fn, tool_name, param_docs)
        self.parameters = strict_schema(self.args_model)
        self.__doc__ = fn.__doc__
        self.__name__ = tool_name
        self.__wrapped__ = fn

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<Tool {self.name}: {self.description.splitlines()[0] if self.description else ''}>"

    def schema(self) -> dict[str, Any]:
        """The OpenAI function-tool definition."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description,
                         "parameters": self.parameters},
        }

    def parse_arguments(self, arguments: str) -> dict[str, Any]:
        """Decode the model's JSON (leniently, JSON5) and validate it; raises ToolError."""
        raw = decode_json_object(arguments)
        try:
            model = self.args_model.model_validate(raw)
        except ValidationError as exc:
            raise ToolError(format_validation_error(exc)) from None
        # Keep nested pydantic models as models: the function's annotations ask for them.
        return {k: getattr(model, k) for k in type(model).model_fields}

    def invoke(self, arguments: str) -> ToolResult:
        """Run the tool on the model's raw arguments; never raises for tool failures."""
        start = time.perf_counter()
        try:
            kwargs = self.parse_arguments(arguments)
        except ToolError as exc:
            return ToolResult(output=str(exc), error=str(exc), seconds=time.perf_counter() - start)
        try:
            value = self._run(kwargs)
        except StopRun as exc:
            text = str(exc) or "Stopped."
            return ToolResult(output=text, value=None, stop=True,
                              seconds=time.perf_counter() - start)
        except concurrent.futures.TimeoutError:
            msg = f"Tool error: TimeoutError: {self.name} did not finish within {self.timeout} s"
            return ToolResult(output=msg, error=msg, seconds=time.perf_counter() - start)
        except KeyboardInterrupt:
            raise
        except Exception as exc:  # the model caused it, or the tool is buggy: tell the model
            msg = f"Tool error: {type(exc).__name__}: {exc}"
            return ToolResult(output=msg, error=msg, exception=exc,
                              seconds=time.perf_counter() - start)
        stop = isinstance(value, StopRun)
        text = (str(value) or "Stopped.") if stop else result_to_text(value)
        return ToolResult(output=text, value=None if stop else value, stop=stop,
                          seconds=time.perf_counter() - start)

    def _run(self, kwargs: dict[str, Any]) -> Any:
        if self.is_async:
            return _run_coroutine(self.fn(**kwargs), self.timeout)
        if self.timeout is None:
            return self.fn(**kwargs)
        # A sync function cannot be killed from outside; we stop waiting and report the timeout.
        pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix=f"tool-{self.name}")
        try:
            # copy_context: usage sinks and other context vars must reach the worker thread
            ctx = contextvars.copy_context()
            return pool.submit(ctx.run, self.fn, **kwargs).result(timeout=self.timeout)
        finally:
            pool.shutdown(wait=False)


def _run_coroutine(coro: Any, timeout: float | None) -> Any:
    """Run a coroutine to completion from sync code, even inside a running event loop.

    The kernel's loop is already running in this thread, so the coroutine runs on a private
    loop in a helper thread (no nest_asyncio).
    """
    if timeout is not None:
        coro = asyncio.wait_for(coro, timeout)
    box: dict[str, Any] = {}

    def runner() -> None:
        loop = asyncio.new_event_loop()
        try:
            box["value"] = loop.run_until_complete(coro)
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc
        finally:
            loop.close()

    t = threading.Thread(target=runner, name="jupyter-agent-async-tool", daemon=True)
    t.start()
    t.join()
    if "error" in box:
        err = box["error"]
        if isinstance(err, asyncio.TimeoutError):
            raise concurrent.futures.TimeoutError() from None
        raise err
    return box.get("value")


class ToolRegistry:
    """Tools by name. Re-registering a name replaces the old tool (re-running a cell)."""

    def __init__(self) -> None:
        self._tools: dict[str, Tool[Any]] = {}
        self._lock = threading.Lock()

    def register(self, t: Tool[Any]) -> Tool[Any]:
        """Add or replace ``t``."""
        with self._lock:
            self._tools[t.name] = t
        return t

    def unregister(self, name: str) -> None:
        """Remove a tool if present."""
        with self._lock:
            self._tools.pop(name, None)

    def get(self, name: str) -> Tool[Any] | None:
        """The tool called ``name`` or ``None``."""
        return self._tools.get(name)

    def names(self) -> list[str]:
        """Registered names, in registration order."""
        return list(self._tools)

    def all(self) -> list[Tool[Any]]:
        """Every registered tool."""
        return list(self._tools.values())

    def select(self, names: list[str] | None) -> list[Tool[Any]]:
        """The tools called ``names`` (all when ``None``); an unknown name is a user error."""
        if names is None:
            return self.all()
        missing = [n for n in names if n not in self._tools]
        if missing:
            known = ", ".join(self._tools) or "none registered"
            raise ToolError(f"Unknown tool {missing[0]!r}. Registered tools: {known}")
        return [self._tools[n] for n in names]

    def clear(self) -> None:
        """Forget every tool (tests)."""
        with self._lock:
            self._tools.clear()


REGISTRY: ToolRegistry = STATE.slot("tools.registry", ToolRegistry)
"""The process-wide registry that ``@tool`` writes to and runs read from."""


@overload
def tool(fn: F, /) -> Tool[F]: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    batchable: bool = True,
    timeout: float | None = None,
    requires_approval: bool = False,
    register: bool = True,
) -> Callable[[F], Tool[F]]: ...


def tool(
    fn: F | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    batchable: bool = True,
    timeout: float | None = None,
    requires_approval: bool = False,
    register: bool = True,
) -> Tool[F] | Callable[[F], Tool[F]]:
    """Mark a function as a tool the model may call.

    Use bare (``@tool``) or with options (``@tool(name=..., timeout=5)``). The schema comes from
    the signature and type hints; the description from the docstring (``Args:`` documents the
    parameters). The decorated object is still callable like the function.

    Args:
        name: Tool name (defaults to the function's name).
        description: Overrides the docstring.
        batchable: May run in parallel with neighbouring calls (``%%toolloop --parallel``).
        timeout: Seconds before the call is reported to the model as timed out.
        requires_approval: Ask the user before each call (an approval card).
        register: Add to the global registry (the default).
    """

    def wrap(f: F) -> Tool[F]:
        t: Tool[F] = Tool(f, name=name, description=description, batchable=batchable,
                          timeout=timeout, requires_approval=requires_approval)
        if register:
            REGISTRY.register(t)
        return t

    return wrap(fn) if fn is not None else wrap
