"""Model and user text made inert for markdown: no live HTML, links only to http(s) and mailto.

A saved notebook's markdown (a run's or a batch's ``text/markdown``, an exported session's
markdown cells) is turned into HTML by whatever opens it: nbconvert passes raw HTML through, and
every markdown renderer makes ``[x](javascript:...)`` a link. Text a model wrote (or a row, a
document, a tool's output) goes in only through these functions (docs/security.md):

* ``&`` and ``<`` become entities, so no tag, comment or autolink survives and no entity
  the text spells out (``&#106;avascript:``) is decoded into something else;
* a link or image whose destination is not ``http://``, ``https://`` or ``mailto:`` (after
  decoding entities and dropping the control characters and spaces browsers ignore) gets its
  ``(`` escaped, so it stays text; a link reference definition (``[r]: url``) with such a
  destination gets its ``:`` escaped;
* inside a fenced code block nothing is changed: a renderer shows it as text already (and
  escaping it would show ``&lt;`` to the reader). A fence is trusted only where every
  renderer agrees it is one: opened by a line of at most three spaces and the fence (a
  backtick fence's info string holds no backtick); its lines stay raw only while they are
  indented at least as far as the opening line (a line indented less could end a list item
  around the fence, and the fence with it); any line that looks like a closing fence closes
  it. ``\r`` and ``\r\n`` end lines as they do in CommonMark.

The ground floor: imports nothing of the package.
"""

from __future__ import annotations

import html
import re

__all__ = ["inert_markdown", "inert_inline", "code_span", "safe_url", "SAFE_SCHEMES"]

SAFE_SCHEMES = ("http://", "https://", "mailto:")
"""The only link targets kept as links."""

_FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})(.*)$")
_INLINE_LINK = re.compile(r"\]\(\s*([^)\s]*)")
_REF_DEF = re.compile(r"\]:[ \t]*(\S*)")
_LINE_END = re.compile(r"\r\n|\r|\n")
_CLOSING = re.compile(r"^\s*(`{3,}|~{3,})\s*$")
_IGNORED = re.compile(r"[\x00-\x20\x7f-\x9f]+")


def safe_url(url: str) -> bool:
    """Whether ``url`` is an http(s) or mailto address once entities are decoded (twice) and
    the characters a browser skips (controls, spaces) are dropped."""
    text = url.strip().strip("<>")
    for _ in range(3):
        decoded = html.unescape(text)
        if decoded == text:
            break
        text = decoded
    text = _IGNORED.sub("", text).lower()
    return text.startswith(SAFE_SCHEMES)


def _escape(text: str) -> str:
    # ``>`` stays: no tag or autolink starts with it, and it makes a quote.
    return text.replace("&", "&amp;").replace("<", "&lt;")


def _defuse_links(line: str) -> str:
    """``line`` with every link or image whose target is unsafe turned into text."""

    def inline(m: re.Match[str]) -> str:
        return m.group(0) if safe_url(m.group(1)) else "]\\(" + m.group(0)[2:]

    def definition(m: re.Match[str]) -> str:
        # ``[r]: url`` defines a link wherever it stands (a quote, a list item): ``]\:``
        # never does, and reads the same.
        return m.group(0) if safe_url(m.group(1)) else "]\\:" + m.group(0)[2:]

    return _REF_DEF.sub(definition, _INLINE_LINK.sub(inline, line))


def inert_inline(text: str) -> str:
    """One line of untrusted text for markdown prose: escaped, links defused, on one line."""
    return _defuse_links(_escape(" ".join(str(text).splitlines())))


def code_span(text: str) -> str:
    """Untrusted text as one inline code span (nothing inside a code span is markup; the
    backticks that could close it early become quotes)."""
    body = " ".join(str(text).splitlines()).replace("`", "'")
    return f"`{body}`" if body.strip() else "` `"


def inert_markdown(text: str) -> str:
    """Untrusted markdown (a model's answer): its formatting kept, its HTML and unsafe links
    made text, its fenced code blocks left as they are."""
    out: list[str] = []
    fence: str | None = None
    indent = 0
    for line in _LINE_END.split(str(text)):
        if fence is not None:
            closing = _CLOSING.match(line)
            if closing and closing.group(1)[0] == fence[0] and len(closing.group(1)) >= len(fence):
                fence = None
                out.append(line)
            elif not line.strip() or len(line) - len(line.lstrip(" ")) >= indent:
                out.append(line)
            else:
                out.append(_defuse_links(_escape(line)))
            continue
        m = _FENCE.match(line)
        if m and not (m.group(2)[0] == "`" and "`" in m.group(3)):
            fence, indent = m.group(2), len(m.group(1))
            out.append(m.group(1) + m.group(2) + _escape(m.group(3)))
            continue
        out.append(_defuse_links(_escape(line)))
    return "\n".join(out)
