"""``@tool``: notebook functions as tools, and the registry that offers them to runs."""

from __future__ import annotations

import inspect
import json
import math
import threading
import time
import warnings
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Generic, ParamSpec, TypeVar, overload

from pydantic import ConfigDict, ValidationError

from ..base.deferred import DeferredModel
from ..base.errors import ToolDefinitionWarning, ToolError, tool_error_text
from ..base.jsontypes import JSONObject
from ..base.state import STATE
from ._deadline import TOOL_TIMEOUT_ENV, ToolTimeout, call_with_deadline, resolve_timeout
from ._format import result_to_text
from ._schema import build_args_model, parse_docstring, strict_schema

if TYPE_CHECKING:
    from ..llm.usage_context import UsageItem

__all__ = ["Tool", "AnyTool", "ToolResult", "StopRun", "tool", "REGISTRY", "ToolRegistry",
           "format_validation_error",
           "MAX_OUTPUT_CHARS", "NO_DEADLINE"]

P = ParamSpec("P")
R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)

NO_DEADLINE = math.inf
"""``timeout=NO_DEADLINE``: the tool runs in the calling thread with no deadline (for tools that
bound themselves, like a sub-agent with its round limit, or that need the main thread)."""

MAX_OUTPUT_CHARS = 200_000
"""A tool result longer than this is cut (head and tail kept) before the loop sees it: a
function returning megabytes must not flood memory, the store or the compression step."""


class StopRun(Exception):
    """Raise (or return) from a tool to end the run after this round (the stop signal).

    The message, if any, becomes the tool's result text.
    """


