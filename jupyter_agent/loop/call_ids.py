"""Tool-call ids are the loop's own (docs/architecture.md, "Tool-call ids").

A model may send two calls with the same id in one response, no id at all, or an id it already
used in an earlier round. Approvals, results, ``tool_values`` and the view all go by call id,
so two calls sharing one would share a card, an approval and a result. Every call therefore
gets an id no other call of the run has:

* the provider's id when it is unique within the run (transcripts and logs match the
  provider's), otherwise
* a fresh ``call_<hex>`` id.

The chosen id is the call's id everywhere, the wire included: the assistant message sent back
carries it in ``tool_calls`` and the tool message answering it carries it in ``tool_call_id``.
OpenAI-compatible APIs match a tool result to its call by id within one request only, so a
renamed call stays valid for the provider; mapping back to the provider's duplicate id would
make the request ambiguous (two results for one id) instead.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..llm.ids import new_call_id

__all__ = ["CallIds", "ids_in_messages"]


def ids_in_messages(messages: Iterable[Mapping[str, object]]) -> set[str]:
    """Every tool-call id in ``messages`` (assistant ``tool_calls`` and tool answers)."""
    out: set[str] = set()
    for m in messages:
        calls = m.get("tool_calls")
        for c in calls if isinstance(calls, (list, tuple)) else ():
            cid = c.get("id") if isinstance(c, dict) else None
            if isinstance(cid, str):
                out.add(cid)
        answered = m.get("tool_call_id")
        if m.get("role") == "tool" and isinstance(answered, str):
            out.add(answered)
    return out


class CallIds:
    """The ids taken in one run; :meth:`claim` hands out ids no other call has."""

    def __init__(self, taken: Iterable[str] = ()) -> None:
        self._taken: set[str] = {t for t in taken if t}

    def claim(self, provider_id: str | None) -> str:
        """The run's id for a call the provider named ``provider_id`` (kept when still free)."""
        cid = provider_id if provider_id and provider_id not in self._taken else new_call_id()
        while cid in self._taken:  # a 96-bit clash: never in practice, but cheap to rule out
            cid = new_call_id()
        self._taken.add(cid)
        return cid

    def release(self, ids: Iterable[str]) -> None:
        """Give ids back (a streamed attempt that was withdrawn before it was kept)."""
        self._taken.difference_update(ids)
