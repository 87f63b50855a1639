"""The cards' code, sent once per kernel instead of once per card.

anywidget keeps each widget's ``_esm`` (JavaScript) and ``_css`` in that widget's state, and a
saved notebook keeps every widget's state: twenty cards used to save twenty copies of the same
110 KB. So the code lives in one widget model per kernel, :class:`CardCode`: its ``code`` trait
holds the joined ``static/cards.js`` and every card's CSS, gzipped (about a third of the size;
the front end unpacks it with the browser's ``DecompressionStream``). Each card's ``_esm`` is
the small ``static/loader.js`` (shipped without its comment lines and indentation): it finds the code model by
the id in the card's ``_code_model`` trait (anywidget's ``model.widget_manager.get_model``),
adds the CSS and imports the code once per page. Nothing but anywidget is needed, so it works
in JupyterLab, Notebook 7 and VS Code alike; elsewhere the cards' saved MIME bundles are shown
as before (bench/bench_saved.py measures a saved notebook).
"""

from __future__ import annotations

import base64
import functools
import gzip
import json
import re
import threading
from pathlib import Path

import anywidget
import traitlets

from ..base.state import STATE, Box
from ._esm import bundle_esm

__all__ = ["CardCode", "STATIC", "LOADER", "CARD_CSS", "card_code", "packed_code"]

STATIC = Path(__file__).parent / "static"

# Sent with every card: its comment lines and indentation stay in the source file.
LOADER = re.sub(r"^[ \t]+", "", re.sub(r"^\s*//.*\n", "", (STATIC / "loader.js").read_text(
    encoding="utf-8"), flags=re.MULTILINE), flags=re.MULTILINE)
"""A card's ``_esm``: imports the shared code (see the module docstring)."""

CARD_CSS = "\n".join((STATIC / name).read_text(encoding="utf-8")
                     for name in ("run.css", "code.css", "batch.css"))
"""The style of every card, run and batch."""

_code: Box[CardCode] = STATE.slot("ui.card_code", Box)
_lock = threading.Lock()


@functools.lru_cache(maxsize=1)
def packed_code() -> str:
    """``{"js": the cards' module, "css": their style}`` as JSON, gzipped, in base64
    (``mtime=0``: the same sources give the same bytes).

    Level 6, not gzip's default 9: 6 ms instead of 10–15 on the first card of a kernel, for
    0.5% more bytes (40.2 KB instead of 40.0)."""
    payload = json.dumps({"js": bundle_esm(STATIC / "cards.js"), "css": CARD_CSS})
    packed = gzip.compress(payload.encode("utf-8"), compresslevel=6, mtime=0)
    return base64.b64encode(packed).decode("ascii")


class CardCode(anywidget.AnyWidget):
    """The one widget model holding the cards' code (never displayed)."""

    # anywidget loads a module for every model: this one has nothing to draw.
    _esm = "export default {};\n"
    code = traitlets.Unicode().tag(sync=True)
    """:func:`packed_code`: the cards' module and style, packed."""


def card_code() -> CardCode:
    """This kernel's code model, made on first use (again if it was closed)."""
    with _lock:
        code = _code.value
        if code is None or getattr(code, "comm", None) is None:
            code = _code.value = CardCode(code=packed_code())
        return code
