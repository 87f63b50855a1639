"""The live notebook snapshot (``tools/notebook/live_cells.py``): a valid one is what
``read_notebook``/``read_cells`` read, named as the live notebook; a malformed, wrong-typed,
oversized or hostile one is refused or capped, nothing crashes and the saved file is read
instead; one client's snapshot is never another's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
import pytest

from jupyter_agent.base.secrets import MASK, register_secret
from jupyter_agent.tools.notebook.cells import cells_text, load_cells, outline
from jupyter_agent.tools.notebook.live_cells import (
    LIVE,
    MAX_CELLS,
    MAX_CLIENTS,
    MAX_SOURCE_CHARS,
    current_client,
    parse,
)

pytestmark = pytest.mark.timeout(60)

SAVED = "x = 1  # as saved"


def snapshot(*sources: str, path: str = "work/analysis.ipynb", **cell: Any) -> dict[str, Any]:
    return {"version": 1, "path": path,
            "cells": [{"kind": "code", "source": s, "execution_count": None, "outputs": [],
                       **cell} for s in sources]}


@pytest.fixture
def saved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A saved notebook the kernel knows (``JPY_SESSION_NAME``): the fallback."""
    path = tmp_path / "analysis.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(SAVED)]), path)
    monkeypatch.setenv("JPY_SESSION_NAME", str(path))
    return path


def test_a_valid_snapshot_is_read_and_named(saved: Path) -> None:
    data = snapshot("x = 2  # unsaved edit", "print(x)")
    data["cells"].insert(0, {"kind": "markdown", "source": "# Title", "outputs": []})
    data["cells"][2]["execution_count"] = 4
    data["cells"][2]["outputs"] = [
        {"output_type": "stream", "name": "stdout", "text": "2\n"},
        {"output_type": "display_data", "text": "<Figure size 640x480>",
         "mimes": ["image/png", "text/plain"]},
        {"output_type": "error", "ename": "NameError", "evalue": "name 'y' is not defined"},
        {"output_type": "execute_result", "text": "Sales rose.",
         "mimes": ["application/vnd.jupyter-agent.run+json", "text/plain"]},
    ]
    assert LIVE.receive("client-a", data) == ""
    nb = load_cells(client="client-a")
    assert nb.origin == "live notebook analysis.ipynb (unsaved edits included)"
    text = outline(nb)
    assert text.startswith("Notebook from live notebook analysis.ipynb (unsaved edits "
                           "included): 3 cells.")
    assert "--- cell 1 (markdown) ---\n# Title" in text
    assert "x = 2  # unsaved edit" in text and SAVED not in text
    full = cells_text(nb, 3)
    assert full.startswith("Cells from live notebook analysis.ipynb (unsaved edits included):")
    assert "--- cell 3 (code, executed [4]) ---\nprint(x)" in full
    assert "→ stdout: 2" in full and "→ display: <Figure size 640x480> [image/png]" in full
    assert "→ error: NameError: name 'y' is not defined" in full
    assert "→ [jupyter-agent run] Sales rose." in full
    # Without a snapshot for the client (or with no client), the saved file, as before.
    assert load_cells(client="client-b").origin == "file analysis.ipynb (as last saved)"
    assert load_cells(client=None).cells[0].source == SAVED
    # An explicit path always reads that file.
    assert load_cells(saved, client="client-a").origin.startswith("file analysis.ipynb")


@pytest.mark.parametrize(("data", "reason"), [
    ("not json at all", "not an object"),
    (None, "not an object"),
    ([{"kind": "code"}], "not an object"),
    ({"cells": []}, "version"),
    ({"version": 2, "cells": []}, "version"),
    ({"version": 1}, "cells"),
    ({"version": 1, "cells": "x = 1"}, "cells"),
    (snapshot(12345), "source"),                                 # a number, not coerced
    (snapshot("a", execution_count="3"), "execution_count"),     # a string, not coerced
    (snapshot("a", execution_count=True), "execution_count"),    # a bool is not a count
    (snapshot("a", kind="<script>"), "kind"),
    (snapshot("a", outputs=[{"output_type": "mystery"}]), "output_type"),
    (snapshot("a", outputs="lots"), "outputs"),
    ({"version": 1, "cells": [None]}, "cells.0"),
    ({"version": 1, "path": "p" * 5000, "cells": []}, "path"),
    (snapshot(*["c"] * 10_000), f"10,000 cells (at most {MAX_CELLS:,})"),
    (snapshot(*["s" * 15_000] * 150), "characters of source"),   # 2.25 MB after cutting
])
def test_a_bad_snapshot_is_refused_and_the_file_is_read(saved: Path, data: Any,
                                                         reason: str) -> None:
    assert LIVE.receive("client-a", snapshot("x = 2  # earlier live")) == ""
    error = LIVE.receive("client-a", data)
    assert error.startswith("live cells refused:") and reason in error
    assert "\n" not in error and len(error) <= 200
    # The refused snapshot replaced the earlier one: the tools read the saved file.
    nb = load_cells(client="client-a")
    assert nb.origin == "file analysis.ipynb (as last saved)" and nb.cells[0].source == SAVED


