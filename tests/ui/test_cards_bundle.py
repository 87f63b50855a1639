"""The cards' JavaScript: built by the npm build, committed, shipped as it is (``ui/shared.py``).

``labextension/build-cards.mjs`` (esbuild) bundles ``ui/static/cards.js`` and its imports into
``ui/static/bundle/cards.js``. The bundle is committed so that an editable install needs no
Node; the freshness test here rebuilds it and fails when the committed file is not what its
sources give (it needs Node and ``npm ci`` in ``labextension/``, as ``make test`` has).
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from jupyter_agent.ui.shared import BUILD_COMMAND, BUNDLE, CARD_CSS, LOADER, STATIC, packed_code
from tests.fakes.openai_server import ScriptedOpenAI, text
from tests.notebooks.test_core_notebook import ROOT, code, python3_kernel, run_notebook

__all__ = ["python3_kernel"]  # a fixture, used by name

SCRIPT = ROOT / "labextension" / "build-cards.mjs"
ESBUILD = ROOT / "labextension" / "node_modules" / "esbuild"
NODE = shutil.which("node")

needs_node = pytest.mark.skipif(
    NODE is None or not ESBUILD.is_dir(),
    reason="needs Node and `npm ci` in labextension/ (make install does both)")


def build(out: Path, entry: Path | None = None) -> bytes:
    """The bundle the npm build makes (``npm run build:cards``), written to ``out``."""
    assert NODE is not None
    args = [NODE, str(SCRIPT), "--outfile", str(out)]
    if entry is not None:
        args += ["--entry", str(entry)]
    subprocess.run(args, check=True, cwd=SCRIPT.parent, timeout=120)
    return out.read_bytes()


@needs_node
def test_the_committed_bundle_is_what_its_sources_build(tmp_path: Path) -> None:
    fresh = build(tmp_path / "cards.js")
    assert fresh == BUNDLE.read_bytes(), (
        f"{BUNDLE.relative_to(ROOT)} is stale: run `{BUILD_COMMAND}` and commit it")


@needs_node
def test_an_edited_source_makes_the_committed_bundle_stale(tmp_path: Path) -> None:
    # The sources copied elsewhere build the same bytes (no path or date in the bundle) ...
    copy = tmp_path / "static"
    shutil.copytree(STATIC, copy, ignore=shutil.ignore_patterns("bundle"))
    assert build(tmp_path / "same.js", copy / "cards.js") == BUNDLE.read_bytes()
    # ... and one changed line in a module cards.js only imports indirectly is seen.
    dom = copy / "dom.js"
    source = dom.read_text(encoding="utf-8")
    assert 'export const UNKNOWN = "—";' in source
    dom.write_text(source.replace('export const UNKNOWN = "—";', 'export const UNKNOWN = "?";'),
                   encoding="utf-8")
    assert build(tmp_path / "edited.js", copy / "cards.js") != BUNDLE.read_bytes()


def test_the_kernel_ships_the_bundle_and_the_css_packed() -> None:
    packed = json.loads(gzip.decompress(base64.b64decode(packed_code())))
    assert packed == {"js": BUNDLE.read_text(encoding="utf-8"), "css": CARD_CSS}


def test_the_bundle_is_one_module_that_imports_nothing() -> None:
    js = BUNDLE.read_text(encoding="utf-8")
    # A blob URL resolves no relative import: none may be left, static or dynamic (the words
    # alone occur, in the Python highlighter's keyword list: only their syntax is looked for).
    assert not re.search(r"""\bfrom\s*["'`]|\bimport\s*["'`(]""", js)
    assert not re.search(r"""["']\.\.?/[\w/-]+\.js["']""", js)
    # Its one export is the default the loader takes (`(await import(url)).default`).
    exports = re.findall(r"\bexport\s*\{([^}]*)\}", js)
    assert len(exports) == 1 and re.fullmatch(r"\s*[\w$]+\s+as\s+default\s*", exports[0])
    assert ".default" in LOADER and "card.render(" in LOADER


@needs_node
def test_every_card_the_widgets_name_is_in_the_bundle(tmp_path: Path) -> None:
    """The loader calls ``cards[model.get("_card")].render`` (and ``.initialize`` when there is
    one): every ``_card`` the Python widgets set must be there (checked in Node: no DOM is
    touched when the module loads)."""
    from jupyter_agent.ui.batch_widget import BatchWidget
    from jupyter_agent.ui.widget import RunWidget

    names = sorted({RunWidget._card.default_value, BatchWidget._card.default_value})
    assert names == ["batch", "run"]
    assert NODE is not None
    probe = ("const m = await import(process.argv[1]); const d = m.default;"
             "console.log(JSON.stringify({keys: Object.keys(m), cards: Object.fromEntries("
             "Object.entries(d).map(([k, v]) => [k, [typeof v.initialize, typeof v.render]]))}));")
    # Alone in a folder, as from a blob URL: an import left in it would not resolve.
    alone = tmp_path / "alone.mjs"
    shutil.copy(BUNDLE, alone)
    out = subprocess.run([NODE, "--input-type=module", "-e", probe, alone.as_uri()],
                         check=True, capture_output=True, text=True, timeout=60).stdout
    found = json.loads(out)
    assert found["keys"] == ["default"]
    for name in names:
        assert found["cards"][name][1] == "function", found
        assert found["cards"][name][0] in ("function", "undefined"), found


@pytest.mark.notebook
@pytest.mark.timeout(300)
def test_a_missing_bundle_says_how_to_build_it_in_one_line_and_the_card_is_static(
        server: ScriptedOpenAI, tmp_path: Path, python3_kernel: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # A checkout whose bundle is gone (never built, deleted): the package copied without it.
    package = tmp_path / "src" / "jupyter_agent"
    shutil.copytree(ROOT / "jupyter_agent", package, ignore=shutil.ignore_patterns(
        "__pycache__", "labextension", "bundle"))
    assert not (package / BUNDLE.relative_to(ROOT / "jupyter_agent")).exists()
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        p for p in (str(package.parent), os.environ.get("PYTHONPATH")) if p))
    server.enqueue(text("First answer."), text("Second answer."))
    cells = [code("%load_ext jupyter_agent\nimport jupyter_agent\nprint(jupyter_agent.__file__)"),
             code("%%chat --no-history\nOne?"), code("%%chat --no-history\nTwo?")]
    nb, _ = run_notebook(cells, tmp_path / "missing.ipynb", python3_kernel)

    assert nb.cells[0].outputs[0]["text"].strip() == str(package / "__init__.py")
    errors = [o["text"] for c in nb.cells[1:] for o in c.outputs
              if o.get("output_type") == "stream" and o.get("name") == "stderr"]
    # Once per kernel, one line, naming the file and the command; no traceback.
    assert len(errors) == 1 and errors[0].count("\n") == 1, errors
    assert errors[0].startswith("jupyter-agent: the cards' JavaScript "
                                "(jupyter_agent/ui/static/bundle/cards.js) is missing")
    assert f"`{BUILD_COMMAND}`" in errors[0] and "Traceback" not in errors[0]
    assert str(tmp_path) not in errors[0]
    # Nothing lost: both runs answered, each drawn as the static card (no widget view).
    for cell, answer in zip(nb.cells[1:], ("First answer.", "Second answer.")):
        (data,) = [o["data"] for o in cell.outputs if o.get("output_type") == "display_data"]
        assert "application/vnd.jupyter.widget-view+json" not in data
        assert "application/vnd.jupyter-agent.run+json" in data
        assert answer in data["text/markdown"]
