"""MCP servers as tool sources, through the official ``mcp`` package (an optional extra).

``connect_mcp("files", command=["python", "server.py"])`` (stdio) or
``connect_mcp("docs", url="http://127.0.0.1:8000/mcp")`` (streamable HTTP) starts the client,
lists the server's tools and wraps each one as a :class:`~jupyter_agent.tools.registry.Tool`
named ``mcp_<server>_<tool>``. Name them in ``--tools`` (or an agent's tools), one by one or
all of a server at once as ``mcp_<server>``. They follow the permission policy of tools that
are neither built-in nor the user's own: ``ask`` unless an agent override or the session
allows them.

The MCP client is asynchronous. It runs on a private event loop in a background thread, one
per server, for as long as the connection lives; tool calls from the kernel thread are handed
to that loop and waited for. The kernel's own loop is never used or blocked by it.
"""

from __future__ import annotations

import asyncio
import atexit
import builtins
import concurrent.futures
import json
import re
import tempfile
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol, cast

from ..base.errors import ConfigError, ToolError
from ..base.jsontypes import JSONObject
from ..base.state import STATE
from .registry import AnyTool

if TYPE_CHECKING:
    from mcp import ClientSession
    from mcp.client import Transport
    from mcp.types import ListToolsResult
    from mcp.types import Tool as ToolInfo

__all__ = ["MCPServer", "MCPTool", "connect_mcp", "disconnect_mcp", "disconnect_all",
           "mcp_servers", "find_mcp_tools", "mcp_tool_names", "mcp_tool_name"]

_lock = threading.Lock()


def _close_all(servers: dict[str, MCPServer]) -> None:
    with _lock:
        closing = list(servers.values())
        servers.clear()
    for server in closing:
        server.close()


_SERVERS: dict[str, MCPServer] = STATE.slot("tools.mcp_servers", dict, reset=_close_all)
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def mcp_tool_name(server: str, tool: str) -> str:
    """The name the model sees: ``mcp_<server>_<tool>``, cut to the 64 characters APIs take."""
    return f"mcp_{_UNSAFE.sub('_', server)}_{_UNSAFE.sub('_', tool)}"[:64]


def _field(obj: object, *names: str) -> object:
    """A field under its v2 (snake_case) or v1 (camelCase) name."""
    for n in names:
        value = getattr(obj, n, None)
        if value is not None:
            return value
    return None


class _LegacySession(Protocol):
    """An mcp 1.x ``ClientSession``: it pages tool listings by a ``cursor`` keyword."""

    async def list_tools(self, cursor: str | None = None) -> ListToolsResult:
        """One page of the server's tools."""
        ...


def _leaf_message(exc: BaseException) -> str:
    """The first real error inside (possibly nested) exception groups."""
    group = getattr(builtins, "BaseExceptionGroup", None)  # Python 3.11+
    while group is not None and isinstance(exc, group) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"


class MCPTool(AnyTool):
    """One tool of an MCP server; the server validates the arguments against its schema."""

    def __init__(self, server: MCPServer, remote_name: str, description: str,
                 schema: JSONObject) -> None:
        # Not Tool.__init__: that builds the schema from a Python signature; here the server
        # gives the schema.
        def call(**arguments: object) -> str:
            return server.call(remote_name, arguments)

        name = mcp_tool_name(server.name, remote_name)
        call.__name__ = name
        self.fn = call
        self.name = name
        self.description = description or remote_name.replace("_", " ")
        self.batchable = False
        self.timeout = None
        self.requires_approval = False
        self.is_async = False
        # No pydantic model: the server validates (parse_arguments is overridden below).
        self.args_model = None  # type: ignore[assignment]
        params = dict(schema or {})
        params.setdefault("type", "object")
        params.setdefault("properties", {})
        self.parameters = params
        self.origin = "mcp"
        self.server_name = server.name
        self.server_where = server.where
        """The server's command line or URL: part of the tool's identity for grants."""
        self.remote_name = remote_name
        self.__doc__ = self.description
        self.__name__ = name
        self.__wrapped__ = call

    def parse_arguments(self, arguments: str) -> JSONObject:
        """Decode the model's JSON object (validation is the server's job)."""
        from .registry import decode_json_object

        return decode_json_object(arguments)


