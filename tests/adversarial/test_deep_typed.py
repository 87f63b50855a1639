"""Issue 35: a too-deep or too-large typed answer is one line and the run ends ``invalid``.

A ~950-level answer used to pass validation (``data: Any``) and end in a RecursionError in the
live view's deep copy: a 133-line traceback. The pydantic error sent back on a retry held the
full path of a deep field each time.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
import pytest
from pydantic import BaseModel

from jupyter_agent import chat
from jupyter_agent.llm.structured import MAX_ANSWER_CHARS, MAX_ANSWER_DEPTH
from jupyter_agent.replay.notebooks import execute_notebook
from tests.fakes.openai_server import ScriptedOpenAI, text

pytestmark = pytest.mark.timeout(300)


class Anything(BaseModel):
    data: Any


class Node(BaseModel):
    value: int
    child: Node | None = None


def deep(depth: int, leaf: str = "1") -> str:
    return '{"data": ' + '{"a":' * depth + leaf + "}" * depth + "}"


def deep_node(depth: int, leaf_value: str) -> str:
    return '{"value": 1, "child": ' * depth + '{"value": ' + leaf_value + "}" + "}" * depth


def retries(server: ScriptedOpenAI) -> list[str]:
    return [b["messages"][-1]["content"] for b in server.requests[1:]]


@pytest.mark.parametrize("depth", [950, 5_000, 100_000])
def test_a_too_deep_answer_ends_invalid_in_one_line(depth: int, server: ScriptedOpenAI) -> None:
    server.default = text(deep(depth), chunk_size=4096)  # big deltas: the check is the point
    run = chat("Give me data.", output=Anything, schema_retries=1)
    assert run.status == "invalid"
    assert run.error is not None and "\n" not in run.error and "too deep" in run.error
    assert len(run.error) < 300
    (again,) = retries(server)
    assert "too deep" in again and len(again) < 400


def test_an_answer_at_the_depth_limit_still_passes(server: ScriptedOpenAI) -> None:
    server.default = text(deep(MAX_ANSWER_DEPTH - 1))
    run = chat("Give me data.", output=Anything, schema_retries=0)
    assert run.status == "done", run.error


def test_a_too_large_answer_ends_invalid_in_one_line(server: ScriptedOpenAI) -> None:
    server.default = text('{"data": "' + "x" * (MAX_ANSWER_CHARS + 10) + '"}', chunk_size=4096)
    run = chat("Give me data.", output=Anything, schema_retries=0)
    assert run.status == "invalid" and "\n" not in (run.error or "")
    assert "too long" in (run.error or "") and len(run.error or "") < 300


def test_the_error_sent_back_for_a_deep_field_is_short(server: ScriptedOpenAI) -> None:
    # 90 levels (under the limit), wrong at the bottom: the path had 180 parts.
    server.default = text(deep_node(90, '"not a number"'))
    run = chat("Give me a tree.", output=Node, schema_retries=2)
    assert run.status == "invalid"
    for message in retries(server):
        assert len(message) < 600, message
        assert "more)" in message  # the path, shortened
    assert "\n" not in (run.error or "") and len(run.error or "") < 400


def test_a_deep_answer_in_a_kernel_is_one_line_not_a_traceback(
        server: ScriptedOpenAI, tmp_path: Path) -> None:
    server.default = text(deep(950))
    cells = ["%load_ext jupyter_agent",
             "from typing import Any\nfrom pydantic import BaseModel\n\n"
             "class Anything(BaseModel):\n    data: Any",
             "%%chat --schema Anything --schema-retries 0\nGive me data.",
             "print(_agent_run.status)"]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    execute_notebook(nb, tmp_path, allow_errors=True,
                     env={"JUPYTER_AGENT_HOME": str(tmp_path / "home")})
    outs = json.dumps(nb.cells[2].outputs)
    assert "Traceback" not in outs and "RecursionError" not in outs
    assert not [o for o in nb.cells[2].outputs if o["output_type"] == "error"]
    assert "too deep" in outs
    assert nb.cells[3].outputs[0]["text"].strip() == "invalid"
