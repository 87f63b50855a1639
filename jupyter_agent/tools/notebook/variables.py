"""Which notebook variables an agent may see, and their listing and inspection.

A variable is shown when it is the user's: not IPython's own (``_``, ``_i1``, ``In``, ``Out``,
``exit``, ``get_ipython`` and everything else IPython put into the namespace at start-up), not a
module, not an object or function of this package (``tool``, a ``Tool``, an ``Agent``), and
its name does not look like a secret (:func:`jupyter_agent.base.secrets.is_secret_name`). An
allow-list narrows that further. Secret-named variables are never shown, even when allowed.
"""

from __future__ import annotations

import functools
import keyword
import sys
import time
import types
from collections.abc import Iterable, Mapping
from typing import Protocol, runtime_checkable

from ...base.errors import ToolError
from ...base.secrets import is_secret_name, mask
from ._text import one_line, safe_repr, type_name
from ._time_limit import call_with_limit
from .summaries import DEFAULT_MAX_CHARS, summarize, summary_line

__all__ = ["Namespace", "Shell", "VariableError", "resolve_namespace", "variable_summaries"]

_IPYTHON_NAMES = frozenset({"In", "Out", "exit", "quit", "get_ipython", "open"})
_PACKAGE = "jupyter_agent"
MAX_LISTED = 200
"""Variables listed one by one; more are counted."""
LIST_SECONDS = 3.0
"""Time all one-line summaries of a listing may take; after it only types are shown."""


class VariableError(ToolError):
    """A variable is missing, hidden from the agent, or its name is malformed."""


@runtime_checkable
class Shell(Protocol):
    """What the notebook tools need of an IPython shell: its namespace (IPython is not
    imported here). What else a shell may have (``display_pub``, ``history_manager``,
    ``kernel``…) is looked up with ``getattr``: a shell-like object without it still works."""

    user_ns: dict[str, object]


def resolve_namespace(shell: object = None) -> tuple[Shell | None, Mapping[str, object]]:
    """``(shell, namespace)`` for a shell, a plain dict, or ``None`` (the running IPython
    shell, else the ``__main__`` module's globals of a plain script).

    Raises:
        TypeError: ``shell`` is none of these.
    """
    if isinstance(shell, Mapping):
        return None, shell
    if shell is None and "IPython" in sys.modules:
        # The running shell, without importing IPython here (it is loaded: we run in it).
        shell = sys.modules["IPython"].get_ipython()
    if shell is None:
        return None, sys.modules["__main__"].__dict__
    if not isinstance(shell, Shell):
        raise TypeError(f"Notebook tools need an IPython shell, a namespace dict or None, "
                        f"not {type(shell).__name__}.")
    return shell, shell.user_ns


def _is_package_object(value: object) -> bool:
    module = getattr(type(value), "__module__", "") or ""
    if module.startswith(_PACKAGE):
        return True
    if isinstance(value, (types.FunctionType, types.BuiltinFunctionType, type)):
        return (getattr(value, "__module__", "") or "").startswith(_PACKAGE)
    return False


