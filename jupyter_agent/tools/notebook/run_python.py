"""``run_python``: run code in the live kernel namespace, like one more notebook cell.

The code runs in the calling thread (the kernel's main thread when a tool loop runs inside a
cell) with the shell's ``user_ns`` as globals, so what it defines is there for the next cell.
IPython syntax (``%time``, ``!ls``) is translated by the shell first. The result says what a
cell would have shown: stdout and stderr (bounded), the value of a last expression (its repr,
capped), ``display()`` outputs and matplotlib figures (PNG kept for the card, one line for the
model), and on an error a short traceback of the code's own frames, not IPython's wall.

A time limit interrupts the code (see ``_time_limit.py``); the namespace keeps whatever the code
did before the interrupt, and the kernel stays usable. The user's own Ctrl-C is not swallowed:
it propagates and ends the agent's run, as it would end a cell.
"""

from __future__ import annotations

import ast
import itertools
import linecache
import time
import traceback
from collections.abc import Mapping
from types import CodeType, TracebackType

from pydantic import BaseModel, Field

from ...base.secrets import mask
from . import _time_limit
from ._capture import Capture, Figure, collect_figures, figure_state
from ._text import cap, safe_repr
from ._time_limit import TimeLimitExceeded, time_limit
from .variables import Shell, VariableError

__all__ = ["DEFAULT_TIMEOUT", "PythonRun", "run_code"]

DEFAULT_TIMEOUT = 30.0
"""Seconds one ``run_python`` call may take before it is interrupted."""
DEFAULT_KEEP = 8000
"""Characters of stdout kept (head and tail each); stderr keeps half."""
MAX_CODE = 200_000
_counter = itertools.count(1)
_LIMITS_FILE = _time_limit.__file__


class PythonRun(BaseModel):
    """What one ``run_python`` call did. The model reads :meth:`model_text`; a card may show
    the code, the streams and the figures' PNG data."""

    code: str
    stdout: str = ""
    stderr: str = ""
    result: str | None = None
    """``repr`` of the last line's value when it is an expression (capped)."""
    error: str | None = None
    """A short traceback (the code's frames only), or why the code was stopped."""
    timed_out: bool = False
    seconds: float = 0.0
    figures: list[Figure] = Field(default_factory=list)
    displays: list[str] = Field(default_factory=list)
    """Other ``display()`` outputs, as one line each."""

    def model_text(self) -> str:
        """The text the model receives (no image data, secrets masked)."""
        parts = []
        if self.stdout:
            parts.append(f"[stdout]\n{self.stdout.rstrip()}")
        if self.stderr:
            parts.append(f"[stderr]\n{self.stderr.rstrip()}")
        parts.extend(self.displays)
        parts.extend(f.description for f in self.figures)
        if self.result is not None:
            parts.append(f"[result]\n{self.result}")
        if self.error:
            parts.append(f"[error]\n{self.error}")
        if not parts:
            parts.append("Done: no output.")
        return mask("\n".join(parts))

    def short_error(self) -> str | None:
        """The error's last line (for the tool call's error field)."""
        if not self.error:
            return None
        lines = self.error.strip().splitlines()
        return cap(lines[0] if self.timed_out else lines[-1], 300)


def _compile(source: str, filename: str) -> tuple[CodeType | None, CodeType | None]:
    """The body as ``exec`` code and a trailing expression as ``eval`` code (or None)."""
    tree = ast.parse(source, filename=filename, mode="exec")
    last = None
    final = tree.body[-1] if tree.body else None
    if isinstance(final, ast.Expr):
        tree.body.pop()
        last = ast.Expression(final.value)
    body = compile(tree, filename, "exec") if tree.body else None
    return body, (compile(last, filename, "eval") if last is not None else None)


def _frames(tb: TracebackType | None, filename: str) -> list[str]:
    """The formatted frames from the agent's code on, without this package's own frames."""
    # Drop our frames above the code (run_code, exec) and the time limit's signal handler.
    while tb is not None and tb.tb_frame.f_code.co_filename != filename:
        tb = tb.tb_next
    frames = [f for f in traceback.extract_tb(tb) if f.filename != _LIMITS_FILE]
    if len(frames) > 6:
        return (traceback.format_list(frames[:2]) + [f"  … {len(frames) - 5} frames …\n"]
                + traceback.format_list(frames[-3:]))
    return traceback.format_list(frames)


