"""``insert_cell``: the agent proposes a cell; the user decides whether it goes in.

A proposal never changes the notebook by itself. It is recorded (a :class:`CellProposal`, and
a ``cell_proposed`` event when the run emits one) so a card can offer *Insert below* and
*Discard*; without a front end it is kept on the run and shown as code.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ...base.secrets import mask
from ._text import redact_source
from .variables import VariableError

__all__ = ["MAX_PROPOSAL_CHARS", "CellProposal", "propose_cell"]

MAX_PROPOSAL_CHARS = 100_000


def _new_id() -> str:
    return f"cell-{uuid.uuid4().hex[:10]}"


class CellProposal(BaseModel):
    """A cell the agent proposes to insert below the current one."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(default_factory=_new_id)
    """Stable id: the card's buttons and a later ``%agent`` command name it."""
    source: str
    kind: Literal["code", "markdown"] = "code"
    explanation: str = ""
    """Why the agent proposes it (one or two sentences)."""
    status: Literal["proposed", "inserted", "discarded"] = "proposed"

    def model_text(self) -> str:
        """What the model is told: the cell is only proposed, nothing ran."""
        lines = self.source.count("\n") + 1
        # No id: nothing the model can call takes one, and the same request must come out of
        # the same proposal (a cassette matches requests exactly).
        return (f"Proposed a {self.kind} cell ({lines} line{'s' if lines != 1 else ''}). The "
                "user sees it with Insert below / Discard; it has not run and is not in the "
                "notebook yet.")

    def _repr_markdown_(self) -> str:
        """The proposal as Markdown: how a notebook displays it (``tool.proposals[-1]``)."""
        fence = "```"
        while fence in self.source:
            fence += "`"
        lang = "python" if self.kind == "code" else "markdown"
        why = f"{self.explanation}\n\n" if self.explanation else ""
        return f"**Proposed {self.kind} cell** `{self.id}`\n\n{why}{fence}{lang}\n" \
               f"{self.source}\n{fence}\n"


def propose_cell(source: str, kind: str = "code", explanation: str = "",
                 on_proposal: Callable[[CellProposal], None] | None = None) -> CellProposal:
    """Validate and record a proposal (secrets masked); ``on_proposal`` receives it.

    Raises:
        VariableError: the source is empty or longer than :data:`MAX_PROPOSAL_CHARS`.
    """
    if not isinstance(source, str) or not source.strip():
        raise VariableError("source is empty: give the cell's code or text.")
    if len(source) > MAX_PROPOSAL_CHARS:
        raise VariableError(f"source is {len(source):,} characters; at most "
                            f"{MAX_PROPOSAL_CHARS:,}.")
    if kind not in ("code", "markdown"):
        raise VariableError("kind must be 'code' or 'markdown'.")
    cell_kind: Literal["code", "markdown"] = "code" if kind == "code" else "markdown"
    proposal = CellProposal(source=redact_source(source.strip("\n")), kind=cell_kind,
                            explanation=mask(explanation.strip()[:1000]))
    if on_proposal is not None:
        on_proposal(proposal)
    return proposal
