"""A notebook with ``%%chat`` and ``%%toolloop`` run by nbclient in a real kernel."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

from jupyter_agent.base.events import RUN_MIME_TYPE
from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls

pytestmark = [pytest.mark.notebook, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parents[2]
KEY = "sk-test-key-0123456789"  # the ``server`` fixture's key


@pytest.fixture(scope="session")
def python3_kernel() -> str:
    """The ``python3`` kernel, made to run this interpreter (installed into the venv if not)."""
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    def usable() -> bool:
        try:
            spec = KernelSpecManager().get_kernel_spec("python3")
        except NoSuchKernel:
            return False
        exe = spec.argv[0]
        # jupyter_client swaps a bare "python" for the running interpreter.
        return exe in ("python", "python3") or os.path.abspath(exe).startswith(sys.prefix)

    if not usable():
        subprocess.run([sys.executable, "-m", "ipykernel", "install", "--sys-prefix"],
                       check=True, capture_output=True)
    return "python3"


def code(source: str) -> Any:
    return nbformat.v4.new_code_cell(source)


def run_notebook(cells: list[Any], path: Path, kernel: str) -> tuple[Any, str]:
    nb = nbformat.v4.new_notebook(cells=cells)
    NotebookClient(nb, kernel_name=kernel, timeout=120,
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    nbformat.write(nb, path)
    return nb, path.read_text(encoding="utf-8")


def bundles(cell: Any) -> list[dict[str, Any]]:
    return [o["data"] for o in cell.outputs if o.get("output_type") == "display_data"]


def test_chat_and_toolloop_notebook(server: ScriptedOpenAI, tmp_path: Path, python3_kernel: str,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # The kernel inherits this environment: the scripted server's URL, the key, a private
    # JUPYTER_AGENT_HOME (set by conftest) and the package on the path.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
    server.enqueue(
        text("Photosynthesis turns light, water and CO2 into sugar. Plants release oxygen.",
             reasoning="A biology question."),
        tool_calls([call("add", {"a": 17, "b": 25}, id="call_add_1")]),
        text("17 + 25 = 42."))
    cells = [
        code("%load_ext jupyter_agent"),
        code("from jupyter_agent import tool\n\n"
             "@tool\n"
             "def add(a: int, b: int) -> int:\n"
             "    '''Add two integers.'''\n"
             "    return a + b"),
        code("topic = 'photosynthesis'"),
        code("%%chat --out answer\nExplain {topic} in two sentences."),
        code("%%toolloop\nWhat is 17 + 25? Use the tools."),
        code("print(repr(answer))\nprint(_agent_run.tool_values)"),
    ]
    nb, saved = run_notebook(cells, tmp_path / "core.ipynb", python3_kernel)

    chat_out = bundles(nb.cells[3])
    assert len(chat_out) == 1  # one display, updated in place
    chat = chat_out[0]
    assert {RUN_MIME_TYPE, "text/markdown", "text/plain"} <= set(chat)
    assert "Photosynthesis turns light, water and CO2 into sugar." in chat["text/markdown"]
    assert chat[RUN_MIME_TYPE]["view"]["status"] == "done"
    meta = nb.cells[3].outputs[0]["metadata"][RUN_MIME_TYPE]
    assert meta["model"] and meta["input_tokens"] > 0 and meta["cost"] > 0

    (loop,) = bundles(nb.cells[4])
    cards = [i for i in loop[RUN_MIME_TYPE]["view"]["items"] if i["kind"] == "tool"]
    assert [(i["call_id"], i["name"], i["output"]) for i in cards] == [
        ("call_add_1", "add", "42")]
    assert "17 + 25 = 42." in loop["text/markdown"]

    printed = "".join(o.get("text", "") for o in nb.cells[5].outputs)
    assert "'Photosynthesis turns light" in printed and "{'call_add_1': 42}" in printed
    assert server.requests[0]["messages"][-1]["content"] == "Explain photosynthesis in two sentences."
    assert server.requests[2]["messages"][-1] == {"role": "tool", "tool_call_id": "call_add_1",
                                                  "content": "42"}

    assert KEY not in saved
    assert all(KEY not in json.dumps(o) for c in nb.cells for o in c.get("outputs", []))