def _short_traceback(exc: BaseException, tb: TracebackType | None, filename: str) -> str:
    """The exception with the code's own frames (and the last library frames it called)."""
    lines = _frames(tb, filename)
    head = "Traceback (most recent call last):\n" if lines else ""
    tail = "".join(traceback.format_exception_only(type(exc), exc))
    return mask(cap(head + "".join(lines) + tail, 3000))


def run_code(code: str, ns: Mapping[str, object], *, shell: Shell | None = None,
             timeout: float | None = DEFAULT_TIMEOUT, keep: int = DEFAULT_KEEP) -> PythonRun:
    """Run ``code`` in ``ns`` (the kernel's ``user_ns``) and report what it did.

    Args:
        code: Python source; IPython syntax is accepted when ``shell`` is given.
        ns: The namespace the code runs in (its globals): a dict, as ``user_ns`` and
            ``__main__.__dict__`` are (``exec`` takes no other mapping).
        shell: The IPython shell (for ``%magics`` and ``display()`` capture), or None.
        timeout: Seconds before the code is interrupted (None: no limit).
        keep: Characters of stdout kept at the head and at the tail.

    Raises:
        VariableError: ``code`` is empty or too long, or ``ns`` is not a dict (nothing ran).
        KeyboardInterrupt: the user interrupted the kernel (not the time limit).
    """
    if not isinstance(code, str) or not code.strip():
        raise VariableError("code is empty.")
    if len(code) > MAX_CODE:
        raise VariableError(f"code is {len(code):,} characters; at most {MAX_CODE:,}.")
    if not isinstance(ns, dict):
        raise VariableError(f"The namespace is a {type(ns).__name__}; code runs only in a "
                            "dict (a kernel's user_ns).")
    run = PythonRun(code=code)
    filename = f"<agent-cell-{next(_counter)}>"
    source: str = code
    if shell is not None and hasattr(shell, "transform_cell"):
        try:
            source = shell.transform_cell(code)
        except Exception as exc:  # a broken magic line: report it like a syntax error
            run.error = _short_traceback(exc, None, filename)
            return run
    # Tracebacks show the code's lines, as in a notebook cell.
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    try:
        body, last = _compile(source, filename)
    except (SyntaxError, ValueError) as exc:
        run.error = _short_traceback(exc, None, filename)
        return run
    before = figure_state()
    capture = Capture(shell, keep)
    start = time.perf_counter()
    value: object = None
    has_value = False
    with capture:
        with time_limit(timeout) as limit:
            try:
                if body is not None:
                    exec(body, ns)  # noqa: S102 - running the model's code is this tool's job
                if last is not None:
                    value = eval(last, ns)  # noqa: S307
                    has_value = True
            except TimeLimitExceeded as exc:
                if limit is None or not limit.owns(exc):
                    raise
                run.timed_out = True
                where = "".join(_frames(exc.__traceback__, filename))
                run.error = mask(cap(f"Interrupted: the code ran longer than {timeout:g} s "
                                     "(what it set before that is kept). It was here:\n"
                                     + where, 3000)).rstrip()
            except KeyboardInterrupt:
                raise  # the user's interrupt ends the agent's run, like a cell
            except BaseException as exc:  # SystemExit too: the kernel must not exit
                run.error = _short_traceback(exc, exc.__traceback__, filename)
    run.seconds = round(time.perf_counter() - start, 4)
    run.stdout = mask(capture.out.text())
    run.stderr = mask(capture.err.text())
    run.displays, shown = capture.display_texts(1)
    figures, problems = collect_figures(before, 1 + len(shown))
    run.figures = shown + figures
    run.displays.extend(problems)
    if has_value and value is not None:
        run.result = mask(safe_repr(value, 3000, seconds=2.0))
    return run
