"""The MIME bundle of a run: run JSON, markdown and plain text, all from the same view state.

Its size stays close to the view's: the run JSON is the view (no event log since format 2)
and the markdown shows each tool output as a short preview.

Every front end shows something: JupyterLab with our extension renders the run JSON, GitHub
nbconvert and VS Code render the sanitised HTML (``view/card_html.py``: the card's layout, every text
escaped, no script), markdown readers the markdown, a terminal the plain text. Model output is
never passed through as markup: the markdown holds it inert (``_inert.py``: HTML escaped, links
only to http(s) and mailto).

The view comes masked from the run's recorder; each representation is masked once
more as it is built (a secret registered during the run, a view built by hand), so no
saved notebook holds a known secret (docs/security.md).
"""

from __future__ import annotations

import json

from ..base.events import RUN_FORMAT_VERSION, RUN_MIME_TYPE
from ..base.inert import code_span, inert_inline, inert_markdown
from ..base.jsontypes import (
    JSONObject,
    ReadOnlyJSON,
    as_object,
    float_field,
    list_field,
    object_field,
    object_list,
    str_field,
)
from ..base.secrets import mask, mask_json
from .card_html import footer_text, output_rows, render_html
from .changes import changes_lines

__all__ = ["run_payload", "render_markdown", "render_plain", "render_html", "build_bundle",
           "output_metadata", "tools_text"]

_STATUS_ICON = {"pending": "[ ]", "in_progress": "[~]", "done": "[x]", "blocked": "[!]",
                "skipped": "[-]"}
_PREVIEW = 600
_TOOL_PREVIEW = 200


def run_payload(view: ReadOnlyJSON) -> dict[str, object]:
    """The ``application/vnd.jupyter-agent.run+json`` payload: the run's view state.

    The view is all a saved run needs to be drawn (the JupyterLab renderer reads it); the event
    log, which repeated every text and tool output of the view and more, stays in the session
    store (``%agent export`` rebuilds a run from it). Format 1 also held ``events``; readers
    take both.
    """
    return {"version": RUN_FORMAT_VERSION, "run_id": view.get("run_id", ""), "view": view}


def _md_escape_inline(text: object) -> str:
    """Untrusted text as one line of markdown prose: inert (docs/security.md), no code span."""
    return inert_inline(str(text).replace("`", "'"))


def _fence(text: str, lang: str = "") -> str:
    fence = "```"
    while fence in text:
        fence += "`"
    return f"{fence}{lang}\n{text}\n{fence}"