class MCPServer:
    """A live connection to one MCP server (use :func:`connect_mcp` to make one).

    Args:
        name: Short name; it prefixes the tool names.
        command: The stdio server's command line (program first).
        url: The streamable HTTP endpoint (e.g. ``http://127.0.0.1:8000/mcp``).
        env: Extra environment variables for a stdio server.
        cwd: Working directory of a stdio server.
        headers: HTTP headers for a streamable HTTP server (e.g. authorization).
        timeout: Seconds to wait for the connection and for each tool call.
    """

    def __init__(self, name: str, *, command: Sequence[str] | None = None, url: str | None = None,
                 env: dict[str, str] | None = None, cwd: str | None = None,
                 headers: dict[str, str] | None = None, timeout: float = 60.0) -> None:
        if (command is None) == (url is None):
            raise ConfigError("connect_mcp needs exactly one of command=[...] or url=...")
        if command is not None and (isinstance(command, str) or not command):
            raise ConfigError("command must be a non-empty list: the program, then its arguments")
        self.name = name
        self.command = list(command) if command is not None else None
        self.url = url
        self.env = env
        self.cwd = cwd
        self.headers = headers
        self.timeout = timeout
        self.tools: list[MCPTool] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._main: concurrent.futures.Future[None] | None = None
        self._session: ClientSession | None = None
        self._closing: asyncio.Event | None = None
        self._errlog = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")

    def __repr__(self) -> str:
        return f"<MCPServer {self.name} ({self.where}): {len(self.tools)} tools>"

    @property
    def where(self) -> str:
        """The server's command line or URL."""
        return " ".join(self.command) if self.command else str(self.url or "")

    @property
    def tool_names(self) -> list[str]:
        """The wrapped tools' names."""
        return [t.name for t in self.tools]

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> MCPServer:
        """Connect, initialise the session and list the tools (blocks until done)."""
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._thread = threading.Thread(target=loop.run_forever, daemon=True,
                                        name=f"jupyter-agent-mcp-{self.name}")
        self._thread.start()
        ready: concurrent.futures.Future[list[ToolInfo]] = concurrent.futures.Future()
        self._main = asyncio.run_coroutine_threadsafe(self._serve(ready), loop)
        try:
            infos = ready.result(timeout=self.timeout)
        except BaseException as exc:
            self.close()
            detail = "timed out" if isinstance(exc, concurrent.futures.TimeoutError) \
                else _leaf_message(exc)
            raise ConfigError(f"Could not connect to MCP server {self.name!r}: {detail}"
                              f"{self._stderr_tail()}") from None
        self.tools = [MCPTool(self, str(i.name), str(_field(i, "description") or ""),
                              _schema_of(i)) for i in infos]
        return self

    def _transport(self) -> Transport:
        """The async context manager of the connection's streams (stdio or HTTP)."""
        if self.command is not None:
            from mcp import StdioServerParameters
            from mcp.client.stdio import stdio_client

            params = StdioServerParameters(command=self.command[0], args=self.command[1:],
                                           env=self.env, cwd=self.cwd)
            return stdio_client(params, errlog=self._errlog)
        # The HTTP client's name and arguments differ between mcp 1.x and 2.x: looked up by
        # name, as untyped as the version that is installed makes no difference.
        from mcp.client import streamable_http

        http_client: Callable[..., Transport] | None = getattr(
            streamable_http, "streamable_http_client", None)
        if http_client is None:  # mcp 1.x
            http_client = getattr(streamable_http, "streamablehttp_client")  # noqa: B009
        if not self.headers:
            return http_client(self.url)
        try:
            return http_client(self.url, headers=self.headers)  # mcp 1.x
        except TypeError:
            from mcp.shared._httpx_utils import create_mcp_http_client

            return http_client(self.url, http_client=create_mcp_http_client(headers=self.headers))

    async def _serve(self, ready: concurrent.futures.Future[list[ToolInfo]]) -> None:
        """The connection's lifetime: open, list tools, then wait until :meth:`close`."""
        from mcp import ClientSession

        self._closing = asyncio.Event()
        try:
            async with self._transport() as streams:
                async with ClientSession(streams[0], streams[1]) as session:
                    await session.initialize()
                    infos = await self._list_tools(session)
                    self._session = session
                    ready.set_result(infos)
                    await self._closing.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            raise
        finally:
            self._session = None

    @staticmethod
    async def _list_tools(session: ClientSession) -> list[ToolInfo]:
        result = await session.list_tools()
        tools = list(result.tools)
        cursor = _cursor(result)
        for _ in range(100):  # a server that pages forever must not hang the connection
            if not cursor:
                break
            try:
                from mcp.types import PaginatedRequestParams

                result = await session.list_tools(params=PaginatedRequestParams(cursor=cursor))
            except (ImportError, TypeError):
                legacy = cast("_LegacySession", session)  # mcp 1.x, not in 2.x's types
                result = await legacy.list_tools(cursor=cursor)
            tools.extend(result.tools)
            cursor = _cursor(result)
        return tools

    def call(self, tool: str, arguments: dict[str, object]) -> str:
        """Call ``tool`` on the server and return its result as text.

        Raises:
            ToolError: the server is not connected, the call timed out, or the tool reported
                an error (its text is the message).
        """
        loop, session = self._loop, self._session
        if loop is None or session is None:
            raise ToolError(f"MCP server {self.name!r} is not connected.")
        fut = asyncio.run_coroutine_threadsafe(session.call_tool(tool, arguments), loop)
        try:
            result = fut.result(timeout=self.timeout)
        except concurrent.futures.TimeoutError:
            fut.cancel()
            raise ToolError(f"MCP tool {tool!r} did not answer within {self.timeout:g} s.") from None
        except KeyboardInterrupt:
            fut.cancel()
            raise
        except Exception as exc:  # a protocol error: the model reads it
            raise ToolError(f"MCP error from {self.name!r}: {_leaf_message(exc)}") from None
        text = _result_text(result)
        if _field(result, "is_error", "isError"):
            raise ToolError(text or f"MCP tool {tool!r} failed.")
        return text

    def close(self) -> None:
        """Disconnect (a stdio server process is stopped) and stop the background loop."""
        loop, main = self._loop, self._main
        if loop is None:
            return
        if self._closing is not None:
            loop.call_soon_threadsafe(self._closing.set)
        if main is not None:
            try:
                main.result(timeout=10)
            except BaseException:  # closing: errors of the old connection do not matter
                main.cancel()
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(timeout=10)
        if not loop.is_running():
            loop.close()
        self._loop = None
        self._session = None

    def _stderr_tail(self) -> str:
        try:
            self._errlog.seek(0)
            text = self._errlog.read()[-800:].strip()
        except (OSError, ValueError):
            return ""
        return f"\nServer stderr (end):\n{text}" if text else ""


