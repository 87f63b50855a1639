"""A cassette: the recorded model responses and ask answers of one notebook (or script).

Each interaction is keyed by a stable hash of what identifies the request (model, messages,
tools, tool choice, sampling parameters, any other body field except the streaming options).
The API key and the base URL are never part of a request body, so they are never part of a
key or a cassette. Tool-call ids are replaced by placeholders before hashing: providers that
send none get random local ids, which must not make a replay miss.

Storage (see :mod:`.storage`): a notebook's metadata (``metadata["jupyter_agent"]["cassette"]``)
or a JSON file beside it (``<name>.cassette.json``).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import BaseModel, Field, PrivateAttr

from ..base.answers import Answer, WaitingAsk
from ..base.errors import JupyterAgentError
from ..base.jsontypes import JSONObject, JSONValue, Shallow
from ._diff import closest, describe_difference
from ._turnmatch import turn_match

if TYPE_CHECKING:
    from ..llm.profiles import ModelProfile

__all__ = ["CASSETTE_VERSION", "Chunk", "Interaction", "RecordedAnswer", "Cassette",
           "NoRecordingError", "request_summary", "request_key"]

CASSETTE_VERSION = 1
_NOT_IDENTIFYING = frozenset({"stream", "stream_options", "user", "metadata", "store"})
_PROFILE_SKIP = frozenset({"base_url"})
_ENVELOPE = frozenset({"id", "object", "created", "model", "system_fingerprint"})


class NoRecordingError(JupyterAgentError):
    """A replayed request has no recording (the message names the first differing field)."""


class Chunk(BaseModel):
    """One decoded SSE chunk, ``t`` seconds after its request was sent."""

    t: float
    # Checked one level deep (base/jsontypes.py ``Shallow``): a cassette holds thousands.
    data: Annotated[JSONObject, Shallow(dict[str, object])]


class Interaction(BaseModel):
    """One model call: the request summary and what came back."""

    key: str
    request: Annotated[JSONObject, Shallow(dict[str, object])]
    """The identifying fields (see :func:`request_summary`)."""
    chunks: list[Chunk] | None = None
    """The streamed answer, chunk by chunk (``None`` for a non-streamed call); read them with
    :meth:`chunk_payloads`."""
    response: Annotated[JSONObject | None, Shallow(dict[str, object] | None)] = None
    """The JSON body of a non-streamed answer."""
    error: str | None = None
    """The call failed (after retries) with this message; replayed as the same failure."""
    status_code: int | None = None
    seconds: float = 0.0

    def chunk_payloads(self) -> list[JSONObject]:
        """The chunks as they came over the wire (the envelope fields that every chunk
        repeats are stored once, on the first chunk)."""
        if not self.chunks:
            return []
        head = {k: v for k, v in self.chunks[0].data.items() if k in _ENVELOPE}
        return [self.chunks[0].data, *({**head, **c.data} for c in self.chunks[1:])]


def _compact(chunks: list[Chunk]) -> list[Chunk]:
    """``chunks`` with the envelope fields equal to the first chunk's left out."""
    if not chunks:
        return chunks
    head = chunks[0].data
    return [chunks[0], *(Chunk(t=c.t, data={k: v for k, v in c.data.items()
                                            if not (k in _ENVELOPE and head.get(k) == v)})
                         for c in chunks[1:])]


class RecordedAnswer(BaseModel):
    """An answer given to an ask or an approval while recording."""

    call_id: str
    question: str = ""
    kind: Literal["ask", "approval"] = "ask"
    how: Literal["option", "other", "dismissed"]
    option_index: int | None = None
    text: str = ""
    via: Literal["click", "code"] = "click"
    """``click``: a button (replay answers it by itself); ``code``: a notebook cell
    (``%agent resume``, ``--option``), which answers it again when the notebook is replayed."""

    def to_answer(self) -> Answer:
        """The :class:`~jupyter_agent.base.answers.Answer` to resume with."""
        return Answer(self.how, option_index=self.option_index, text=self.text)


