"""A run as sanitised HTML: the ``text/html`` of its bundle, for front ends without our renderer
(nbconvert's HTML, VS Code, GitHub).

Drawn from the same view state as the card, in the card's order: reasoning and tool calls fold
(``<details>``), arguments are shown as ``name=value`` and pretty JSON, not raw JSON text. Safe
by construction: every piece of text is escaped before any markup is added, the only markup
is this module's own fixed tags with inline styles (no class an outside stylesheet could
abuse), and there is no script, no event handler, no link and no image.
"""

from __future__ import annotations

import json
import re
from html import escape

from ..base.jsontypes import (
    ReadOnlyJSON,
    as_object,
    float_field,
    int_field,
    list_field,
    object_field,
    object_list,
)
from ..base.secrets import mask
from .changes import changes_lines

__all__ = ["render_html", "footer_text"]

_PREVIEW = 4000
# Tool outputs are previews here, as in the markdown: the whole output is in the view (run+json),
# and a saved notebook should stay close to its view's size (docs/behaviour.md).
_TOOL_PREVIEW = 200
_BOX = ("font-family:system-ui,-apple-system,'Segoe UI',sans-serif;font-size:14px;"
        "border:1px solid rgba(127,127,127,.35);border-radius:6px;padding:8px 12px;"
        "margin:4px 0;max-width:100%")
# Short inline styles: they repeat on every tool of a long run, and a saved run should stay close
# to its view's size (GitHub and Jupyter's sanitisers keep inline styles, not <style> blocks).
_PRE = "white-space:pre-wrap;overflow-wrap:anywhere;background:#8881;padding:4px 6px"
_DIM = "color:gray;font-size:12px"
_TOOL_ICON = {"done": "✓", "error": "✕", "interrupted": "■", "queued": "○", "running": "◌",
              "waiting": "?"}


def _esc(text: str) -> str:
    """Masked first (a secret's text would not match once escaped), then escaped."""
    return escape(mask(text))


def _clip(text: str, limit: int = _PREVIEW) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n… [{len(text) - limit} more characters]"


def _inline(text: str) -> str:
    """One escaped line with `code` and **bold** (nothing else becomes markup)."""
    out = _esc(text)
    out = re.sub(r"`([^`\n]+)`", r"<code>\1</code>", out)
    return re.sub(r"\*\*([^*\n]+)\*\*", r"<strong>\1</strong>", out)


def _markdown(text: str) -> str:
    """A small, safe subset of markdown: fenced code, headings, lists, paragraphs."""
    html: list[str] = []
    para: list[str] = []

    def flush() -> None:
        if para:
            html.append("<p style='margin:4px 0'>" + "<br>".join(_inline(p) for p in para) + "</p>")
            para.clear()

    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        fence = re.match(r"^\s*(`{3,}|~{3,})", line)
        if fence:
            flush()
            mark, body = fence.group(1), []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith(mark):
                body.append(lines[i])
                i += 1
            html.append(f"<pre style=\"{_PRE}\">{_esc(chr(10).join(body))}</pre>")
        elif m := re.match(r"^(#{1,6})\s+(.*)", line):
            flush()
            html.append(f"<p style='margin:6px 0'><strong>{_inline(m.group(2))}</strong></p>")
        elif m := re.match(r"^\s*(?:[-*+]|\d+[.)])\s+(.*)", line):
            flush()
            html.append(f"<div style='margin:0 0 0 1.2em'>• {_inline(m.group(1))}</div>")
        elif not line.strip():
            flush()
        else:
            para.append(line)
        i += 1
    flush()
    return "".join(html)


def _args(arguments: str) -> tuple[str, str]:
    """The one-line summary and the pretty JSON of a call's arguments."""
    try:
        value = json.loads(arguments) if arguments.strip() else {}
    except ValueError:
        return _clip(arguments, 120), arguments
    if isinstance(value, dict):
        summary = " ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in value.items())
        return _clip(summary, 120), json.dumps(value, indent=2, ensure_ascii=False)
    return _clip(arguments, 120), json.dumps(value, indent=2, ensure_ascii=False)


def _tool_state(item: ReadOnlyJSON, status: str) -> str:
    if item.get("error") == "interrupted":
        return "interrupted"
    if item.get("error"):
        return "error"
    state = str(item.get("state") or "done")
    if state in ("queued", "running") and status != "running":
        return "waiting" if status == "ask" else "interrupted"
    return state


