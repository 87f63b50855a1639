"""Model and user text is inert in every output (issue #19, break 7).

A hostile model answers with HTML and script links; the outputs that carry its text (a run's
markdown and HTML, the batch card, an exported session, the plain-text fallbacks) are put in a
notebook and converted with nbconvert, and the HTML must hold no live script, no event handler
and no ``javascript:``/``data:`` link that came from the model. Real parts: the real client
over HTTP to the scripted server, the store, nbformat and nbconvert.
"""

from __future__ import annotations

import html.parser
from pathlib import Path
from typing import Any

import nbformat
import nbformat.v4 as v4
import pytest

from jupyter_agent.agents.chat import chat
from jupyter_agent.base.inert import inert_markdown
from jupyter_agent.batch import batch
from jupyter_agent.session import default_store
from jupyter_agent.view.bundle import build_bundle, render_markdown
from jupyter_agent.view.notebook_export import session_notebook
from tests.fakes.openai_server import ScriptedOpenAI, text

MARK = "XSS19"
"""Every payload carries this marker: template scripts of nbconvert do not."""

PAYLOADS = [
    f"<script>alert('{MARK}')</script>",
    f"<img src=x onerror=alert('{MARK}')>",
    f"[click](javascript:alert('{MARK}'))",
    f"[click]( JaVaScRiPt:alert('{MARK}'))",
    f"[click](<javascript:alert('{MARK}')>)",
    f"[click](java&#x09;script:alert('{MARK}'))",
    f"[click](&#106;avascript:alert('{MARK}'))",
    f"![pic](data:image/svg+xml;base64,PHN2Zz4={MARK})",
    f"[click](data:text/html,<script>alert('{MARK}')</script>)",
    f"<javascript:alert('{MARK}')>",
    f"[ref][r1]\n\n[r1]: javascript:alert('{MARK}')",
    f"> quoted\n> [r2]: javascript:alert('{MARK}')\n\n[again][r2]",
    f"<a href=\"javascript:alert('{MARK}')\">x</a>",
    f"&lt;script&gt;alert('{MARK}')&lt;/script&gt;",
    f"<svg><animate onbegin=alert('{MARK}') attributeName=x></svg>",
    f"<details open ontoggle=alert('{MARK}')>",
    f" - item\n   ```\n   code\n<script>alert('{MARK}')</script>\n```",
    f"```\r<b>ok</b>\r```\r<img src=x onerror=alert('{MARK}')>",
    f"`` <script>alert('{MARK}')</script>",
    f"<!-- --><iframe src=\"javascript:alert('{MARK}')\"></iframe>",
]
HOSTILE = "Here is the answer.\n\n" + "\n\n".join(PAYLOADS) + "\n\n[fine](https://example.org)"


class _Live(html.parser.HTMLParser):
    """Collects what would run in a browser and came from the model (carries the marker)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []
        self._script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._script = tag in ("script", "iframe", "object", "embed")
        for name, value in attrs:
            value = value or ""
            squeezed = "".join(value.split()).lower()
            if name.startswith("on") and MARK in value:
                self.found.append(f"<{tag} {name}=...>")
            if name in ("href", "src", "action", "formaction", "xlink:href", "data") and (
                    squeezed.startswith(("javascript:", "data:", "vbscript:"))):
                self.found.append(f"<{tag} {name}={value[:40]}>")
        if tag in ("img", "svg", "details", "iframe", "a") and MARK in str(attrs):
            self.found.append(f"<{tag} {attrs}>")

    def handle_data(self, data: str) -> None:
        if self._script and MARK in data:
            self.found.append(f"script: {data[:60]}")

    def handle_endtag(self, tag: str) -> None:
        self._script = False


def _live_parts(notebook: Any) -> list[str]:
    from nbconvert import HTMLExporter

    body, _ = HTMLExporter().from_notebook_node(notebook)
    parser = _Live()
    parser.feed(body)
    assert "https://example.org" in body  # a safe link still is one
    return parser.found


def test_the_inert_markdown_keeps_safe_markdown() -> None:
    text_ = "**bold**, `a < b`, [ok](https://x.org) [mail](mailto:a@b.c)\n\n```\na < b\n```"
    out = inert_markdown(text_)
    assert "[ok](https://x.org)" in out and "[mail](mailto:a@b.c)" in out
    assert "```\na < b\n```" in out  # code is shown as written
    assert "**bold**" in out


def test_hostile_model_text_is_inert_in_every_exported_output(server: ScriptedOpenAI,
                                                              tmp_path: Path) -> None:
    server.enqueue(text(HOSTILE))
    run = chat(f"Please answer <b onmouseover=alert('{MARK}')>now</b>", session="s")
    assert run.status == "done"
    for _ in range(2):
        server.enqueue(text(HOSTILE))
    result = batch("Row {item}", [f"<script>alert('{MARK}')</script>", "two"], kind="chat",
                   concurrency=1)

    bundle = build_bundle(run.view)
    batch_bundle = result.bundle()
    cells = [
        # The run card as saved: nbconvert takes its sanitised HTML ...
        v4.new_code_cell("%%chat", outputs=[v4.new_output("display_data", data=bundle)]),
        # ... and a reader without HTML its markdown and plain text.
        v4.new_code_cell("", outputs=[v4.new_output(
            "display_data", data={"text/markdown": render_markdown(run.view)})]),
        v4.new_code_cell("", outputs=[v4.new_output(
            "display_data", data={"text/plain": bundle["text/plain"]})]),
        # The batch card (markdown and plain text only).
        v4.new_code_cell("%%chat --over", outputs=[v4.new_output("display_data",
                                                                 data=batch_bundle)]),
    ]
    exported = session_notebook(default_store(), "s")
    notebook = v4.new_notebook(cells=cells + list(exported.cells))
    nbformat.validate(notebook)
    assert _live_parts(notebook) == []


def test_the_inert_text_reaches_the_reader(server: ScriptedOpenAI) -> None:
    """Inert is not deleted: the reader still sees what the model wrote, as text."""
    server.enqueue(text(f"Use <script>alert('{MARK}')</script> carefully."))
    run = chat("hi", session=None)
    from nbconvert import HTMLExporter

    nb = v4.new_notebook(cells=[v4.new_code_cell("", outputs=[v4.new_output(
        "display_data", data={"text/markdown": render_markdown(run.view)})])])
    body, _ = HTMLExporter().from_notebook_node(nb)
    assert f"&lt;script&gt;alert(&#39;{MARK}&#39;)&lt;/script&gt;" in body or \
        f"&lt;script&gt;alert('{MARK}')&lt;/script&gt;" in body


@pytest.mark.parametrize("payload", PAYLOADS)
def test_each_payload_alone_is_inert_in_markdown(payload: str) -> None:
    nb = v4.new_notebook(cells=[v4.new_markdown_cell(inert_markdown(payload + "\n\n"
                                                                    "[fine](https://example.org)"))])
    assert _live_parts(nb) == []
