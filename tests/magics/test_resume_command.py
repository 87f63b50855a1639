"""``%agent resume`` reads the notebook's ``_agent_run`` only when it is a run."""

from __future__ import annotations

import pytest

from jupyter_agent.base.errors import ResumeError
from jupyter_agent.edge.commands import run_command


def test_resume_with_nothing_waiting_beside_a_users_own_agent_run_is_one_line() -> None:
    # Nothing waits, and the notebook's `_agent_run` is the user's own value (not a run): the
    # command says nothing waits (one line at the magic), not AttributeError on 'status'.
    with pytest.raises(ResumeError):
        run_command("resume --option 1", {"_agent_run": "my own value"})