def _tool(item: ReadOnlyJSON, status: str) -> str:
    st = _tool_state(item, status)
    summary, pretty = _args(str(item.get("arguments") or ""))
    seconds = item.get("seconds")
    when = f"{float(seconds):.2f} s" if isinstance(seconds, (int, float)) and seconds else st
    head = (f"{_TOOL_ICON.get(st, '•')} <strong>{_esc(str(item.get('name') or '(tool)'))}</strong> "
            f"<code>{_esc(summary)}</code> <span style=\"{_DIM}\">{_esc(when)}</span>")
    body = []
    if pretty:
        body.append(f"<div style=\"{_DIM}\">Arguments</div><pre style=\"{_PRE}\">{_esc(pretty)}</pre>")
    error = item.get("error")
    if error and error != "interrupted":
        body.append(f"<div style=\"{_DIM}\">Error</div><pre style=\"{_PRE}\">{_esc(_clip(str(error), _TOOL_PREVIEW))}</pre>")
    output = str(item.get("output") or "")
    if output and output != error:
        body.append(f"<div style=\"{_DIM}\">Output</div><pre style=\"{_PRE}\">{_esc(_clip(output, _TOOL_PREVIEW))}</pre>")
    row = ""
    changes = as_object(item.get("changes"))
    if changes is not None:  # a sandboxed command's change row, no buttons
        lines = "".join(f"<div>{_esc(line)}</div>" for line in changes_lines(changes))
        row = ("<div style='border-left:3px solid rgba(127,127,127,.45);padding:2px 8px;"
               f"margin:2px 0 4px 1.6em'>{lines}</div>")
    return (f"<details style='margin:2px 0'><summary>{head}</summary>{''.join(body)}</details>"
            f"{row}")


def _ask(ask: ReadOnlyJSON) -> str:
    title = "Approval needed" if ask.get("kind") == "approval" else "Question"
    answered = object_field(ask, "answered")
    rows = []
    for i, option in enumerate(list_field(ask, "options"), start=1):
        chosen = answered.get("how") == "option" and answered.get("option_index") == i
        text = f"{i}. {_esc(str(option))}"
        rows.append(f"<div style='margin:0 0 0 1em'>{'<strong>' + text + ' ✓</strong>' if chosen else text}</div>")
    if answered.get("how") == "other":
        rows.append(f"<div>Answer: <em>{_esc(str(answered.get('answer', '')))}</em></div>")
    elif answered.get("how") == "dismissed":
        rows.append("<div><em>Dismissed.</em></div>")
    elif not answered:
        rows.append(f"<div style=\"{_DIM}\">Waiting for an answer.</div>")
    return (f"<div style='border-left:3px solid rgba(25,118,210,.8);padding:2px 8px;margin:4px 0'>"
            f"<strong>{title}:</strong> {_esc(str(ask.get('question', '')))}{''.join(rows)}</div>")


def _plan(plan: ReadOnlyJSON) -> str:
    icons = {"done": "✓", "in_progress": "◌", "blocked": "!", "skipped": "–"}
    steps = object_list(plan, "steps")
    rows = "".join(
        f"<div style='margin:0 0 0 1em'>{icons.get(str(s.get('status')), '○')} "
        f"{_esc(str(s.get('title', '')))} <span style=\"{_DIM}\">{_esc(str(s.get('status', '')))}</span></div>"
        for s in steps)
    return f"<div style='margin:4px 0'><strong>Plan:</strong> {_esc(str(plan.get('task') or ''))}{rows}</div>"


def footer_text(view: ReadOnlyJSON) -> str:
    """One line: model, rounds, tokens, cost, time."""
    f = object_field(view, "footer")
    inp, out, cost = f.get("input_tokens"), f.get("output_tokens"), f.get("cost")
    # Unknown (None: no call accounted, or a model without prices) reads "unknown", never 0.
    # Counted here because the server reported none: said in words ("~86" read as a typo).
    tokens = ("tokens unknown" if inp is None or out is None
              else f"about {inp} in / {out} out tokens (estimated)" if f.get("estimated")
              else f"{inp} in / {out} out tokens")
    price = "cost unknown" if cost is None else f"${float_field(f, 'cost'):.4f}"
    return (f"{f.get('model') or view.get('model')} · {f.get('rounds', 0)} round(s) · "
            f"{tokens} · {price} · {float_field(f, 'seconds'):.1f} s{_parts(f)}{cached_text(f)}")


