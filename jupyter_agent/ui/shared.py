"""The cards' code, sent once per kernel instead of once per card.

anywidget keeps each widget's ``_esm`` (JavaScript) and ``_css`` in that widget's state, and a
saved notebook keeps every widget's state: twenty cards used to save twenty copies of the same
110 KB. So the code lives in one widget model per kernel, :class:`CardCode`: its ``code`` trait
holds the cards' module and every card's CSS, gzipped (the front end unpacks it with the
browser's ``DecompressionStream``). Each card's ``_esm`` is the small ``static/loader.js``
(shipped without its comment lines and indentation): it finds the code model by the id in the
card's ``_code_model`` trait (anywidget's ``model.widget_manager.get_model``), adds the CSS and
imports the code once per page. Nothing but anywidget is needed, so it works
in JupyterLab, Notebook 7 and VS Code alike; elsewhere the cards' saved MIME bundles are shown
as before (bench/bench_saved.py measures a saved notebook).

The cards' module is ``static/bundle/cards.js``: ``static/cards.js`` and the modules it imports,
bundled by the npm build that also makes the JupyterLab extension (``npm run build:cards`` in
``labextension/``). It is committed, so an editable install needs no Node; a test rebuilds it and
fails when it is stale (docs/architecture.md, "The cards' JavaScript").
"""

from __future__ import annotations

import base64
import functools
import gzip
import json
import re
import sys
import threading
from pathlib import Path

import anywidget
import traitlets

from ..base.errors import ConfigError
from ..base.state import STATE, Box

__all__ = ["CardCode", "STATIC", "BUNDLE", "BUILD_COMMAND", "LOADER", "CARD_CSS",
           "MissingBundleError", "card_code", "packed_code"]

STATIC = Path(__file__).parent / "static"

BUNDLE = STATIC / "bundle" / "cards.js"
"""The cards' module, built from ``static/cards.js`` by the npm build (see the module docstring)."""

BUILD_COMMAND = "cd labextension && npm ci && npm run build:cards"
"""What (re)builds :data:`BUNDLE` in a checkout."""

# Sent with every card: its comment lines and indentation stay in the source file.
LOADER = re.sub(r"^[ \t]+", "", re.sub(r"^\s*//.*\n", "", (STATIC / "loader.js").read_text(
    encoding="utf-8"), flags=re.MULTILINE), flags=re.MULTILINE)
"""A card's ``_esm``: imports the shared code (see the module docstring)."""

CARD_CSS = "\n".join((STATIC / name).read_text(encoding="utf-8")
                     for name in ("run.css", "code.css", "batch.css"))
"""The style of every card, run and batch."""

_code: Box[CardCode] = STATE.slot("ui.card_code", Box)
_lock = threading.Lock()
_told: Box[bool] = STATE.slot("ui.missing_bundle_told", Box)


class MissingBundleError(ConfigError):
    """:data:`BUNDLE` is not there (a checkout whose npm build never ran, or a broken install)."""


def _bundle() -> str:
    try:
        return BUNDLE.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise MissingBundleError(
            f"the cards' JavaScript ({BUNDLE.relative_to(STATIC.parents[2])}) is missing, so "
            f"cards are drawn without buttons: build it with `{BUILD_COMMAND}`") from None


@functools.lru_cache(maxsize=1)
def packed_code() -> str:
    """``{"js": the cards' module, "css": their style}`` as JSON, gzipped, in base64
    (``mtime=0``: the same files give the same bytes). Raises :class:`MissingBundleError`.

    Level 6, not gzip's default 9: 2.0 ms instead of 2.7 on the first card of a kernel, for
    0.3% more bytes (24.2 KB instead of 24.1)."""
    payload = json.dumps({"js": _bundle(), "css": CARD_CSS})
    packed = gzip.compress(payload.encode("utf-8"), compresslevel=6, mtime=0)
    return base64.b64encode(packed).decode("ascii")


class CardCode(anywidget.AnyWidget):
    """The one widget model holding the cards' code (never displayed)."""

    # anywidget loads a module for every model: this one has nothing to draw.
    _esm = "export default {};\n"
    code = traitlets.Unicode().tag(sync=True)
    """:func:`packed_code`: the cards' module and style, packed."""


def card_code() -> CardCode:
    """This kernel's code model, made on first use (again if it was closed).

    Without :data:`BUNDLE` it raises :class:`MissingBundleError` after saying so in one line on
    stderr, once per kernel: the displays then fall back to the static card (ui/live.py), which
    would otherwise hide why the buttons are gone."""
    with _lock:
        code = _code.value
        if code is None or getattr(code, "comm", None) is None:
            try:
                packed = packed_code()
            except MissingBundleError as exc:
                if not _told.value:
                    _told.value = True
                    sys.stderr.write(f"jupyter-agent: {exc}.\n")
                raise
            code = _code.value = CardCode(code=packed)
        return code