def _schema_of(info: object) -> JSONObject:
    """A listed tool's input schema (``{}`` when the server sent none)."""
    schema = _field(info, "input_schema", "inputSchema")
    return dict(schema) if isinstance(schema, dict) else {}


def _cursor(listing: object) -> str | None:
    """The cursor of a tool listing's next page, or None on the last page."""
    cursor = _field(listing, "next_cursor", "nextCursor")
    return cursor if isinstance(cursor, str) else None


def _result_text(result: object) -> str:
    parts: list[str] = []
    content = _field(result, "content")
    for block in content if isinstance(content, list) else []:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(str(getattr(block, "text", "")))
        elif kind in ("image", "audio"):
            parts.append(f"[{kind}: {_field(block, 'mime_type', 'mimeType') or 'binary'}]")
        elif kind == "resource":
            res = getattr(block, "resource", None)
            parts.append(str(_field(res, "text") or f"[resource {_field(res, 'uri')}]"))
        else:
            parts.append(str(block))
    structured = _field(result, "structured_content", "structuredContent")
    if not parts and structured is not None:
        parts.append(json.dumps(structured, ensure_ascii=False))
    return "\n".join(parts)


def connect_mcp(name: str, command: Sequence[str] | None = None, *, url: str | None = None,
                env: dict[str, str] | None = None, cwd: str | None = None,
                headers: dict[str, str] | None = None, timeout: float = 60.0) -> MCPServer:
    """Connect an MCP server and make its tools available by name (reconnecting replaces).

    Example: ``connect_mcp("files", command=["python", "server.py"])``, then
    ``%%toolloop --tools mcp_files`` offers all of its tools.

    Raises:
        ConfigError: bad arguments, the ``mcp`` package is missing, or the connection failed
            (the message ends with the server's stderr).
    """
    try:
        import mcp  # noqa: F401
    except ImportError:
        raise ConfigError("MCP needs the mcp package: pip install 'jupyter-agent[mcp]'") from None
    server = MCPServer(name, command=command, url=url, env=env, cwd=cwd, headers=headers,
                       timeout=timeout)
    disconnect_mcp(name)
    server.start()
    with _lock:
        taken = {t.name for other in _SERVERS.values() for t in other.tools}
        renamed = _rename_clashes(server.tools, taken)
        _SERVERS[name] = server
    if renamed:
        import warnings

        warnings.warn("MCP server " + repr(name) + ": " + "; ".join(renamed) + " (another tool "
                      "already had that name).", stacklevel=2)
    return server