class ToolResult(DeferredModel):
    """What one tool call produced."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    output: str
    """Text for the model."""
    value: object = None
    """The raw Python return value (kept on the run object, never sent)."""
    error: str | None = None
    """Short error text when the call failed; ``output`` then tells the model the same."""
    exception: BaseException | None = None
    stop: bool = False
    seconds: float = 0.0


def format_validation_error(exc: ValidationError) -> str:
    """Field-by-field validation errors, as the model is told (docs/behaviour.md §5.3)."""
    lines = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err.get("loc", ())) or "(arguments)"
        lines.append(f"- {loc}: {err.get('msg')}")
    return "Invalid arguments:\n" + "\n".join(lines)


def decode_json_object(arguments: str) -> JSONObject:
    """The model's arguments as a dict: JSON, else JSON5 (lenient); raises ToolError."""
    text = (arguments or "").strip() or "{}"
    try:
        raw = json.loads(text)
    except ValueError:
        import json5  # only for arguments that are not plain JSON

        try:
            raw = json5.loads(text)
        except ValueError as exc:
            raise ToolError(f"Arguments are not valid JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise ToolError("Arguments must be a JSON object.")
    return raw


def invoke_with_usage(t: AnyTool, arguments: str) -> tuple[ToolResult, list[UsageItem]]:
    """Invoke ``t`` and collect the usage that helpers inside it report (classify, a
    sub-agent, …) as loop ``UsageItem``s, so the run's tokens and cost include them."""
    from ..llm.usage_context import UsageItem, usage_sink

    usages: list[UsageItem] = []
    with usage_sink(lambda module, model, usage, cost: usages.append(
            UsageItem(module, model, usage, cost))):
        result = t.invoke(arguments)
    return result, usages


class Tool(Generic[P, R_co]):
    """A function the model may call. Build with :func:`tool`; call it like the function.

    ``Tool[P, R]`` keeps the function's parameters ``P`` and return type ``R``, so calling the
    tool from Python is checked like calling the function.
    """

    origin: str = "user"
    """Where it comes from (``user``: ``@tool``; ``builtin``, ``mcp``, ``spawn``): read by the
    permission policy (``runtime.catalog.tag`` sets it)."""

    def __init__(
        self,
        fn: Callable[P, R_co],
        *,
        name: str | None = None,
        description: str | None = None,
        batchable: bool = True,
        timeout: float | None = None,
        requires_approval: bool = False,
        display: dict[str, str] | None = None,
        side_effects: bool = False,
    ) -> None:
        tool_name = name or getattr(fn, "__name__", None)
        if not tool_name or tool_name == "<lambda>":
            raise ToolError("A lambda needs a name: use tool(fn, name='...').")
        if timeout is not None and not (isinstance(timeout, (int, float)) and timeout > 0):
            raise ToolError(f"Tool {tool_name!r}: timeout must be a positive number of seconds "
                            f"(math.inf for no deadline), not {timeout!r}.")
        doc_desc, param_docs = parse_docstring(fn.__doc__)
        self.fn = fn
        self.name: str = tool_name
        self.description: str = description or doc_desc or tool_name.replace("_", " ")
        self.batchable = batchable
        self.timeout = timeout
        self.requires_approval = requires_approval
        self.side_effects = side_effects
        """It changes something outside the run: a batch item offered it is never silently run
        twice (docs/behaviour.md, batches on Dask)."""
        self.display: dict[str, str] = dict(display or {})
        """How a card shows an argument: ``{"code": "python"}`` highlights ``code`` as Python."""
        self.is_async = inspect.iscoroutinefunction(fn)
        self.args_model = build_args_model(fn, tool_name, param_docs)
        self.parameters = strict_schema(self.args_model)
        self.__doc__ = fn.__doc__
        self.__name__ = tool_name
        self.__wrapped__ = fn

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R_co:
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<Tool {self.name}: {self.description.splitlines()[0] if self.description else ''}>"

    def schema(self) -> JSONObject:
        """The OpenAI function-tool definition."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description,
                         "parameters": self.parameters},
        }

    def parse_arguments(self, arguments: str) -> Mapping[str, object]:
        """Decode the model's JSON (leniently, JSON5) and validate it; raises ToolError."""
        raw = decode_json_object(arguments)
        try:
            model = self.args_model.model_validate(raw)
        except ValidationError as exc:
            raise ToolError(format_validation_error(exc)) from None
        # Keep nested pydantic models as models: the function's annotations ask for them.
        return {k: getattr(model, k) for k in type(model).model_fields}

    def deadline(self) -> float | None:
        """Seconds a call may take: ``timeout``, else the package default (None: no deadline).

        Raises:
            ConfigError: ``JUPYTER_AGENT_TOOL_TIMEOUT`` is malformed.
        """
        return resolve_timeout(self.timeout)

    def invoke(self, arguments: str) -> ToolResult:
        """Run the tool on the model's raw arguments; never raises for tool failures.

        The call is bounded by :meth:`deadline`; a call past it becomes the result
        ``Tool error: timed out after N s`` and the run goes on. A result longer than
        :data:`MAX_OUTPUT_CHARS` is cut.

        Raises:
            ConfigError: ``JUPYTER_AGENT_TOOL_TIMEOUT`` is malformed.
            KeyboardInterrupt: the kernel was interrupted during the call.
        """
        start = time.perf_counter()
        limit = self.deadline()  # a malformed setting is the user's to fix: raised, not hidden
        try:
            kwargs = self.parse_arguments(arguments)
        except ToolError as exc:
            return _failed(str(exc), start)
        try:
            value = call_with_deadline(self.fn, kwargs, limit, is_async=self.is_async,
                                       name=self.name)
        except StopRun as exc:
            text = str(exc) or "Stopped."
            return ToolResult(output=_capped(text), value=None, stop=True,
                              seconds=time.perf_counter() - start)
        except ToolTimeout as exc:
            return _failed(f"Tool error: {exc} ({self.name} did not finish and was {exc.how}; "
                           f"raise @tool(timeout=...) or {TOOL_TIMEOUT_ENV})", start)
        except KeyboardInterrupt:
            raise
        except Exception as exc:  # the model caused it, or the tool is buggy: tell the model
            return _failed(tool_error_text(exc), start, exc)
        stop = isinstance(value, StopRun)
        text = (str(value) or "Stopped.") if stop else result_to_text(value)
        return ToolResult(output=_capped(text), value=None if stop else value, stop=stop,
                          seconds=time.perf_counter() - start)


def _capped(text: str) -> str:
    if len(text) <= MAX_OUTPUT_CHARS:
        return text
    from .builtin import cap_output  # only for long results: keeps the import light

    return cap_output(text, MAX_OUTPUT_CHARS)


def _failed(message: str, start: float, exc: BaseException | None = None) -> ToolResult:
    message = _capped(message)
    return ToolResult(output=message, error=message, exception=exc,
                      seconds=time.perf_counter() - start)


class ToolRegistry:
    """Tools by name. Re-registering a name replaces the old tool (re-running a cell)."""

    def __init__(self) -> None:
        self._tools: dict[str, AnyTool] = {}
        self._lock = threading.Lock()

    def register(self, t: AnyTool) -> AnyTool:
        """Add or replace ``t``."""
        with self._lock:
            self._tools[t.name] = t
        return t

    def unregister(self, name: str) -> None:
        """Remove a tool if present."""
        with self._lock:
            self._tools.pop(name, None)

    def get(self, name: str) -> AnyTool | None:
        """The tool called ``name`` or ``None``."""
        return self._tools.get(name)

    def names(self) -> list[str]:
        """Registered names, in registration order."""
        return list(self._tools)

    def all(self) -> list[AnyTool]:
        """Every registered tool."""
        return list(self._tools.values())

    def select(self, names: list[str] | None) -> list[AnyTool]:
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


AnyTool = Tool[..., object]
"""A tool of whatever function: a ``Tool[P, R]`` of any ``P`` and ``R`` is one (``...`` takes any
parameters and ``Tool`` is covariant in its return type), so a list of mixed tools is
``list[AnyTool]``."""


@overload
def tool(fn: Callable[P, R], /) -> Tool[P, R]: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    batchable: bool = True,
    timeout: float | None = None,
    requires_approval: bool = False,
    display: dict[str, str] | None = None,
    register: bool = True,
    side_effects: bool = False,
) -> Callable[[Callable[P, R]], Tool[P, R]]: ...