def cached_text(footer: ReadOnlyJSON) -> str:
    """`` · 2 cached (saved $0.0012)`` once rounds came from the answer cache."""
    n = int_field(footer, "cached")
    if not n:
        return ""
    return f" · {n} cached (saved ${float_field(footer, 'saved'):.4f})"


def output_rows(view: ReadOnlyJSON, limit: int = 40) -> list[tuple[str, str]]:
    """A typed run's fields as ``(name, value)`` lines for the card's table (values as short
    JSON; at most ``limit`` fields)."""
    data = object_field(object_field(view, "output"), "data")
    rows = []
    for name, value in list(data.items())[:limit]:
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                               default=str)
        rows.append((str(name), _clip(text, 200)))
    return rows


def _output(view: ReadOnlyJSON) -> str:
    out = object_field(view, "output")
    head = (f"<div style=\"{_DIM}\">{_esc(str(out.get('schema', '')))} · "
            f"{'valid' if out.get('valid') else 'invalid'}</div>")
    cells = "".join(f"<tr><td style=\"{_DIM};padding-right:8px\">{_esc(k)}</td>"
                    f"<td>{_esc(v)}</td></tr>" for k, v in output_rows(view))
    errs = "".join(f"<div style='color:#c62828'>{_esc(str(e))}</div>"
                   for e in list_field(out, "errors")[:10])
    return f"<div class='ja-output'>{head}<table>{cells}</table>{errs}</div>"


def _parts(footer: ReadOnlyJSON) -> str:
    """`` in 2 parts`` for a run resumed after a question (its time is the sum of its parts)."""
    parts = int_field(footer, "parts")
    return f" in {parts} parts" if parts > 1 else ""


def render_html(view: ReadOnlyJSON) -> str:
    """The run as one self-contained, sanitised HTML fragment (see the module docstring)."""
    status = str(view.get("status") or "")
    parts = [f"<div style=\"margin-bottom:4px\"><strong>{_esc(str(view.get('agent') or 'run'))}</strong> "
             f"<span style=\"{_DIM}\">{_esc(str(view.get('model') or ''))}</span> "
             f"<span style=\"{_DIM};float:right\">{_esc(status)}</span></div>"]
    for item in object_list(view, "items"):
        kind = item.get("kind")
        text = str(item.get("text", ""))
        if kind == "reasoning" and text.strip():
            parts.append(f"<details style='margin:2px 0'><summary style=\"{_DIM}\">Reasoning</summary>"
                         f"<pre style=\"{_PRE}\">{_esc(_clip(text))}</pre></details>")
        elif kind == "text" and text.strip():
            if item.get("withdrawn"):
                parts.append(f"<div style=\"{_DIM}\"><em>Draft withdrawn by the stop gate.</em></div>")
            else:
                parts.append(_markdown(text))
        elif kind == "tool":
            parts.append(_tool(item, status))
        elif kind == "warning" and item.get("level") == "note":
            parts.append(f"<div style=\"{_DIM}\">Note: {_esc(str(item.get('message', '')))}</div>")
        elif kind == "warning":
            parts.append(f"<div style='color:#b85c00'>Warning: {_esc(str(item.get('message', '')))}</div>")
        elif kind == "gate":
            parts.append(f"<div style=\"{_DIM}\">Stop gate: {_esc(str(item.get('reason', '')))}</div>")
        elif kind in ("ask", "approval"):
            parts.append(_ask(item))
        elif kind == "compressed":
            parts.append(f"<div style=\"{_DIM}\">Context {_esc(str(item.get('method')))}: "
                         f"{_esc(str(item.get('tokens_before')))} → {_esc(str(item.get('tokens_after')))} tokens</div>")
    if view.get("plan"):
        parts.append(_plan(object_field(view, "plan")))
    if view.get("output"):
        parts.append(_output(view))
    if view.get("ask"):
        parts.append(_ask(object_field(view, "ask")))
    if view.get("error"):
        parts.append(f"<div style='color:#c62828'><strong>{_esc(status or 'error')}:</strong> "
                     f"{_esc(str(view['error']))}</div>")
    if view.get("hint") and status == "ask":
        parts.append(f"<div style=\"{_DIM}\">{_inline(str(view['hint']))}</div>")
    parts.append(f"<div style=\"{_DIM};border-top:1px solid rgba(127,127,127,.25);margin-top:6px;"
                 f"padding-top:4px\">{_esc(footer_text(view))}</div>")
    return f"<div style=\"{_BOX}\">{''.join(parts)}</div>"