def _normalize_ids(messages: list[JSONValue]) -> list[JSONValue]:
    """Messages with every tool-call id replaced by ``call#N`` (N in order of appearance)."""
    ids: dict[str, str] = {}

    def alias(value: JSONValue) -> JSONValue:
        if not isinstance(value, str):
            return value
        return ids.setdefault(value, f"call#{len(ids) + 1}")

    out: list[JSONValue] = []
    for m in messages:
        if not isinstance(m, dict) or not (m.get("tool_calls") or m.get("tool_call_id")):
            out.append(m)
            continue
        m = dict(m)
        calls = m.get("tool_calls")
        if calls and isinstance(calls, list):
            m["tool_calls"] = [{**c, "id": alias(c.get("id"))} if isinstance(c, dict) else c
                               for c in calls]
        if m.get("tool_call_id"):
            m["tool_call_id"] = alias(m["tool_call_id"])
        out.append(m)
    return out


def request_summary(body: Mapping[str, JSONValue]) -> JSONObject:
    """The fields of a request body that identify it (what the key is a hash of)."""
    out = {k: v for k, v in body.items() if k not in _NOT_IDENTIFYING}
    if "max_completion_tokens" in out:  # the same limit under another name
        out["max_tokens"] = out.pop("max_completion_tokens")
    messages = out.get("messages") or []
    out["messages"] = _normalize_ids(list(messages) if isinstance(messages, list) else [])
    # A JSON round trip, so the summary equals what a saved cassette holds (tuples, floats…).
    summary: JSONObject = json.loads(json.dumps(out, ensure_ascii=False, default=str))
    return summary


