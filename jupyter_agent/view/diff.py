"""Changes of a view state since it was last sent: the live widget's patches.

The reducer (:mod:`jupyter_agent.view.reduce`) mutates one view dict in place. Sending the whole
view on every update costs O(view) per update, so a long run sends the view hundreds of times
over. :class:`ViewDiffer` remembers what it last reported and returns only what changed since,
as a list of operations the front end (``ui/static/patch.js``) applies in order:

``{"op": "truncate", "length": n}``
    keep the first ``n`` items (a retried round dropped some)
``{"op": "push", "item": {...}}``
    append an item
``{"op": "update", "index": i, "set": {...}, "append": {...}, "delete": [...]}``
    change item ``i``: replace fields (``set``), extend string fields (``append``: a streamed
    text, arguments), remove fields; empty parts are left out
``{"op": "set", "key": k, "value": v}`` / ``{"op": "delete", "key": k}``
    replace or remove a top-level field (status, plan, ask, answer, error, ...)
``{"op": "merge", "key": "footer", "value": {...}}``
    replace some fields of the footer

Cost: one pass over the items per diff, comparing each against a shallow copy of what was last
sent (identical strings compare by identity, so an unchanged 2 KB tool output costs nothing).
Only changed or new items are copied. Items hold JSON scalars, plus lists and dicts in ask
items that are never mutated once made; top-level values (ask, ...) are compared deeply and
copied, but for the plan: the reducer replaces it whole with the ``plan_updated`` event's plan,
which is never mutated (events are read-only), so it is kept by reference and an unchanged
plan costs one identity check (a 100-step plan copied at every push cost more than the rest
of the diff).
"""

from __future__ import annotations

import copy

from ..base.jsontypes import JSONArray, JSONObject, JSONValue, object_field, object_list

__all__ = ["ViewDiffer"]

_MISSING = object()
# Top-level values the reducer only ever replaces, never changes in place: kept by reference.
_REPLACED_WHOLE = frozenset({"plan"})


def _keep(key: str, value: JSONValue) -> JSONValue:
    return value if key in _REPLACED_WHOLE else copy.deepcopy(value)


def _item_update(index: int, old: JSONObject, new: JSONObject) -> JSONObject | None:
    set_: JSONObject = {}
    append: JSONObject = {}
    for key, value in new.items():
        prev = old.get(key, _MISSING)
        if prev is value or prev == value:
            continue
        if (isinstance(value, str) and isinstance(prev, str) and len(value) > len(prev)
                and value.startswith(prev)):
            append[key] = value[len(prev):]
        else:
            set_[key] = value
    deleted: JSONArray = [k for k in old if k not in new]
    if not (set_ or append or deleted):
        return None
    op: JSONObject = {"op": "update", "index": index}
    if set_:
        op["set"] = set_
    if append:
        op["append"] = append
    if deleted:
        op["delete"] = deleted
    return op


class ViewDiffer:
    """What changed in a view since the last :meth:`diff` (or :meth:`reset`)."""

    def __init__(self, view: JSONObject | None = None) -> None:
        self._items: list[tuple[JSONObject, JSONObject]] = []
        """Each item reported: the view's own (changed in place) and a copy of what was sent."""
        self._top: JSONObject = {}
        self._footer: JSONObject = {}
        if view is not None:
            self.reset(view)

    def reset(self, view: JSONObject) -> None:
        """Take ``view`` as what the front end has now (a full snapshot was sent)."""
        self._items = [(item, dict(item)) for item in object_list(view, "items")]
        self._top = {k: _keep(k, v) for k, v in view.items() if k not in ("items", "footer")}
        self._footer = dict(object_field(view, "footer"))

    def diff(self, view: JSONObject) -> list[JSONObject]:
        """The operations that turn the last reported view into ``view``; remembers ``view``."""
        ops: list[JSONObject] = []
        for key, value in view.items():
            if key in ("items", "footer"):
                continue
            prev = self._top.get(key, _MISSING)
            if prev is value and key in _REPLACED_WHOLE:
                continue
            if prev is _MISSING or prev != value:
                ops.append({"op": "set", "key": key, "value": value})
                self._top[key] = _keep(key, value)
            elif key in _REPLACED_WHOLE:
                self._top[key] = value  # equal: the next diff is an identity check again
        for key in [k for k in self._top if k not in view]:
            ops.append({"op": "delete", "key": key})
            del self._top[key]
        footer = object_field(view, "footer")
        changed: JSONObject = {k: v for k, v in footer.items()
                               if self._footer.get(k, _MISSING) != v}
        if changed:
            ops.append({"op": "merge", "key": "footer", "value": changed})
            self._footer.update(changed)
        self._diff_items(object_list(view, "items"), ops)
        return ops

    def _diff_items(self, items: list[JSONObject], ops: list[JSONObject]) -> None:
        shadow = self._items
        same = 0  # the leading items that are still the same objects
        limit = min(len(items), len(shadow))
        while same < limit and items[same] is shadow[same][0]:
            same += 1
        if same < len(shadow):  # items were removed or replaced (a retried round)
            ops.append({"op": "truncate", "length": same})
            del shadow[same:]
        for i in range(same):
            obj, old = shadow[i]
            if obj != old:
                op = _item_update(i, old, obj)
                if op is not None:
                    ops.append(op)
                shadow[i] = (obj, dict(obj))
        for obj in items[same:]:
            sent = dict(obj)
            ops.append({"op": "push", "item": sent})
            shadow.append((obj, sent))
