"""Approvals that outlive one card, kept in this kernel's memory and nowhere else.

Only a person approves a tool call (docs/security.md): a click on its card, ``%agent resume``
typed by them, or an approval they wrote into the cell (``--approve bash``, ``approve=[...]``).
Two of those last longer than one call, and both live here, in the kernel process:

* "Allow for this session" (and a remembered deny): by session and by the tool's identity
  (:func:`tool_identity`: for MCP the server and its tool), until the kernel restarts,
  ``%agent clear`` or ``%agent permissions revoke NAME``;
* the approvals written into a cell, by run id, so the run's later parts (after a click on
  another card) keep them; a resume in a new kernel starts without them.

Nothing here is read from the store, a cassette or a file: those can be written by the
sandbox or arrive with a shared notebook, and a grant read from them would let what a model
wrote approve what it runs next. The sandbox cannot reach a kernel's memory.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

from ..base.state import STATE
from ..session.permissions import Remembered

__all__ = ["Grant", "Grants", "GRANTS", "CellApprovals", "NamedTool", "tool_identity",
           "tool_label",
           "parse_approve", "approval_spelling", "resolve_approvals", "names_identity",
           "AmbiguousNameError"]

_RUN_LIMIT = 1024
"""Runs whose in-cell approvals are kept (the oldest is dropped beyond this)."""


class NamedTool(Protocol):
    """What approvals need of a tool: its name as the model calls it. The rest is read with
    ``getattr``, because only some tools have it: ``origin`` (``user`` when absent),
    ``requires_approval``, ``display`` and an MCP tool's ``server_name``, ``remote_name`` and
    ``server_where``."""

    @property
    def name(self) -> str:
        """The tool's name."""
        ...


def tool_identity(tool: NamedTool) -> str:
    """What a grant is keyed by: where the tool comes from and its name there.

    ``builtin:bash``, ``user:pay``, ``mcp:files/read (python server.py)``: two MCP servers
    exposing a tool of the same name (or one server reconnected to another program) never
    share a grant.
    """
    origin = str(getattr(tool, "origin", "user"))
    if origin == "mcp":
        server = getattr(tool, "server_name", "?")
        remote = getattr(tool, "remote_name", getattr(tool, "name", "?"))
        where = getattr(tool, "server_where", "")
        return f"mcp:{server}/{remote}" + (f" ({where})" if where else "")
    return f"{origin}:{getattr(tool, 'name', '?')}"


def tool_label(tool: NamedTool) -> str:
    """How a card names the tool: its name, and for MCP the server it belongs to."""
    name = str(getattr(tool, "name", "?"))
    if str(getattr(tool, "origin", "")) == "mcp":
        return (f"{getattr(tool, 'remote_name', name)} (MCP server "
                f"{getattr(tool, 'server_name', '?')!r})")
    return name


class AmbiguousNameError(ValueError):
    """A tool name that more than one tool answers to (one line listing each one's spelling)."""


def approval_spelling(tool: NamedTool) -> str:
    """How an approval names ``tool`` unambiguously: ``mcp:SERVER/TOOL`` for an MCP tool (its
    server and its own name there), ``ORIGIN:NAME`` otherwise (``builtin:bash``)."""
    if str(getattr(tool, "origin", "")) == "mcp":
        return f"mcp:{getattr(tool, 'server_name', '?')}/{getattr(tool, 'remote_name', '?')}"
    return tool_identity(tool)


def names_identity(spelling: str, identity: str) -> bool:
    """Whether ``spelling`` (``mcp:SERVER/TOOL``, ``builtin:bash``) names the tool whose
    :func:`tool_identity` is ``identity`` (an MCP identity also carries its command line)."""
    return identity == spelling or identity.startswith(spelling + " (")


def _plain_mcp_name(tool: NamedTool) -> str | None:
    """The ``mcp_<server>_<tool>`` name an MCP tool has before a clash renames it: the name
    a person reads as this tool's, whichever tool ended up with it."""
    if str(getattr(tool, "origin", "")) != "mcp":
        return None
    from ..tools.mcp import mcp_tool_name  # loaded already: an MCP tool exists

    return mcp_tool_name(str(getattr(tool, "server_name", "")),
                         str(getattr(tool, "remote_name", "")))


def _ambiguity(name: str, tools: Iterable[NamedTool]) -> str:
    """The one line refusing ``name`` that several of ``tools`` answer to."""
    listed = "; ".join(
        f"{approval_spelling(t)} ({tool_label(t)}, called {getattr(t, 'name', '?')})"
        for t in tools)
    return (f"{name!r} names more than one tool: {listed}. Name the one you mean by its "
            "server and tool, as mcp:SERVER/TOOL.")


def resolve_approvals(names: Iterable[str], tools: Iterable[NamedTool],
                      known: Iterable[NamedTool] = ()) -> tuple[frozenset[str], list[str]]:
    """The identities (:func:`tool_identity`) of the turn's ``tools`` that ``names``
    approve, and the names that approve none of them.

    A name is a tool's name as the model calls it, or its spelling by origin
    (:func:`approval_spelling`: ``mcp:SERVER/TOOL``, ``builtin:bash``). A plain name that
    more than one tool answers to is refused: with MCP servers ``a`` (tool ``b_c``) and
    ``a_b`` (tool ``c``), ``mcp_a_b_c`` reads as either server's tool, whichever got the
    name. ``known`` adds the other tools that could be meant (every connected MCP tool).

    Raises:
        AmbiguousNameError: such a name (one line listing each candidate's spelling).
    """
    tools = list(tools)
    every = {tool_identity(t): t for t in [*tools, *known]}
    identities: set[str] = set()
    unknown: list[str] = []
    for name in sorted(set(names)):
        if ":" in name:
            hit = [t for t in tools if names_identity(name, tool_identity(t))]
        else:
            meant = [t for t in every.values()
                     if getattr(t, "name", None) == name or _plain_mcp_name(t) == name]
            if len(meant) > 1:
                raise AmbiguousNameError(_ambiguity(name, meant))
            hit = [t for t in tools if getattr(t, "name", None) == name]
        if hit:
            identities.update(tool_identity(t) for t in hit)
        else:
            unknown.append(name)
    return frozenset(identities), unknown


