"""Opening a turn: the run and turn records, the recorder, the session history.

:func:`open_turn` is the one way a turn begins, new or resumed: the turn driver
(:mod:`jupyter_agent.agents.turn.start`) opens a new run's first turn with it, and
:mod:`jupyter_agent.agents.resume` the turn an answer adds to a suspended run (``resuming``).
Its :class:`TurnContext` is what the later phases work with (``drive``, ``finish``).
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from ...base.events import Warning_
from ...base.jsontypes import JSONObject
from ...base.state import STATE
from ...llm.protocol import ModelClient
from ...llm.structured import SCHEMA_RETRIES, output_spec
from ..run import Run, RunRecorder
from .options import TurnOptions
from .saving import SavingStore, saving_store

if TYPE_CHECKING:
    from ...clients.turn_client import TurnClient
    from ...llm.structured import OutputSpec
    from ...runtime.intent import IntentResult
    from ...session.models import Mode
    from ...session.store import Store

__all__ = ["TurnContext", "open_turn"]


_fresh_noted: set[str] = STATE.slot("agents.fresh_tool_loop_noted", set)
"""Sessions whose card already said their small model's tool loops start fresh."""


@dataclass
class TurnContext:
    """What one turn of a run works with: its client, Run, recorder, store and turn record
    (a new run's first turn, or the turn a resume adds)."""

    turn_client: TurnClient
    """The client and what comes with it (failover, a cassette's answers)."""
    run: Run
    recorder: RunRecorder
    store: Store | None
    turn_id: str | None
    history: list[JSONObject]
    turn_base: tuple[int, int, float] = (0, 0, 0.0)
    """The run's tokens and cost before this turn (a resumed run): the turn records the rest."""
    persisted: int = 0
    """Leading messages of this turn already in the session (written before a suspension)."""
    event_base: int = 0
    """The run's events before this turn (a resumed run): the turn records the calls after."""
    is_aborted: Callable[[], bool] | None = None
    """The caller's abort check (:attr:`TurnOptions.is_aborted`)."""
    on_end: Callable[[Run], None] | None = None
    """Told the run when this part of it ends (:attr:`TurnOptions.on_end`)."""
    output: OutputSpec | None = None
    """What the final answer must be (:attr:`TurnOptions.output`, resolved)."""
    schema_retries: int = SCHEMA_RETRIES
    cache: bool | None = None
    """The turn's ``cache`` option (:attr:`TurnOptions.cache`): a suspended run saves it, so its
    resume answers from the cache too."""

    @property
    def client(self) -> ModelClient:
        """The model client of the run."""
        return self.turn_client.client


def open_turn(kind: str, prompt: str, opt: TurnOptions, tc: TurnClient, *, store: Store | None,
              mode: Mode = "ask", intent: IntentResult | None = None, agent: str | None = None,
              resuming: Run | None = None, persisted: int = 0) -> TurnContext:
    """Open a turn: a new run's first, or the turn an answer adds to the suspended run
    ``resuming``.

    A new run: the run (``run_started``), its record and the session history. A resumed run
    keeps its Run and record and has no history (its messages were saved with it); its turn
    counts from what the run had, so the turn record holds only this turn's tokens, cost and
    calls, and ``persisted`` of its leading messages are already in the session.
    Both: the turn record, when there is a store and the run has a session, with ``mode``,
    ``intent`` and ``agent`` (the role's name; by default ``kind``).

    ``tc`` is :func:`~.options.client_of`'s, ``store`` :func:`~.options.store_of`'s.
    """
    from ...clients.factory import local_default_notice

    model, client = tc.model, tc.client
    store = saving_store(store)  # a resume's store too: a full disk leaves it unsaved
    run = resuming or Run(agent=kind, model=model, prompt=prompt, session=opt.session)
    recorder = RunRecorder(run, store, opt.listeners)
    history: list[JSONObject] = []
    # A very small model follows an earlier answer instead of calling the tools: its tool
    # loops get no history, and the card says so (once the recorder runs, below).
    fresh = (kind == "toolloop" and bool(opt.history)
             and not client.profile.capabilities.history_in_tool_loop)
    if store is not None and resuming is None:
        if run.session and opt.history and not fresh:
            history = store.history_messages(run.session, opt.history)
        store.create_run(run.run_id, run.session, kind, origin=opt.origin)
    p = TurnContext(tc, run, recorder, store, None, history, persisted=persisted,
                    is_aborted=opt.is_aborted, on_end=opt.on_end,
                    output=None if opt.output is None else output_spec(opt.output),
                    schema_retries=opt.schema_retries, cache=opt.cache)
    if resuming is not None:
        p.turn_base = (run.input_tokens, run.output_tokens, run.cost)
        p.event_base = len(run.events)
    if store is not None and run.session:
        # A resumed run is ours from its claim: a store that fails here ends it "error".
        with recorder.finishing() if resuming is not None else nullcontext():
            p.turn_id = store.start_turn(run.session, mode=mode, run_id=run.run_id,
                                         agent=agent or kind, intent=intent, model=model,
                                         profile=client.profile.name)
    if resuming is None:
        recorder.start()
    saving: object = store
    if isinstance(saving, SavingStore):  # a full disk: one warning on the card, once
        saving.on_full = lambda line: recorder.emit(Warning_(message=line))
    if resuming is None:
        # Only when nothing chose the model: an explicit `--model local` needs no explanation.
        notice = local_default_notice(tc)
        if notice:
            recorder.emit(Warning_(message=notice))
        if (fresh and run.session and run.session not in _fresh_noted and store is not None
                and store.history_messages(run.session, 1)):
            # A calm note, once per session: nothing went wrong (the README's `%%chat` then
            # `%%toolloop` showed an orange warning at a newcomer's second agent cell), and
            # every later tool loop of the session starts fresh the same way.
            _fresh_noted.add(run.session)
            recorder.emit(Warning_(level="note", message=(
                f"Earlier turns were not sent: {model} is a small model that copies an "
                "earlier answer instead of calling the tools, so its tool loops start fresh "
                "(%%chat still gets them).")))
    return p
