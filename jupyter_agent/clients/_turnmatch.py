"""Matching a replayed request by its own turn when the history before it differs.

A cell run again after the notebook ran (or a run resumed after a kernel restart) sends the
same turn on top of a longer (or shorter) session history than when it was recorded: the exact
key misses although the cassette holds this very turn. The match here ignores the earlier
turns: the system messages and every other request field must be equal, and the request's
messages from one of its user messages to the end must equal the end of a recording's
messages. The longest such tail wins, so a short common tail (a repeated note) never beats
the turn's own prompt.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..base.jsontypes import JSONObject, JSONValue, list_field

__all__ = ["turn_match"]

Normalize = Callable[[list[JSONValue]], list[JSONValue]]


def _split(summary: JSONObject) -> tuple[JSONObject, list[JSONValue], list[JSONValue]]:
    """(the fields other than messages, the leading system messages, the rest)."""
    messages = list(list_field(summary, "messages"))
    n = 0
    while n < len(messages) and _role(messages[n]) == "system":
        n += 1
    rest = {k: v for k, v in summary.items() if k != "messages"}
    return rest, messages[:n], messages[n:]


def _role(message: JSONValue) -> JSONValue:
    return message.get("role") if isinstance(message, dict) else None


def _user_starts(messages: list[JSONValue]) -> list[int]:
    return [i for i, m in enumerate(messages) if _role(m) == "user"]


def turn_match(summary: JSONObject, recorded: Sequence[JSONObject],
               normalize: Normalize) -> tuple[list[int], int] | None:
    """The recordings whose end equals the request's longest possible turn tail.

    Returns:
        ``(indices into recorded, tail length)``, or ``None`` when no tail that starts at a
        user message matches any recording.
    """
    fields, system, rest = _split(summary)
    candidates = []
    for i, r in enumerate(recorded):
        r_fields, r_system, r_rest = _split(r)
        if r_fields == fields and normalize(r_system) == normalize(system):
            candidates.append((i, r_rest))
    for start in _user_starts(rest):
        tail = normalize(rest[start:])
        n = len(tail)
        hits = [i for i, r_rest in candidates
                if len(r_rest) >= n and _role(r_rest[-n]) == "user"
                and normalize(r_rest[-n:]) == tail]
        if hits:
            return hits, n
    return None