def request_key(summary: JSONObject) -> str:
    """A stable hash of a request summary."""
    text = json.dumps(summary, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


class Cassette(BaseModel):
    """Recorded model calls and answers, replayable without network or key."""

    version: int = CASSETTE_VERSION
    model: str | None = None
    """The model (profile name) the recording was made with; replay selects it."""
    profiles: Annotated[dict[str, JSONObject], Shallow(dict[str, dict[str, object]])] = Field(
        default_factory=dict)
    """The profiles used while recording (never a key or base URL), so a replay builds the
    same requests (system prompt, capabilities, prices) without the provider's setup."""
    interactions: list[Interaction] = Field(default_factory=list)
    answers: list[RecordedAnswer] = Field(default_factory=list)

    _lock: threading.RLock = PrivateAttr(default_factory=threading.RLock)
    _served: Counter[str] = PrivateAttr(default_factory=Counter)
    _used_answers: set[int] = PrivateAttr(default_factory=set)
    location: str = Field(default="", exclude=True)
    """Where the cassette is stored (for messages); not saved."""

    # ------------------------------------------------------------ recording
    def add_profile(self, profile: ModelProfile) -> None:
        """Remember ``profile`` under its name; the first one names the model."""
        with self._lock:
            data = profile.model_dump(mode="json", exclude=set(_PROFILE_SKIP))
            self.profiles[profile.name] = data
            if self.model is None:
                self.model = profile.name

    def add(self, body: JSONObject, *, chunks: list[Chunk] | None = None,
            response: JSONObject | None = None, error: str | None = None,
            status_code: int | None = None, seconds: float = 0.0) -> Interaction:
        """Record one call made with ``body``."""
        summary = request_summary(body)
        item = Interaction(key=request_key(summary), request=summary,
                           chunks=_compact(chunks) if chunks is not None else None,
                           response=response, error=error, status_code=status_code,
                           seconds=round(seconds, 4))
        with self._lock:
            self.interactions.append(item)
        return item

    def add_answer(self, ask: WaitingAsk, answer: Answer, via: str = "click") -> None:
        """Record the answer given to ``ask`` (the card a suspended run waited on)."""
        item = RecordedAnswer(call_id=ask.call_id, question=ask.question, kind=ask.kind,
                              how=answer.how, option_index=answer.option_index,
                              text=answer.text or "", via="code" if via == "code" else "click")
        with self._lock:
            self.answers.append(item)

    def clear(self) -> None:
        """Forget everything recorded (a fresh recording)."""
        with self._lock:
            self.model = None
            self.profiles.clear()
            self.interactions.clear()
            self.answers.clear()
            self.rewind()

    # -------------------------------------------------------------- replay
    def rewind(self) -> None:
        """Replay from the start again (identical requests are served in recorded order)."""
        with self._lock:
            self._served.clear()
            self._used_answers.clear()

    def find(self, body: JSONObject) -> Interaction:
        """The recording for ``body``; the n-th identical request gets the n-th recording
        (the last one again once they are used up). A request whose earlier turns differ from
        the recording's (a cell run again, a run resumed in a session that has moved on) gets
        the recording of its own turn (see :mod:`._turnmatch`).

        Raises:
            NoRecordingError: nothing was recorded for this request; the message names the
                first field that differs from the closest recorded request.
        """
        summary = request_summary(body)
        key = request_key(summary)
        with self._lock:
            matches = [i for i in self.interactions if i.key == key]
            if matches:
                n = self._served[key]
                self._served[key] += 1
                return matches[min(n, len(matches) - 1)]
            found = turn_match(summary, [i.request for i in self.interactions], _normalize_ids)
            if found is not None:
                hits, length = found
                tail = f"turn:{self.interactions[hits[0]].key}:{length}"
                n = self._served[tail]
                self._served[tail] += 1
                return self.interactions[hits[min(n, len(hits) - 1)]]
        raise NoRecordingError(self.miss_message(summary))

    def miss_message(self, summary: JSONObject) -> str:
        """The one-line explanation of a miss."""
        # The file name only: an absolute path has no place in a saved notebook output.
        where = f" in {Path(self.location).name}" if self.location else ""
        if not self.interactions:
            return (f"No recording for this request: the cassette{where} is empty. Record it "
                    "first (`%agent record`, or `python -m jupyter_agent.replay.rerecord`).")
        recorded = [i.request for i in self.interactions]
        best = closest(summary, recorded)
        what = describe_difference(summary, recorded[best])
        return (f"No recording for this request: {what} (closest recording: #{best + 1} of "
                f"{len(recorded)}{where}). Run the notebook from the top (Restart Kernel and Run "
                "All), go live with `%agent live`, or re-record with `%agent record`.")

    def answer_for(self, call_id: str, question: str = "",
                   via: tuple[str, ...] = ("click",)) -> RecordedAnswer | None:
        """The recorded answer to the ask ``call_id`` (else the next unused answer to the same
        question, for models whose call ids are generated locally)."""
        with self._lock:
            candidates = [(i, a) for i, a in enumerate(self.answers) if a.via in via]
            hit = next(((i, a) for i, a in candidates if call_id and a.call_id == call_id), None)
            if hit is None and question:
                hit = next(((i, a) for i, a in candidates
                            if a.question == question and i not in self._used_answers), None)
            if hit is None:
                return None
            self._used_answers.add(hit[0])
            return hit[1]

    def peek_answer(self, call_id: str, question: str = "") -> RecordedAnswer | None:
        """The answer recorded for the ask ``call_id`` (else the next unused one to the same
        question), clicked or given by a cell, without using it up."""
        with self._lock:
            hit = next((a for a in self.answers if call_id and a.call_id == call_id), None)
            if hit is None and question:
                hit = next((a for i, a in enumerate(self.answers)
                            if a.question == question and i not in self._used_answers), None)
            return hit

    def profile(self, name: str) -> ModelProfile | None:
        """The recorded ModelProfile called ``name``, or None."""
        data = self.profiles.get(name)
        if data is None:
            return None
        from ..llm.profiles import ModelProfile

        return ModelProfile.model_validate(data)