class Namespace:
    """The notebook's variables as an agent may see them.

    Args:
        shell: An IPython shell, a plain dict, or ``None`` (the running shell, else
            ``__main__``). The namespace is read on every call, so new variables appear.
        allow: Only these variable names may be seen (``None``: every user variable).
    """

    def __init__(self, shell: object = None, allow: Iterable[str] | None = None) -> None:
        self.shell, self._ns = resolve_namespace(shell)
        self.allow = None if allow is None else frozenset(allow)

    @property
    def ns(self) -> Mapping[str, object]:
        """The live namespace (the shell's ``user_ns``)."""
        return self.shell.user_ns if self.shell is not None else self._ns

    def hidden_reason(self, name: str) -> str | None:
        """Why ``name`` is not shown to the agent, or ``None`` when it is."""
        if is_secret_name(name):
            return f"{name!r} is not shared with the agent: its name looks like a secret."
        if self.allow is not None and name not in self.allow:
            return f"{name!r} is not among the variables shared with the agent."
        ns = self.ns
        if name not in ns:
            return f"No variable {name!r} in the notebook."
        value = ns[name]
        hidden = getattr(self.shell, "user_ns_hidden", None) or {}
        if name.startswith("_") or name in _IPYTHON_NAMES or (
                name in hidden and hidden[name] is value):
            return f"{name!r} belongs to IPython, not to the notebook's variables."
        if isinstance(value, types.ModuleType):
            return f"{name!r} is a module, not a variable."
        if _is_package_object(value):
            return f"{name!r} is part of jupyter_agent, not a notebook variable."
        return None

    def names(self) -> list[str]:
        """The visible variables, in the order they were first defined."""
        return [n for n in list(self.ns) if isinstance(n, str) and self.hidden_reason(n) is None]

    def get(self, name: str) -> object:
        """The value of a visible variable or ``a.b.c`` attribute path; raises VariableError."""
        parts = name.strip().split(".")
        if not all(p.isidentifier() and not keyword.iskeyword(p) for p in parts):
            raise VariableError(f"Not a variable name: {one_line(name, 80)!r} (write a name "
                                "like df, or an attribute path like model.config).")
        reason = self.hidden_reason(parts[0])
        if reason is not None:
            raise VariableError(reason + self._known_hint())
        value = self.ns[parts[0]]
        for part in parts[1:]:
            if part.startswith("_") or is_secret_name(part):
                raise VariableError(f"Attribute {part!r} is not shared with the agent.")
            try:
                ok, value = call_with_limit(functools.partial(getattr, value, part), 1.0)
            except AttributeError:
                raise VariableError(f"{type_name(value)} object has no attribute {part!r}.") \
                    from None
            if not ok:
                raise VariableError(f"Reading {part!r} took longer than 1 s.")
        return value

    def _known_hint(self) -> str:
        names = self.names()
        if not names:
            return " The notebook has no variables the agent may see."
        shown = ", ".join(names[:30]) + (", …" if len(names) > 30 else "")
        return f" Variables: {shown}"

    # ------------------------------------------------------------------ tool bodies
    def listing(self) -> str:
        """Every visible variable on one line: name, type and a short summary."""
        names = self.names()
        if not names:
            return "The notebook has no variables yet (or none the agent may see)."
        deadline = time.monotonic() + LIST_SECONDS
        lines = [f"{len(names):,} variable{'s' if len(names) != 1 else ''} "
                 "(name (type): summary):"]
        for name in names[:MAX_LISTED]:
            value = self.ns.get(name)
            left = deadline - time.monotonic()
            summary = "(not summarised: the listing ran out of time)"
            if left > 0:
                try:
                    ok, text = call_with_limit(functools.partial(summary_line, value),
                                               min(0.5, left))
                except Exception as exc:  # a hostile object: say so and go on
                    ok, text = True, f"(summary failed: {type(exc).__name__})"
                summary = text if ok and text is not None else "(summary took too long)"
            lines.append(f"{name} ({type_name(value)}): {summary}")
        if len(names) > MAX_LISTED:
            lines.append(f"… {len(names) - MAX_LISTED:,} more variables: "
                         + ", ".join(names[MAX_LISTED:MAX_LISTED + 50]))
        return mask("\n".join(lines))

    def inspection(self, name: str, *, rows: int = 3, columns: list[str] | None = None,
                   max_chars: int = DEFAULT_MAX_CHARS, seconds: float = 10.0) -> str:
        """The bounded summary of one visible variable (see :func:`summarize`)."""
        value = self.get(name)
        try:
            ok, text = call_with_limit(
                lambda: summarize(value, rows=rows, columns=columns, max_chars=max_chars),
                seconds)
        except KeyError as exc:  # an unknown column: the message lists the real ones
            raise VariableError(str(exc.args[0]) if exc.args else str(exc)) from None
        except Exception as exc:  # an object that lies about its type, a broken library
            ok, text = True, (f"type: {type_name(value)} (no summary: {type(exc).__name__}: "
                              f"{one_line(str(exc), 200)})\nrepr: {safe_repr(value, 500)}")
        if not ok:
            text = f"type: {type_name(value)} (the summary took longer than {seconds:g} s)"
        return mask(f"{name}: {text}")


def variable_summaries(names: Iterable[str], ns: object = None, *,
                       max_chars: int = 2000) -> str:
    """Summaries of ``names`` to put into a prompt (``--with NAME``).

    Args:
        names: Variable names (or attribute paths).
        ns: An IPython shell, a namespace dict, or ``None`` (the running shell).
        max_chars: Budget of each variable's summary.

    Raises:
        VariableError: a name is missing, hidden or looks like a secret (one clear line).
    """
    space = Namespace(ns)
    blocks = []
    for name in names:
        text = space.inspection(name, max_chars=max_chars)
        blocks.append(f"Variable {text}" if not text.startswith("Variable") else text)
    return "\n\n".join(blocks)