def test_a_huge_source_and_many_outputs_are_capped(saved: Path) -> None:
    huge = "y = 0\n" + "z" * 5_000_000  # a 5 MB source
    outputs = [{"output_type": "stream", "name": "stdout", "text": f"line {i} " + "w" * 1000}
               for i in range(500)]
    data = snapshot(huge, outputs=outputs)
    assert parse(data)[1] == ""
    assert LIVE.receive("client-a", data) == ""
    cell = LIVE.get("client-a").cells[0]  # type: ignore[union-attr]
    assert len(cell.source) < MAX_SOURCE_CHARS + 100 and cell.source.endswith("chars cut]")
    assert len(cell.outputs) == 20
    nb = load_cells(client="client-a")
    assert len(nb.cells[0].outputs) == 20 and nb.cells[0].outputs[19].startswith("stdout: line 19")
    assert max(len(o) for o in nb.cells[0].outputs) < 200
    full = cells_text(nb, 1)
    assert len(full) < 13_000 and "y = 0" in full and "more characters" in full


def test_secrets_and_markup_in_a_snapshot_are_masked_or_dropped(saved: Path) -> None:
    key = "sk-live-notebook-secret-0123456789abcdef"
    register_secret(key)
    data = snapshot(f'OPENAI_API_KEY = "sk-typed-not-saved-999999999999"\nprint("{key}")',
                    path=f"<img src=x onerror=alert(1)>/{key}.ipynb")
    data["cells"][0]["outputs"] = [
        {"output_type": "stream", "name": "stdout", "text": f"{key}\n"},
        {"output_type": "display_data", "text": "<b>hi</b>",
         "mimes": ["text/html", "<img src=x onerror=alert(1)>", "a/" + "b" * 500]},
        {"output_type": "error", "ename": "KeyError", "evalue": key},
    ]
    assert LIVE.receive("client-a", data) == ""
    nb = load_cells(client="client-a")
    for text in (outline(nb), cells_text(nb, 1)):
        assert key not in text and "sk-typed-not-saved" not in text
        assert f"OPENAI_API_KEY = {MASK}" in text and text.count(MASK) >= 3
        assert "onerror" not in text and "bbbbbbbbbb" not in text  # only MIME-shaped names
        assert "[text/html]" in text


def test_each_client_reads_its_own_snapshot_and_old_ones_are_dropped(saved: Path) -> None:
    assert LIVE.receive("client-a", snapshot("a = 'notebook A'", path="A.ipynb")) == ""
    assert LIVE.receive("client-b", snapshot("b = 'notebook B'", path="B.ipynb")) == ""
    assert "notebook A" in outline(load_cells(client="client-a"))
    assert "notebook B" in outline(load_cells(client="client-b"))
    assert "notebook" not in outline(load_cells(client="client-c"))  # the file
    # An empty session id is never a client: nothing kept, nothing read.
    assert LIVE.receive("", snapshot("anon")) == "" and LIVE.get("") is None
    for i in range(MAX_CLIENTS):
        LIVE.receive(f"later-{i}", snapshot(f"n = {i}"))
    assert LIVE.get("client-a") is None and LIVE.get(f"later-{MAX_CLIENTS - 1}") is not None


class _Kernel:
    """A stand-in with ipykernel's ``get_parent`` contract (not our code)."""

    def __init__(self, parent: Any) -> None:
        self.parent = parent

    def get_parent(self, channel: str) -> Any:
        if isinstance(self.parent, Exception):
            raise self.parent
        return self.parent


class _Shell:
    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel


@pytest.mark.parametrize(("parent", "client"), [
    ({"header": {"session": "s-1"}}, "s-1"),
    ({}, None),
    ({"header": None}, None),
    ({"header": {"session": 42}}, None),
    (LookupError("no parent"), None),
])
def test_current_client_never_raises(parent: Any, client: str | None) -> None:
    assert current_client(_Shell(_Kernel(parent))) == client
    assert current_client(None) is None and current_client(_Shell(None)) is None


def test_the_tools_read_the_file_in_a_shell_without_a_kernel(saved: Path, shell: Any) -> None:
    from jupyter_agent.tools.notebook import notebook_tools

    LIVE.receive("client-a", snapshot("live only"))
    tools = {t.name: t for t in notebook_tools(shell)}
    out = tools["read_notebook"].invoke("{}").output
    assert out.startswith("Notebook from file analysis.ipynb (as last saved)")
    assert json.dumps("live only") not in out
