"""What code prints and displays while ``run_python`` runs it: bounded streams, rich displays
and matplotlib figures as PNG.

Streams are swapped for bounded writers (a loop printing gigabytes keeps only its head and
tail). ``display()`` calls are caught through the shell's display publisher, so they land in
the result instead of in the cell that runs the agent. Figures are taken from pyplot after the
code ran: each new (or redrawn) figure is rendered to PNG, described in one line for the model,
and closed so the inline backend does not show it a second time. ``plt.show()`` is a no-op
during the run for the same reason.
"""

from __future__ import annotations

import base64
import io
import struct
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, TextIO, runtime_checkable

from pydantic import BaseModel

from ...base.secrets import mask
from ._text import cap, head, one_line, tail

if TYPE_CHECKING:
    from matplotlib.figure import Figure as PyplotFigure

    from .variables import Shell

__all__ = ["Figure", "Capture", "figure_state", "collect_figures"]


class Figure(BaseModel):
    """A figure the code produced: the PNG for the card, one line for the model."""

    index: int
    png_base64: str
    width: int = 0
    height: int = 0
    description: str = ""


class _Sink:
    """Text of any length, keeping only the first and last ``keep`` characters (and a
    margin, so a secret cut at either edge is still recognised and masked)."""

    def __init__(self, keep: int) -> None:
        self.show = keep
        self.keep = keep + 256
        self.parts: list[str] = []
        self.size = 0
        self.total = 0
        self.head = ""

    def write(self, s: str) -> None:
        self.total += len(s)
        self.parts.append(s)
        self.size += len(s)
        if self.size > 4 * self.keep:  # compact: keeps memory bounded, O(1) per character
            text = self.head + "".join(self.parts)
            self.head = text[: self.keep]
            tail = text[-self.keep:]
            self.parts, self.size = [tail], len(tail)

    def text(self) -> str:
        """The kept text, secrets masked; the middle of a long output is cut."""
        whole = self.head + "".join(self.parts)
        if self.total <= 2 * self.show and len(whole) == self.total:
            return mask(whole)
        first, last = head(whole, self.show), tail(whole, self.show)
        cut = self.total - 2 * self.show
        return f"{first}\n[… {cut:,} characters cut (output was {self.total:,}) …]\n{last}"


class _Stream(io.TextIOBase):
    """``sys.stdout``/``sys.stderr`` during a run."""

    def __init__(self, sink: _Sink, name: str) -> None:
        self._sink = sink
        self._name = name

    @property
    def name(self) -> str:
        return f"<run_python {self._name}>"

    encoding = "utf-8"  # a class attribute over the base's descriptor (it says None)

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def write(self, s: str) -> int:
        if not isinstance(s, str):
            raise TypeError(f"write() argument must be str, not {type(s).__name__}")
        self._sink.write(s)
        return len(s)


Display = tuple[dict[str, object], dict[str, object]]
"""One ``display()`` call: its MIME bundle and its metadata."""


@runtime_checkable
class _Publishing(Protocol):
    """A shell whose ``display()`` goes through a publisher that can be swapped (IPython's)."""

    display_pub: object


@runtime_checkable
class _Pyplot(Protocol):
    """The part of ``matplotlib.pyplot`` a run swaps (by attribute, on the module)."""

    show: Callable[..., object]


class _Publisher:
    """Stands in for the shell's display publisher: keeps what ``display()`` sends."""

    def __init__(self, outputs: list[Display]) -> None:
        self.outputs = outputs
        self.is_publishing = False

    def publish(self, data: dict[str, object], metadata: dict[str, object] | None = None,
                *args: object, **kwargs: object) -> None:
        self.outputs.append((dict(data or {}), dict(metadata or {})))

    def clear_output(self, wait: bool = False) -> None:
        self.outputs.clear()