def _rename_clashes(tools: list[MCPTool], taken: set[str]) -> list[str]:
    """Give every tool of a new server a name no other tool has: ``mcp_a_b_c`` can come from
    server ``a_b``'s tool ``c`` and from server ``a``'s tool ``b_c``, and one would run under
    the other's name and approval. A clash gets a suffix from a hash of the server and tool.
    Returns what was renamed, as ``old -> new`` texts."""
    import hashlib

    notes: list[str] = []
    for t in tools:
        if t.name in taken:
            digest = hashlib.sha256(f"{t.server_name}\0{t.remote_name}".encode()).hexdigest()
            new = f"{t.name[:55]}_{digest[:8]}"
            notes.append(f"{t.remote_name!r} is called {new} ({t.name} was taken)")
            t.name = t.__name__ = t.fn.__name__ = new
        taken.add(t.name)
    return notes


def disconnect_mcp(name: str) -> bool:
    """Close the server called ``name``; False when none was connected."""
    with _lock:
        server = _SERVERS.pop(name, None)
    if server is None:
        return False
    server.close()
    return True


def disconnect_all() -> None:
    """Close every connected server (also run at interpreter exit)."""
    for name in list(_SERVERS):
        disconnect_mcp(name)


atexit.register(disconnect_all)


def mcp_servers() -> list[MCPServer]:
    """The connected servers."""
    return list(_SERVERS.values())


def mcp_tool_names() -> list[str]:
    """Names of every MCP tool of every connected server."""
    return [n for s in mcp_servers() for n in s.tool_names]


def find_mcp_tools(name: str) -> list[AnyTool] | None:
    """The MCP tool called ``name``, or all tools of server ``mcp_<server>``; None if neither."""
    for s in mcp_servers():
        for t in s.tools:
            if t.name == name:
                return [t]
    for s in mcp_servers():
        if name in (f"mcp_{_UNSAFE.sub('_', s.name)}", s.name):
            return list(s.tools)
    return None