def _preview(text: str, limit: int = _PREVIEW) -> str:
    if len(text) <= limit:
        return text
    return text[: limit // 2] + f"\n… [{len(text) - limit} characters hidden] …\n" + text[-limit // 2:]


def _plan_md(plan: ReadOnlyJSON) -> list[str]:
    steps = object_list(plan, "steps")
    done = sum(1 for s in steps if s.get("status") in ("done", "skipped"))
    lines = [f"**Plan: {_md_escape_inline(plan.get('task') or '')}** ({done}/{len(steps)})", ""]
    for s in steps:
        icon = _STATUS_ICON.get(str_field(s, "status", "pending"), "[ ]")
        lines.append(f"- {icon} {_md_escape_inline(s.get('title', ''))} *({s.get('status')})*")
        for ev in list_field(s, "evidence"):
            lines.append(f"  - evidence: {_md_escape_inline(str(ev))}")
        if s.get("outputSummary"):
            lines.append(f"  - result: {_md_escape_inline(s['outputSummary'])}")
        if s.get("blocker"):
            lines.append(f"  - blocker: {_md_escape_inline(s['blocker'])}")
    return lines


def _ask_md(ask: ReadOnlyJSON) -> list[str]:
    title = "Approval needed" if ask.get("kind") == "approval" else "Question"
    lines = [f"**{title}:** {_md_escape_inline(ask.get('question', ''))}", ""]
    answered = as_object(ask.get("answered"))
    for i, opt in enumerate(list_field(ask, "options"), start=1):
        chosen = answered and answered.get("how") == "option" and answered.get("option_index") == i
        lines.append(f"{i}. {'**' + _md_escape_inline(opt) + '** ✓' if chosen else _md_escape_inline(opt)}")
    if answered and answered.get("how") == "other":
        lines.append(f"\nAnswer: *{_md_escape_inline(answered.get('answer', ''))}*")
    elif answered and answered.get("how") == "dismissed":
        lines.append("\n*Dismissed.*")
    elif not answered:
        lines.append("\n*Waiting for an answer.*")
    return lines


def _proposal_md(p: ReadOnlyJSON) -> str:
    """A proposed cell as code (how it is shown without the front end's buttons)."""
    why = f"{_md_escape_inline(p.get('explanation') or '')}\n\n" if p.get("explanation") else ""
    lang = "python" if p.get("kind", "code") == "code" else "markdown"
    return (f"**Proposed {p.get('kind', 'code')} cell** ({p.get('status', 'proposed')})\n\n"
            f"{why}{_fence(str_field(p, 'source'), lang)}")


def _output_md(view: ReadOnlyJSON) -> str:
    """A typed run's instance as a two-column table (and its errors when invalid)."""
    out = object_field(view, "output")
    lines = [f"**{_md_escape_inline(str(out.get('schema', '')))}** "
             f"({'valid' if out.get('valid') else 'invalid'})", "", "| field | value |",
             "|---|---|"]
    lines += [f"| {_md_escape_inline(k)} | {_md_escape_inline(v).replace('|', '&#124;')} |"
              for k, v in output_rows(view)]
    lines += [f"- {_md_escape_inline(str(e))}" for e in list_field(out, "errors")[:10]]
    return "\n".join(lines)


ROLE_SOURCES = {"session": " (this session's agent)", "intent": " (chosen for the request)"}
"""What the card adds to a named agent it did not get from the cell (``static/tools_line.js``)."""


def role_text(view: ReadOnlyJSON) -> str:
    """``Agent sh · `` when a named agent ran (why, when the cell did not name it); else ``""``."""
    role = view.get("role")
    if not isinstance(role, dict) or not role.get("name"):
        return ""
    return f"Agent {role['name']}{ROLE_SOURCES.get(str(role.get('source')), '')} · "


def tools_text(view: ReadOnlyJSON) -> str | None:
    """``Tools: a, b, c`` (``Tools: none``) for a run that offered tools, after the agent that
    ran (``Agent sh · Tools: bash``); ``None`` otherwise."""
    if view.get("tools") is None:
        return None
    tools = [str(t) for t in list_field(view, "tools")]
    return role_text(view) + "Tools: " + (", ".join(tools) if tools else "none")


def typed_answer_json(view: ReadOnlyJSON, text: str) -> bool:
    """Whether ``text`` is the valid typed answer's JSON (bare or fenced), which the output
    table shows already: drawn once, not twice (``static/render.js`` isTypedAnswerJson)."""
    out = object_field(view, "output")
    if not out.get("valid"):
        return False
    bare = text.strip().removeprefix("```json").removeprefix("```").removesuffix("```").strip()
    try:
        return bool(json.loads(bare) == out.get("data"))
    except ValueError:
        return False


def _tool_md(item: ReadOnlyJSON) -> list[str]:
    """A tool card: its call, a preview of its output, its figures, proposal and changes."""
    status = "error" if item.get("error") else "ok"
    head = (f"**Tool {code_span(str_field(item, 'name'))}** ({status}, "
            f"{float_field(item, 'seconds'):.2f} s) "
            f"{code_span(_preview(str_field(item, 'arguments'), 200))}")
    # A short preview: the whole output is in the view, and the markdown is the fallback of
    # readers without HTML (keeps a saved run close to its view's size).
    out = [head + "\n\n" + _fence(_preview(str_field(item, "output"), _TOOL_PREVIEW))]
    for fig in object_list(item, "figures"):
        out.append(f"> *{_md_escape_inline(fig.get('description') or 'figure')}*")
    if item.get("proposal"):
        out.append(_proposal_md(object_field(item, "proposal")))
    if item.get("changes"):  # paths are the command's: escaped like any model text
        out.append("\n".join(f"> {_md_escape_inline(line)}"
                              for line in changes_lines(object_field(item, "changes"))))
    return out


def render_markdown(view: ReadOnlyJSON) -> str:
    """A readable markdown transcript of the run (GitHub, nbconvert, VS Code)."""
    out: list[str] = []
    items = object_list(view, "items")
    texts = [i for i in items if i.get("kind") == "text" and not i.get("withdrawn")
             and str_field(i, "text")]
    typed = texts[-1] if texts and typed_answer_json(view, str_field(texts[-1], "text")) else None
    for item in items:
        kind = item.get("kind")
        text = str_field(item, "text")
        if item is typed:
            continue
        if kind == "reasoning" and text.strip():
            out.append("<details><summary>Reasoning</summary>\n\n" + _fence(text) +
                       "\n\n</details>")
        elif kind == "text" and text.strip():
            if item.get("withdrawn"):
                out.append("> *Draft withdrawn by the stop gate.*")
            else:
                out.append(inert_markdown(text))
        elif kind == "tool":
            out += _tool_md(item)
        elif kind == "proposal":
            out.append(_proposal_md(object_field(item, "proposal")))
        elif kind == "gate":
            out.append(f"> *Stop gate:* {_md_escape_inline(item['reason'])}")
        elif kind == "warning" and item.get("level") == "note":
            out.append(f"> *Note:* {_md_escape_inline(item['message'])}")
        elif kind == "warning":
            out.append(f"> **Warning:** {_md_escape_inline(item['message'])}")
        elif kind in ("ask", "approval"):  # an answered ask item keeps the ask's kind
            out.append("\n".join(_ask_md(item)))
        elif kind == "compressed":
            out.append(f"> *Context {item.get('method')}: {item.get('tokens_before')} → "
                       f"{item.get('tokens_after')} tokens.*")
    if view.get("plan"):
        out.append("\n".join(_plan_md(object_field(view, "plan"))))
    if view.get("output"):
        out.append(_output_md(view))
    if view.get("ask"):
        out.append("\n".join(_ask_md(object_field(view, "ask"))))
    if view.get("error"):
        out.append(f"**{view.get('status', 'error')}:** {_md_escape_inline(view['error'])}")
    tools = tools_text(view)
    if tools:
        out.append(f"*{_md_escape_inline(tools)}*")
    if view.get("hint") and view.get("status") == "ask":
        out.append(f"*{view['hint']}*")
    out.append(f"*{_md_escape_inline(footer_text(view))}*")
    return mask("\n\n".join(out))


def render_plain(view: ReadOnlyJSON) -> str:
    """Plain text: the answer (or the question waiting), then the footer."""
    parts: list[str] = []
    items = object_list(view, "items")
    answer = str_field(view, "answer") or "".join(
        str_field(i, "text") for i in items if i.get("kind") == "text" and not i.get("withdrawn"))
    if answer:
        parts.append(answer)
    if view.get("ask"):
        ask = object_field(view, "ask")
        opts = "\n".join(f"  {i}. {o}" for i, o in enumerate(list_field(ask, "options"), start=1))
        parts.append(f"{ask.get('question')}\n{opts}")
    for item in items:
        if item.get("kind") == "tool" and item.get("changes"):
            parts.append("\n".join(line.replace("`", "")
                                   for line in changes_lines(object_field(item, "changes"))))
    if view.get("error"):
        parts.append(f"[{view.get('status')}] {view['error']}")
    tools = tools_text(view)
    if tools:
        parts.append(tools)
    if view.get("hint") and view.get("status") == "ask":
        parts.append(str(view["hint"]))
    parts.append(f"[{view.get('status')}] {footer_text(view)}")
    return mask("\n\n".join(parts))


def output_metadata(view: ReadOnlyJSON) -> dict[str, object]:
    """Output metadata: model, tokens, cost and timing (no key, ever)."""
    f = object_field(view, "footer")
    return {RUN_MIME_TYPE: {"run_id": view.get("run_id"), "status": view.get("status"),
                            "model": f.get("model"), "input_tokens": f.get("input_tokens"),
                            "output_tokens": f.get("output_tokens"), "cost": f.get("cost"),
                            "seconds": f.get("seconds"), "rounds": f.get("rounds")}}


def build_bundle(view: ReadOnlyJSON, widget_model_id: str | None = None) -> JSONObject:
    """The full MIME bundle; with a widget, its view comes first so live front ends use it."""
    bundle: JSONObject = {}
    if widget_model_id:
        bundle["application/vnd.jupyter.widget-view+json"] = {
            "version_major": 2, "version_minor": 1, "model_id": widget_model_id}
    bundle[RUN_MIME_TYPE] = json.loads(mask_json(json.dumps(run_payload(view))))
    bundle["text/html"] = mask(render_html(view))
    bundle["text/markdown"] = render_markdown(view)
    bundle["text/plain"] = render_plain(view)
    return bundle