def tool(
    fn: Callable[P, R] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    batchable: bool = True,
    timeout: float | None = None,
    requires_approval: bool = False,
    display: dict[str, str] | None = None,
    register: bool = True,
    side_effects: bool = False,
) -> Tool[P, R] | Callable[[Callable[P, R]], Tool[P, R]]:
    """Mark a function as a tool the model may call.

    Use bare (``@tool``) or with options (``@tool(name=..., timeout=5)``). The schema comes from
    the signature and type hints; the description from the docstring (``Args:`` documents the
    parameters). The decorated object is still callable like the function.

    Args:
        name: Tool name (defaults to the function's name).
        description: Overrides the docstring.
        batchable: May run in parallel with neighbouring calls (``%%toolloop --parallel``).
        timeout: Seconds the call may take before it is reported to the model as timed out
            (a sync function is abandoned, a coroutine cancelled). Default: the package
            default, 300 s or ``JUPYTER_AGENT_TOOL_TIMEOUT``; :data:`NO_DEADLINE`
            (``math.inf``): none, and the function runs in the calling thread.
        requires_approval: Ask the user before each call (an approval card).
        display: Argument name -> language, so a card highlights it (``{"code": "python"}``).
        register: Add to the global registry (the default).
        side_effects: The function changes something outside the run (sends a message,
            writes a database): a batch item offered it whose Dask worker died is marked
            for you instead of being run again.
    """

    def wrap(f: Callable[P, R]) -> Tool[P, R]:
        t: Tool[P, R] = Tool(f, name=name, description=description, batchable=batchable,
                          timeout=timeout, requires_approval=requires_approval,
                          display=display, side_effects=side_effects)
        _warn_if_undescribed(t, f, description)
        if register:
            REGISTRY.register(t)
        return t

    return wrap(fn) if fn is not None else wrap


def _warn_if_undescribed(t: AnyTool, fn: Callable[..., object], description: str | None) -> None:
    """Warn when the model would learn little: no docstring (it sees only the name) or
    parameters without type hints (it may send any JSON value). The tool still registers.
    Each message names the tool, so every such tool is warned about once."""
    problems = []
    if not description and not (fn.__doc__ or "").strip():
        problems.append("no docstring (the model sees only its name): say what it does and "
                        "when to use it")
    untyped = [p.name for p in inspect.signature(fn).parameters.values()
               if p.annotation is inspect.Parameter.empty]
    if untyped:
        problems.append(f"no type hint on {', '.join(untyped)} (the model may send any JSON "
                        f"value): annotate, e.g. `{untyped[0]}: int`")
    if problems:
        warnings.warn(f"@tool {t.name}: {'; '.join(problems)}.", ToolDefinitionWarning,
                      stacklevel=3)
