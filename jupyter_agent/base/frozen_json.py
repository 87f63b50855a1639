"""JSON values that never change, encoded once: what keeps a plan's cost per round flat.

Every ``update_plan`` round emits ``plan_updated`` with the whole plan (docs/behaviour.md §6),
and the recorder scans its JSON for secrets while the store writes its JSON: two encodings of a
100-step plan per round (about 0.3 ms; 3 ms at 1,000 steps), though one step changed.
``agents/plan/_hooks.py`` hands out each step's JSON as a :class:`FrozenDict` made once per
change and shared by the later events, so its text is encoded once per style and reused:
:func:`dumps` encodes a value whose parts are frozen by joining their texts, and gives exactly
what ``json.dumps`` gives (``tests/test_frozen_json.py``).

Frozen containers refuse every change, ``__init__`` again included (a cached text must never
go stale: the recorder would scan one text and pass on another value). Calling ``dict``'s or
``list``'s own methods on one (``dict.__setitem__(d, k, v)``) goes around that, as it does for
any subclass: only code in the kernel can, and such code can read the secrets anyway. A copy
(``copy``, ``deepcopy``, pickle) is a plain, mutable ``dict`` or ``list``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import NoReturn, Union, cast, overload

from .jsontypes import JSONValue

__all__ = ["FrozenDict", "FrozenList", "dumps", "freeze"]

Default = Callable[[object], object]
"""``json.dumps``'s ``default``: a value JSON cannot hold -> one it can (or raise)."""

Style = tuple[bool, str, str, Union[Default, None]]
"""``(ensure_ascii, item separator, key separator, default)``: the ``json.dumps`` settings a
text is for."""

Encode = Callable[[object], str]
"""One style's ``json.dumps``."""


def _refuse(self: object, *args: object, **kwargs: object) -> NoReturn:
    raise TypeError(f"a {type(self).__name__} is read-only (its JSON is cached); copy it first")


def _first_init(self: object) -> None:
    """Refuse ``__init__`` on a made container: calling it again would change its contents."""
    if hasattr(self, "_texts"):  # an unset slot: the first call, from the constructor
        _refuse(self)


def _composite(children: Iterable[object]) -> bool:
    """Whether a frozen container's text is joined from its parts' (cached) texts: when a part
    is a frozen dict or itself composite. A leaf (a step with its lists of strings) is encoded
    in one ``json.dumps``, which is faster than joining small parts."""
    return any(isinstance(c, FrozenDict) or (isinstance(c, FrozenList) and c._composite)
               for c in children)


class FrozenDict(dict[str, JSONValue]):
    """A ``dict`` that refuses changes and keeps its JSON text per style."""

    __slots__ = ("_composite", "_texts")

    def __init__(self, items: Mapping[str, JSONValue] | Iterable[tuple[str, JSONValue]] = (),
                 /, **kwargs: JSONValue) -> None:
        _first_init(self)
        super().__init__(items, **kwargs)
        self._texts: dict[Style, str] = {}
        self._composite = _composite(self.values())

    __setitem__ = __delitem__ = _refuse
    clear = pop = popitem = setdefault = update = __ior__ = _refuse

    def __reduce__(self) -> tuple[type, tuple[dict[str, JSONValue]]]:
        return dict, (dict(self),)  # copy, deepcopy and pickle give a plain dict


class FrozenList(list[JSONValue]):
    """A ``list`` that refuses changes and keeps its JSON text per style."""

    __slots__ = ("_composite", "_texts")

    def __init__(self, items: Iterable[JSONValue] = ()) -> None:
        _first_init(self)
        super().__init__(items)
        self._texts: dict[Style, str] = {}
        self._composite = _composite(self)

    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = extend = insert = pop = remove = clear = sort = reverse = _refuse

    def __reduce__(self) -> tuple[type, tuple[list[JSONValue]]]:
        return list, (list(self),)  # copy, deepcopy and pickle give a plain list


