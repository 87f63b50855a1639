"""``TurnArgs`` (the typed ``**options`` of ``chat/toolloop/plan``) names exactly the fields of
``TurnOptions``, but ``output``, which each entry point takes by name: an option added to the
record without its typed keyword would be refused by mypy in every typed caller, one added to
the keywords only would fail at run time."""

from __future__ import annotations

import dataclasses
import inspect

from jupyter_agent import chat, plan, toolloop
from jupyter_agent.agents.turn.options import TurnArgs, TurnOptions


def test_turn_args_name_every_option_but_output() -> None:
    fields = {f.name for f in dataclasses.fields(TurnOptions)}
    assert set(TurnArgs.__annotations__) == fields - {"output"}


def test_every_entry_point_takes_output_by_name() -> None:
    for entry in (chat, toolloop, plan):
        param = inspect.signature(entry).parameters["output"]
        assert param.kind is inspect.Parameter.KEYWORD_ONLY and param.default is None
