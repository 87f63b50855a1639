"""HTML to readable plain text with the standard library's ``html.parser``.

Good enough for a model to read a page: scripts and styles dropped, headings as ``#`` lines,
paragraph and list breaks kept, links shown as ``text (url)``.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from urllib.parse import urljoin

__all__ = ["html_to_text"]

_SKIP = {"script", "style", "noscript", "template", "svg", "head", "iframe", "object"}
_BLOCK = {
    "p", "div", "section", "article", "main", "header", "footer", "nav", "aside", "blockquote",
    "ul", "ol", "dl", "table", "form", "fieldset", "figure", "figcaption", "address", "hr",
    "details", "summary",
}
_LINE = {"br", "tr", "dt", "dd"}
_HEADINGS = {f"h{i}": i for i in range(1, 7)}
_VOID = {"br", "hr", "img", "input", "meta", "link", "area", "base", "col", "embed", "source",
         "track", "wbr"}


class _TextExtractor(HTMLParser):
    def __init__(self, base_url: str) -> None:
        super().__init__(convert_charrefs=True)
        self.base_url = base_url
        self.out: list[str] = []
        self.title: list[str] = []
        self._skip_depth = 0
        self._in_title = False
        self._pre = 0
        self._links: list[tuple[str | None, int]] = []  # (href, index in out where text starts)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
            return
        if tag in _SKIP:
            if tag not in _VOID:
                self._skip_depth += 1
            return
        if self._skip_depth:
            return
        if tag in _HEADINGS:
            self._break(2)
            self.out.append("#" * _HEADINGS[tag] + " ")
        elif tag == "li":
            self._break(1)
            self.out.append("- ")
        elif tag == "pre":
            self._break(2)
            self._pre += 1
        elif tag in _BLOCK:
            self._break(2)
        elif tag in _LINE:
            self._break(1)
        elif tag in ("td", "th") and not self._at_line_start():
            self.out.append(" | ")
        elif tag == "a":
            href = dict(attrs).get("href")
            self._links.append((href, len(self.out)))
        elif tag == "img":
            alt = (dict(attrs).get("alt") or "").strip()
            if alt:
                self.out.append(f"[image: {alt}]")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
            return
        if tag in _SKIP:
            if tag not in _VOID:
                self._skip_depth = max(0, self._skip_depth - 1)
            return
        if self._skip_depth:
            return
        if tag in _HEADINGS or tag in _BLOCK:
            self._break(2)
        elif tag == "pre":
            self._pre = max(0, self._pre - 1)
            self._break(2)
        elif tag == "li":
            self._break(1)
        elif tag == "a" and self._links:
            href, start = self._links.pop()
            self._close_link(href, start)

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title.append(data)
            return
        if self._skip_depth:
            return
        if self._pre:
            self.out.append(data)
            return
        text = re.sub(r"\s+", " ", data)
        if self._at_line_start():
            text = text.lstrip()  # indentation of the HTML source is not content
        if text:
            self.out.append(text)

    def _at_line_start(self) -> bool:
        for piece in reversed(self.out):
            if piece:
                return piece.endswith(("\n", "- ", "# ")) or piece.isspace()
        return True

    def _close_link(self, href: str | None, start: int) -> None:
        if not href or href.startswith(("#", "javascript:", "mailto:")):
            return
        url = urljoin(self.base_url, href)
        text = "".join(self.out[start:]).strip()
        if text and text != url:
            self.out.append(f" ({url})")
        elif not text:
            self.out.append(url)

    def _break(self, n: int) -> None:
        """End the current line so that at least ``n`` newlines separate it from what follows."""
        have = 0
        for piece in reversed(self.out):
            stripped = piece.rstrip(" ")
            have += len(stripped) - len(stripped.rstrip("\n"))
            if stripped.strip("\n"):
                break
        else:
            return  # nothing written yet: no leading blank lines
        if have < n:
            self.out.append("\n" * (n - have))


def html_to_text(html: str, base_url: str = "") -> str:
    """Readable text of an HTML document (title first as a ``#`` heading).

    Args:
        html: The document.
        base_url: URL the document came from; relative links are made absolute against it.
    """
    parser = _TextExtractor(base_url)
    parser.feed(html)
    parser.close()
    body = "".join(parser.out)
    # Tidy whitespace: no trailing spaces, at most one blank line in a row.
    lines = [line.rstrip() for line in body.split("\n")]
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip("\n")
    title = " ".join("".join(parser.title).split())
    if title and not text.startswith(f"# {title}"):
        text = f"# {title}\n\n{text}" if text else f"# {title}"
    return text