def parse_approve(value: object) -> frozenset[str]:
    """The tool names of ``approve=`` / ``--approve``: a comma-separated string or a list.

    Raises:
        ValueError: something that is neither (the caller names its parameter).
    """
    if value is None:
        return frozenset()
    if isinstance(value, str):
        names = value.split(",")
    elif isinstance(value, Iterable):
        names = list(value)
    else:
        raise ValueError(f"a list of tool names, not a {type(value).__name__}")
    out: set[str] = set()
    for n in names:
        if not isinstance(n, str):
            raise ValueError(f"tool names are strings, not {type(n).__name__}")
        if n.strip():
            out.add(n.strip())
    return frozenset(out)


@dataclass(frozen=True)
class Grant:
    """One remembered choice: ``decision`` for the tool ``identity`` in ``session``."""

    session: str
    name: str
    """The tool's name as the model calls it."""
    identity: str
    """:func:`tool_identity` of the tool."""
    decision: Remembered
    """``allow`` or ``deny``."""
    since: float
    plain: str = ""
    """For an MCP tool, its ``mcp_<server>_<tool>`` name before any clash renamed it."""


@dataclass(frozen=True)
class CellApprovals:
    """What the person wrote into the cell: tool names approved for the run, or every tool
    (``auto_approve=True``, scripts)."""

    names: frozenset[str] = frozenset()
    """As the person wrote them (the card's line)."""
    every: bool = False
    identities: frozenset[str] = frozenset()
    """The approved tools' :func:`tool_identity`, resolved once when the turn was set up: a
    server reconnected later, or another tool given the same name, is not covered."""

    def covers(self, tool: NamedTool) -> bool:
        """Whether a call of ``tool`` was approved in the cell."""
        return self.every or tool_identity(tool) in self.identities

    def __bool__(self) -> bool:
        return self.every or bool(self.names)


@dataclass
class Grants:
    """The kernel's grants (a slot of the process state: a restart starts with none)."""

    _session: dict[tuple[str, str], Grant] = field(default_factory=dict)
    _runs: OrderedDict[str, CellApprovals] = field(default_factory=OrderedDict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # -- "for this session" ---------------------------------------------------------------
    def remember(self, session: str, tool: NamedTool, decision: Remembered) -> None:
        """Remember ``decision`` (``allow``/``deny``) for ``tool`` in ``session``."""
        if decision not in ("allow", "deny"):
            raise ValueError(f"decision must be allow or deny, not {decision!r}")
        key = (session, tool_identity(tool))
        with self._lock:
            self._session[key] = Grant(session, str(getattr(tool, "name", "?")), key[1],
                                       decision, time.time(), _plain_mcp_name(tool) or "")

    def decision(self, session: str | None, tool: NamedTool) -> Remembered | None:
        """The remembered choice for ``tool`` in ``session`` (``None``: none)."""
        if not session:
            return None
        with self._lock:
            g = self._session.get((session, tool_identity(tool)))
        return g.decision if g is not None else None

    def for_session(self, session: str | None) -> dict[str, Remembered]:
        """``{identity: decision}`` of ``session`` (what a sub-agent inherits)."""
        with self._lock:
            return {k[1]: g.decision for k, g in self._session.items() if k[0] == session}

    def listing(self) -> list[Grant]:
        """Every grant of this kernel, oldest first."""
        with self._lock:
            return sorted(self._session.values(), key=lambda g: g.since)

    def revoke(self, name: str, session: str | None = None) -> list[Grant]:
        """Forget the grants whose tool name, identity or spelling (``mcp:SERVER/TOOL``) is
        ``name`` (in ``session`` only, when given); returns what was forgotten.

        Raises:
            AmbiguousNameError: a plain name that grants of more than one tool answer to.
        """
        with self._lock:
            gone = [k for k, g in self._session.items()
                    if name in (g.name, g.plain) or names_identity(name, g.identity)
                    and (session is None or g.session == session)]
            tools = {self._session[k].identity for k in gone}
            if ":" not in name and len(tools) > 1:
                spellings = "; ".join(sorted(i.split(" (")[0] for i in tools))
                raise AmbiguousNameError(f"{name!r} names more than one tool: {spellings}. "
                                         "Name the one you mean as mcp:SERVER/TOOL.")
            return [self._session.pop(k) for k in gone]

    # -- written in the cell --------------------------------------------------------------
    def keep_cell(self, run_id: str, approvals: CellApprovals) -> None:
        """Keep the cell's approvals of ``run_id`` for its later parts (in this kernel)."""
        if not approvals:
            return
        with self._lock:
            self._runs.pop(run_id, None)
            self._runs[run_id] = approvals
            while len(self._runs) > _RUN_LIMIT:
                self._runs.popitem(last=False)

    def cell(self, run_id: str | None) -> CellApprovals:
        """The cell's approvals of ``run_id`` (none in another kernel)."""
        with self._lock:
            return self._runs.get(run_id or "", CellApprovals())

    def clear(self) -> None:
        """Forget every grant (``%agent clear``; a new kernel starts like this)."""
        with self._lock:
            self._session.clear()
            self._runs.clear()


GRANTS: Grants = STATE.slot("runtime.grants", Grants)
"""The one instance."""
