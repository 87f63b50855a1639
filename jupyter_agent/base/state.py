"""The process's mutable state, behind one owner.

A notebook kernel keeps a few things for as long as it lives: the ``@tool`` registry, the
named agents, MCP connections, cached model clients, loaded cassettes, live displays, what a
suspended run needs to be resumed in this kernel. Each layer keeps its own part (no layer
imports another for it), but every part is a *slot* of the one :data:`STATE` object:

* ``STATE.slot("tools.registry", ToolRegistry)`` makes the object once and returns the same
  object on every later call (a module keeps it under its usual name);
* ``STATE.reset()`` empties every slot in place (``clear()``, or the slot's own ``reset``
  function when emptying means more, e.g. closing connections), so a module's reference
  stays valid. Tests call it around every test (``tests/conftest.py``); a user never needs to.

The ground floor: imports nothing of the package.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar, cast, overload

if TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = ["ProcessState", "STATE", "Clearable", "Box", "to_defaults"]

T = TypeVar("T")
C = TypeVar("C", bound="Clearable")


class Clearable(Protocol):
    """An object a slot can empty without help (a dict, a set, a list, a registry)."""

    def clear(self) -> None: ...


@dataclass
class _Slot:
    """A value and how to bring it back to its default."""

    value: object
    reset: Callable[[], None]
    """Brings ``value`` back to its default (the slot's ``reset`` applied to it)."""


class Box(Generic[T]):
    """A slot for one value (``None`` when empty): the default store, a running server."""

    def __init__(self) -> None:
        self.value: T | None = None

    def clear(self) -> None:
        """Forget the value."""
        self.value = None


def to_defaults(obj: BaseModel) -> None:
    """Reset a pydantic model in place to a fresh instance's field values (settings, rules:
    objects that hold defaults rather than start empty)."""
    fresh = type(obj)()
    for name in type(obj).model_fields:
        setattr(obj, name, getattr(fresh, name))


class ProcessState:
    """Named slots of per-process state, each made once and reset together."""

    def __init__(self) -> None:
        self._slots: dict[str, _Slot] = {}
        self._lock = threading.RLock()

    @overload
    def slot(self, name: str, factory: Callable[[], C], *, reset: None = None) -> C: ...

    @overload
    def slot(self, name: str, factory: Callable[[], T], *, reset: Callable[[T], None]) -> T: ...

    def slot(self, name: str, factory: Callable[[], T], *,
             reset: Callable[[T], None] | None = None) -> T:
        """The object of slot ``name``, made by ``factory`` on first use.

        Args:
            name: ``<layer>.<what>`` (``agents.held``, ``clients.cassettes``); unique.
            factory: Makes the (empty) object.
            reset: Empties it for :meth:`reset`; default: its ``clear()`` method.
        """
        with self._lock:
            found = self._slots.get(name)
            if found is None:
                value = factory()
                found = self._slots[name] = _Slot(value, _emptier(value, reset))
            # Slots hold different types; the first caller's factory fixed this one's.
            return cast(T, found.value)

    def names(self) -> list[str]:
        """The slots made so far, in the order they were made."""
        with self._lock:
            return list(self._slots)

    def reset(self) -> None:
        """Empty every slot, newest first (a later layer may hold on to an earlier one's)."""
        with self._lock:
            slots = list(self._slots.values())
        errors: list[BaseException] = []
        for s in reversed(slots):
            try:
                s.reset()
            except Exception as exc:  # one slot failing must not leave the others dirty
                errors.append(exc)
        if errors:
            raise errors[0]


def _emptier(value: T, reset: Callable[[T], None] | None) -> Callable[[], None]:
    """What empties ``value``: ``reset`` applied to it, else its own ``clear()`` (a slot
    without ``reset`` holds a :class:`Clearable`: :meth:`ProcessState.slot`'s overloads)."""
    if reset is not None:
        return lambda: reset(value)
    return lambda: cast(Clearable, value).clear()


STATE = ProcessState()
"""The one owner of this process's mutable state."""