@overload
def freeze(value: list[JSONValue]) -> FrozenList: ...
@overload
def freeze(value: dict[str, JSONValue]) -> FrozenDict: ...
@overload
def freeze(value: JSONValue) -> JSONValue: ...
def freeze(value: JSONValue) -> JSONValue:
    """``value`` with every dict and list in it (at any depth) frozen; other values as they
    are. Frozen parts are kept, not copied: a list gives a :class:`FrozenList`, a dict a
    :class:`FrozenDict`."""
    if isinstance(value, (FrozenDict, FrozenList)):
        return value
    if isinstance(value, dict):
        return FrozenDict({k: freeze(v) for k, v in value.items()})
    if isinstance(value, list):
        return FrozenList(freeze(v) for v in value)
    return value


def _text(value: object, style: Style, plain: Encode, depth: int = 2) -> str:
    """The JSON text of ``value``; a frozen container's is made once per style. Containers
    are walked ``depth`` levels deep at most below a plain one (a plain value may hold a
    cycle, which ``json.dumps`` then reports); a frozen part met deeper is still its cached
    text or one ``json.dumps``, the same text either way."""
    if isinstance(value, (FrozenDict, FrozenList)):
        texts = value._texts
        text = texts.get(style)
        if text is None:
            text = texts[style] = (_joined(value, style, plain, depth - 1)
                                   if value._composite else plain(value))
        return text
    if depth >= 0 and isinstance(value, dict) and _holds_frozen(value, depth):
        return _joined(value, style, plain, depth - 1)
    return plain(value)


def _holds_frozen(value: Mapping[object, object], depth: int) -> bool:
    """Whether a plain dict holds a frozen value, directly or in plain dicts ``depth`` deep
    (an event's dict, then its ``plan``). Lists are not walked: they can be long."""
    for v in value.values():
        if isinstance(v, (FrozenDict, FrozenList)):
            return True
        if depth and type(v) is dict and _holds_frozen(v, depth - 1):
            return True
    return False


def _joined(value: Mapping[str, object] | Mapping[object, object] | Sequence[object],
            style: Style, plain: Encode, depth: int) -> str:
    _, item_sep, key_sep, _ = style
    if isinstance(value, dict):
        if not all(type(k) is str for k in value):  # json.dumps's own key rules apply
            return plain(value)
        return "{" + item_sep.join(plain(k) + key_sep + _text(v, style, plain, depth)
                                   for k, v in value.items()) + "}"
    # A plan's steps: each a frozen dict whose text is kept, so the usual case is a lookup
    # per item (in one comprehension: a new list of 1,000 steps joins in about 50 µs).
    texts = [v._texts.get(style) if type(v) is FrozenDict else None for v in value]
    if None in texts:
        texts = [t if t is not None else _text(v, style, plain, depth)
                 for t, v in zip(texts, value, strict=True)]
    return "[" + item_sep.join(cast("list[str]", texts)) + "]"  # no None is left


# One encoder per style: ``json.dumps`` with any setting changed builds a new ``JSONEncoder``
# on every call, which costs more than encoding a small event. An encoder keeps no state
# between calls (threads can share one). Bounded: a caller that makes a new ``default``
# function per call must not grow it without end.
_ENCODERS: dict[Style, Encode] = {}
_MAX_ENCODERS = 32


def _encoder(style: Style) -> Encode:
    encode = _ENCODERS.get(style)
    if encode is None:
        ensure_ascii, item_sep, key_sep, default = style
        encode = json.JSONEncoder(ensure_ascii=ensure_ascii, separators=(item_sep, key_sep),
                                  default=default).encode
        if len(_ENCODERS) >= _MAX_ENCODERS:
            _ENCODERS.clear()
        _ENCODERS[style] = encode
    return encode


def dumps(value: object, *, ensure_ascii: bool = True,
          separators: tuple[str, str] = (", ", ": "), default: Default | None = None) -> str:
    """``json.dumps(value, ensure_ascii=..., separators=..., default=...)``, reusing the texts
    of frozen parts (see the module doc). A value with no frozen part is one encoding."""
    style: Style = (ensure_ascii, *separators, default)
    return _text(value, style, _encoder(style))
