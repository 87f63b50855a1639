"""A session as a notebook: the conversation in markdown cells, each run as a code cell whose
output is the run's MIME bundle (rebuilt from the stored events), so the exported notebook
renders like the original cells did, in JupyterLab, on GitHub and in nbconvert.

Every text of the session (the user's, the model's, an error) goes into the markdown inert
(``_inert.py``: HTML escaped, links only to http(s) and mailto), so an exported notebook
converted to HTML runs nothing a model wrote (docs/security.md).

What the store holds is masked already; the notebook is masked once more as a whole, so a
secret registered after the session was written never reaches an export (docs/security.md).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from ..base.errors import ConfigError
from ..base.inert import code_span, inert_inline, inert_markdown
from ..base.jsontypes import str_field
from ..base.secrets import mask_obj

if TYPE_CHECKING:
    from nbformat.notebooknode import NotebookNode

    from ..base.events import RunEvent
    from ..session.models import RunRecord, TranscriptDict
    from ..session.store import Store

__all__ = ["session_notebook", "export_session"]

_MAGICS = {"chat": "chat", "toolloop": "toolloop", "plan": "plan"}


def _events(store: Store, run_id: str) -> list[RunEvent]:
    from ..base.events import EVENT_ADAPTER

    out: list[RunEvent] = []
    for d in store.get_events(run_id):
        try:
            out.append(EVENT_ADAPTER.validate_python(d))
        except Exception:  # an event from a newer version: skip it, keep the rest
            continue
    return out


def _quote(text: str) -> str:
    return "\n".join("> " + line if line else ">"
                     for line in inert_markdown(text or "").split("\n")) or ">"


def _run_cells(store: Store, session: str, run: RunRecord, user_text: str, answer_text: str) -> list[NotebookNode]:
    """Markdown (the user), code cell (the run's bundle), markdown (the answer)."""
    import nbformat.v4 as v4

    from .bundle import build_bundle, output_metadata
    from .reduce import reduce_events

    events = _events(store, run.run_id)
    view = reduce_events(events)
    prompt = user_text or str_field(view, "prompt")
    cells = [v4.new_markdown_cell(f"**You** ({inert_inline(run.kind)}):\n\n{_quote(prompt)}")]
    magic = _MAGICS.get(run.kind)
    source = f"%%{magic} --session {session}\n{prompt}" if magic else f"# {run.kind} run\n"
    code = v4.new_code_cell(source, metadata={"jupyter_agent": {"run_id": run.run_id,
                                                                "status": run.status}})
    if events:
        code.outputs = [v4.new_output("display_data", data=build_bundle(view),
                                      metadata=output_metadata(view))]
    cells.append(code)
    answer = answer_text or str_field(view, "answer")
    error = str_field(view, "error")
    if run.status != "ask" and error and not answer:
        answer = f"*The run ended with status {run.status}: {inert_inline(error)}*"
    elif answer:
        answer = inert_markdown(answer)
    if run.status == "ask":
        answer = (answer + "\n\n" if answer else "") + \
            f"*Waiting for an answer (run {code_span(run.run_id)}).*"
    if answer:
        cells.append(v4.new_markdown_cell(f"**Assistant:**\n\n{answer}"))
    return cells


def session_notebook(store: Store, session: str) -> NotebookNode:
    """The notebook (an ``nbformat`` v4 node) of ``session``.

    Raises:
        ConfigError: there is no such session.
    """
    import nbformat
    import nbformat.v4 as v4
    from nbformat.notebooknode import NotebookNode

    record = store.get_session(session)
    if record is None:
        raise ConfigError(f"No session {session!r}.")
    entries = store.session_transcript(session)
    runs = {r.run_id: r for r in store.list_runs(session)}
    # Blocks in time order: each run once (at its first message, or its creation time when it
    # wrote none, e.g. a run still waiting), and messages that belong to no run.
    # A block: (time, a run's id or a message).
    blocks: list[tuple[float, str | TranscriptDict]] = []
    seen: set[str] = set()
    by_run: dict[str, list[TranscriptDict]] = {}
    for e in entries:
        rid = e["run_id"]
        if rid is not None and rid in runs:
            by_run.setdefault(rid, []).append(e)
            if rid not in seen:
                seen.add(rid)
                blocks.append((runs[rid].created, rid))
        elif e["role"] in ("user", "assistant") and e["text"]:
            blocks.append((e["created"], e))
    for rid, r in runs.items():
        if rid not in seen:
            blocks.append((r.created, rid))
    blocks.sort(key=lambda b: b[0])
    usage = store.usage(session)
    facts = [f"group {inert_inline(record.group)}" if record.group else "",
             f"agent {inert_inline(record.agent)}" if record.agent else "",
             f"model {inert_inline(record.model)}" if record.model else "",
             f"{usage.turns} turns, {usage.input_tokens:,} input and {usage.output_tokens:,} "
             f"output tokens, cost {usage.cost:.4f}"]
    head = (f"# Session {code_span(session)}\n\nExported by jupyter-agent on "
            f"{time.strftime('%Y-%m-%d %H:%M')}: " + "; ".join(f for f in facts if f) + ".")
    cells = [v4.new_markdown_cell(head)]
    for _, item in blocks:
        if not isinstance(item, str):  # a message of no run
            who = "You" if item["role"] == "user" else "Assistant"
            cells.append(v4.new_markdown_cell(f"**{who}:**\n\n{inert_markdown(item['text'])}"))
            continue
        msgs = by_run.get(item, [])
        user = next((m["text"] for m in msgs if m["role"] == "user"), "")
        answers = [m["text"] for m in msgs if m["role"] == "assistant" and m["text"]
                   and not m["tool_calls"]]
        cells.extend(_run_cells(store, session, runs[item], user, answers[-1] if answers else ""))
    nb = v4.new_notebook(cells=cells)
    nb.metadata["jupyter_agent"] = {"session": session}
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    node = nbformat.from_dict(mask_obj(nb))
    assert isinstance(node, NotebookNode)  # from_dict of a dict is a node
    return node


def export_session(path: str | Path, session: str | None = None, *, store: Store | None = None) -> Path:
    """Write ``session`` (default: the current one) as a notebook to ``path`` and return it.

    The notebook is validated with ``nbformat.validate`` before it is written.
    """
    import nbformat

    from ..runtime.sessions import current_session

    if store is None:
        from ..session import default_store

        store = default_store()
    target = Path(path).expanduser()
    if target.suffix != ".ipynb":
        raise ConfigError(f"Export to a .ipynb file, not {target.name!r}.")
    nb = session_notebook(store, session or current_session())
    nbformat.validate(nb)
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(target))
    return target
