"""``%%plan --out`` answered from a later cell (``%agent resume --option N``) in a real kernel
(nbclient): the resumed part ends through the same turn as the first, so ``--out`` is filled
(it regressed once, when only a click on the card filled it)."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from jupyter_agent.replay.notebooks import execute_notebook
from tests.agents.plan.plan_scripts import ask
from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls

pytestmark = [pytest.mark.notebook, pytest.mark.timeout(300)]


def test_out_is_filled_after_agent_resume_in_a_kernel(server: ScriptedOpenAI,
                                                     tmp_path: Path) -> None:
    server.enqueue(tool_calls([call("ask_agent", ask(), id="a1")]), text("Chose B."),
                   tool_calls([call("ask_agent", ask(), id="a2")]), text('{"choice": "C"}'))
    cells = [
        "%load_ext jupyter_agent",
        "%%plan --out ans\nPick one.",
        "import json\nprint(json.dumps(ans))",
        "%agent resume --option 2",
        "print(json.dumps(ans))",
        "from pydantic import BaseModel\nclass Pick(BaseModel):\n    choice: str",
        "%%plan --schema Pick --out typed\nPick one, typed.",
        "%agent resume --option 3",
        "print(json.dumps([type(typed).__name__, typed.choice]))",
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    execute_notebook(nb, tmp_path, env={"OPENAI_BASE_URL": server.base_url,
                                        "OPENAI_API_KEY": "sk-test-key-0123456789",
                                        "JUPYTER_AGENT_HOME": str(tmp_path / "home")})

    def printed(i: int) -> object:
        return json.loads(next(o["text"] for o in nb.cells[i].outputs
                               if o.get("name") == "stdout"))

    assert printed(2) == ""  # waiting: no answer yet
    assert printed(4) == "Chose B."
    assert printed(8) == ["Pick", "C"]
    assert len(server.requests) == 4