class Capture:
    """Context manager that swaps the streams, the display publisher and ``plt.show``."""

    def __init__(self, shell: Shell | None, keep: int) -> None:
        self.shell = shell
        self.out = _Sink(keep)
        self.err = _Sink(max(keep // 2, 200))
        self.displays: list[Display] = []
        self._streams: tuple[TextIO, TextIO] | None = None
        self._pub: object = None
        """The shell's own publisher while ours stands in (``_pub_swapped``)."""
        self._pub_swapped = False
        self._show: Callable[..., object] | None = None

    def __enter__(self) -> Capture:
        self._streams = (sys.stdout, sys.stderr)
        sys.stdout, sys.stderr = _Stream(self.out, "stdout"), _Stream(self.err, "stderr")
        shell: object = self.shell  # a Shell is not declared _Publishing: look
        if isinstance(shell, _Publishing):
            self._pub, self._pub_swapped = shell.display_pub, True
            shell.display_pub = _Publisher(self.displays)
        plt: object = sys.modules.get("matplotlib.pyplot")
        if isinstance(plt, _Pyplot):
            self._show = plt.show
            plt.show = _no_show
        return self

    def __exit__(self, *exc: object) -> None:
        if self._streams is not None:
            sys.stdout, sys.stderr = self._streams
            self._streams = None
        shell: object = self.shell
        if self._pub_swapped and isinstance(shell, _Publishing):
            shell.display_pub, self._pub = self._pub, None
            self._pub_swapped = False
        plt: object = sys.modules.get("matplotlib.pyplot")
        if isinstance(plt, _Pyplot) and self._show is not None:
            plt.show, self._show = self._show, None

    def display_texts(self, start: int) -> tuple[list[str], list[Figure]]:
        """The captured displays as text lines, and their images as figures."""
        texts: list[str] = []
        figures: list[Figure] = []
        for data, _meta in self.displays:
            plain = one_line(str(data.get("text/plain", "")), 300)
            png = data.get("image/png")
            if isinstance(png, (bytes, bytearray)):
                png = base64.b64encode(png).decode("ascii")
            if isinstance(png, str):
                w, h = png_size(base64.b64decode(png[:64] + "=" * (-len(png[:64]) % 4)))
                index = start + len(figures)
                desc = f"[figure {index}: {w}x{h} PNG, {plain or 'displayed image'}]"
                figures.append(Figure(index=index, png_base64=png, width=w, height=h,
                                      description=desc))
                continue
            kinds = ", ".join(k for k in data if k != "text/plain")
            texts.append(f"[display{' ' + kinds if kinds else ''}] {plain}".rstrip())
        return texts, figures


def _no_show(*args: object, **kwargs: object) -> None:
    """``plt.show`` during a run: the figures are captured afterwards instead."""


def png_size(head: bytes) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk (bytes 16-24)."""
    if len(head) >= 24 and head[:8] == b"\x89PNG\r\n\x1a\n":
        return struct.unpack(">II", head[16:24])
    return 0, 0


def figure_state() -> dict[int | str, int]:
    """The open pyplot figures before a run: number -> id of the figure object (matplotlib
    types a figure's number as ``int | str``)."""
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return {}
    helpers = sys.modules.get("matplotlib._pylab_helpers")  # loaded with pyplot
    if helpers is None:
        return {}
    Gcf = helpers.Gcf

    return {m.num: id(m.canvas.figure) for m in Gcf.get_all_fig_managers()}


def _describe(fig: PyplotFigure, index: int, w: int, h: int) -> str:
    parts = [f"figure {index}: {w}x{h} PNG"]
    suptitle = getattr(fig, "_suptitle", None)  # Figure.get_suptitle is matplotlib 3.8+
    title = suptitle.get_text() if suptitle else ""
    if title:
        parts.append(f"title {one_line(title, 60)!r}")
    axes = fig.get_axes()
    parts.append(f"{len(axes)} axes")
    for ax in axes[:4]:
        bits = []
        for label, text in (("title", ax.get_title()), ("x", ax.get_xlabel()),
                            ("y", ax.get_ylabel())):
            if text:
                bits.append(f"{label} {one_line(text, 40)!r}")
        counts = [(len(ax.lines), "lines"), (len(ax.patches), "patches"),
                  (len(ax.collections), "collections"), (len(ax.images), "images")]
        bits.extend(f"{n} {what}" for n, what in counts if n)
        if ax.get_legend() is not None:
            bits.append("legend")
        if bits:
            parts.append("(" + ", ".join(bits) + ")")
    return "[" + cap(", ".join(parts), 400) + "]"


def collect_figures(before: dict[int | str, int], start: int) -> tuple[list[Figure], list[str]]:
    """Render the figures the run created or redrew; close the ones it created.

    Returns the figures and warnings (a figure that failed to render is described, not raised).
    """
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return [], []
    helpers = sys.modules.get("matplotlib._pylab_helpers")  # loaded with pyplot
    if helpers is None:
        return [], []
    Gcf = helpers.Gcf

    figures: list[Figure] = []
    problems: list[str] = []
    for manager in list(Gcf.get_all_fig_managers()):
        fig = manager.canvas.figure
        new = before.get(manager.num) != id(fig)
        if not new and not fig.stale:
            continue
        index = start + len(figures)
        buf = io.BytesIO()
        try:
            fig.savefig(buf, format="png")
        except Exception as exc:  # a broken artist: tell the model, keep the run's result
            problems.append(f"[figure {index} could not be drawn: {type(exc).__name__}: "
                            f"{one_line(mask(str(exc)), 200)}]")
        else:
            data = buf.getvalue()
            w, h = png_size(data[:24])
            figures.append(Figure(index=index, png_base64=base64.b64encode(data).decode("ascii"),
                                  width=w, height=h, description=mask(_describe(fig, index, w, h))))
        if new:
            plt.close(fig)
    return figures, problems
